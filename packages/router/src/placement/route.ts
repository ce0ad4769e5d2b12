/**
 * How a placement is reported, in the response header x-warmpath-route and
 * in warmpath_router_placements_total{policy,step,branch,attempt,by}: the
 * policy's branch, the step that placed the request, the attempt's kind,
 * and the term or tie-break that decided (docs/PLACEMENT.md, "Reading the
 * header").
 *
 * Format: `<branch>; step=<step>; attempt=<first|retry|queued>[; by=<term>]`,
 * e.g. `warm; step=warm; attempt=retry; by=queue`. Parameters are
 * `; name=value` pairs in this order; a reader ignores names it does not know.
 */
import type { Branch, Placement } from './types.ts';

/** first: placed at once; retry: placed again after a replica refused or failed; queued: placed after waiting for room. */
export const ATTEMPT_KINDS = ['first', 'retry', 'queued'] as const;
export type AttemptKind = (typeof ATTEMPT_KINDS)[number];

export interface Route {
  readonly branch: Branch;
  /** The policy's step (warmpath: STEPS in placement/warmpath/index.ts); the branch for policies without steps. */
  readonly step: string;
  readonly attempt: AttemptKind;
  /** The term or tie-break that decided ('' when the policy does not say). */
  readonly by: string;
}

/** A placement's route, for an attempt of this kind. */
export function routeOf(p: Placement, attempt: AttemptKind): Route {
  return p.replica === undefined
    ? { branch: p.branch, step: p.branch, attempt, by: '' }
    : { branch: p.branch, step: p.step ?? p.branch, attempt, by: p.by ?? '' };
}

export function formatRoute(r: Route): string {
  return `${r.branch}; step=${r.step}; attempt=${r.attempt}${r.by !== '' ? `; by=${r.by}` : ''}`;
}

/** The header's value parsed; undefined when it has no branch. */
export function parseRoute(header: string): Route | undefined {
  const [branch, ...params] = header.split(';').map((s) => s.trim());
  if (branch === undefined || branch === '') return undefined;
  const p = new Map(params.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const attempt = p.get('attempt');
  return {
    branch,
    step: p.get('step') ?? branch,
    attempt: (ATTEMPT_KINDS as readonly string[]).includes(attempt ?? '') ? (attempt as AttemptKind) : 'first',
    by: p.get('by') ?? '',
  };
}

/** A job's attempt kind: `retry` after a failed attempt, `queued` after waiting for room (a deadline set), else `first`. */
export function attemptKind(job: { readonly attempt: number; readonly deadline: number }): AttemptKind {
  return job.attempt > 0 ? 'retry' : job.deadline > 0 ? 'queued' : 'first';
}
