/**
 * How a placement is reported, in the response header x-warmpath-route and
 * in warmpath_router_placements_total{policy,step,branch,attempt,by}: the
 * policy's branch, the step that placed the request, the attempt's kind,
 * and the term or tie-break that decided (docs/PLACEMENT.md, "Reading the
 * header").
 *
 * Format: `<branch>; step=<step>; attempt=<first|retry|queued>[; by=<term>]`,
 * e.g. `warm; step=warm; attempt=retry; by=queue`; in a disaggregated fleet
 * followed by `; pd=<transfer|local>; pd-by=<reason>; prefill=<id>; decode=<id>`
 * (placement/pair.ts; `prefill` only with a transfer; the branch, step and
 * term are the prefill placement's). Parameters are `; name=value` pairs in
 * this order; a reader ignores names it does not know.
 */
import type { PdDecision } from './pair.ts';
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
  /** Disaggregated fleets only (placement/pair.ts): the pair's mode and reason, the prefill replica of a transfer and the decode replica. */
  readonly pd?: { readonly mode: string; readonly by: string; readonly prefill?: string; readonly decode: string };
}

/** A placement's route, for an attempt of this kind (and its pair, in a disaggregated fleet). */
export function routeOf(p: Placement, attempt: AttemptKind, pd?: PdDecision): Route {
  if (p.replica === undefined) return { branch: p.branch, step: p.branch, attempt, by: '' };
  const route = { branch: p.branch, step: p.step ?? p.branch, attempt, by: p.by ?? '' };
  if (pd === undefined) return route;
  const prefill = pd.prefill?.id;
  return {
    ...route,
    pd: { mode: pd.mode, by: pd.by, ...(prefill !== undefined ? { prefill } : {}), decode: pd.decode.id },
  };
}

/** The route without its pair: what the placement metric's labels name. */
export function baseRoute(r: Route): Route {
  return { branch: r.branch, step: r.step, attempt: r.attempt, by: r.by };
}

export function formatRoute(r: Route): string {
  const head = `${r.branch}; step=${r.step}; attempt=${r.attempt}${r.by !== '' ? `; by=${r.by}` : ''}`;
  const pd = r.pd;
  if (pd === undefined) return head;
  return `${head}; pd=${pd.mode}; pd-by=${pd.by}${pd.prefill !== undefined ? `; prefill=${pd.prefill}` : ''}; decode=${pd.decode}`;
}

/** The header's value parsed; undefined when it has no branch. */
export function parseRoute(header: string): Route | undefined {
  const [branch, ...params] = header.split(';').map((s) => s.trim());
  if (branch === undefined || branch === '') return undefined;
  const p = new Map(params.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const attempt = p.get('attempt');
  const mode = p.get('pd');
  const decode = p.get('decode');
  const prefill = p.get('prefill');
  return {
    branch,
    step: p.get('step') ?? branch,
    attempt: (ATTEMPT_KINDS as readonly string[]).includes(attempt ?? '') ? (attempt as AttemptKind) : 'first',
    by: p.get('by') ?? '',
    ...(mode !== undefined && decode !== undefined
      ? { pd: { mode, by: p.get('pd-by') ?? '', ...(prefill !== undefined ? { prefill } : {}), decode } }
      : {}),
  };
}

/** A job's attempt kind: `retry` after a failed attempt, `queued` after waiting for room (a deadline set), else `first`. */
export function attemptKind(job: { readonly attempt: number; readonly deadline: number }): AttemptKind {
  return job.attempt > 0 ? 'retry' : job.deadline > 0 ? 'queued' : 'first';
}
