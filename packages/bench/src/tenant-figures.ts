/**
 * The `tenants` scenario's figures from a run's results: per tenant TTFT
 * p50/p99 (answered requests), admitted and refused, completed tokens per
 * second; and how close a tenant's admitted tokens per minute held to its
 * limit.
 *
 * Admitted tokens per minute: every admitted request's tokens (prompt plus
 * completion, the engine's count) at the time it was sent; the sum over the
 * 60 s before each whole second from the end of the first minute to the end
 * of arrivals (the first minute fills the window; after the arrivals end
 * nothing is sent). `mean` over those windows is the goal's figure, `max`
 * says whether any 60 s exceeded the limit.
 * Complexity: O(requests + seconds).
 */
import type { RequestResult } from './loadgen.ts';

/** A limit refusal (429 rate_limit_exceeded): not admitted. Anything else sent was admitted. */
export const LIMIT_REFUSED = 'rate_limit_exceeded';

export interface TenantRow {
  tenant: string;
  requests: number;
  ttftP50Ms: number | null;
  ttftP99Ms: number | null;
  admitted: number;
  /** Refused by the tenant's limits (429 rate_limit_exceeded). */
  refused: number;
  /** Refused or failed otherwise (shed under saturation, timeouts). */
  failed: number;
  /** Completed requests' prompt plus completion tokens per second of arrivals. */
  completedTokensPerS: number;
}

const pct = (sorted: readonly number[], p: number): number | null =>
  sorted.length === 0 ? null : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** One row per tenant (the results' tags), in `order` first, then the rest sorted. */
export function tenantRows(
  results: readonly RequestResult[],
  durationS: number,
  order: readonly string[] = [],
): TenantRow[] {
  const by = new Map<string, RequestResult[]>();
  for (const r of results) {
    const tag = r.tag ?? '';
    let list = by.get(tag);
    if (list === undefined) by.set(tag, (list = []));
    list.push(r);
  }
  const names = [...order.filter((n) => by.has(n)), ...[...by.keys()].filter((n) => !order.includes(n)).sort()];
  return names.map((tenant) => {
    const rs = by.get(tenant)!;
    const ttfts = rs
      .filter((r) => r.ok && Number.isFinite(r.ttftMs))
      .map((r) => r.ttftMs)
      .sort((a, b) => a - b);
    const refused = rs.filter((r) => r.error === LIMIT_REFUSED).length;
    const completed = rs.filter((r) => r.ok).reduce((s, r) => s + r.promptTokens + r.outputTokens, 0);
    return {
      tenant,
      requests: rs.length,
      ttftP50Ms: round(pct(ttfts, 50)),
      ttftP99Ms: round(pct(ttfts, 99)),
      admitted: rs.length - refused,
      refused,
      failed: rs.filter((r) => !r.ok && r.error !== LIMIT_REFUSED).length,
      completedTokensPerS: Math.round(completed / Math.max(1e-9, durationS)),
    };
  });
}

export interface LimitHeld {
  limit: number;
  /** Windows measured (one per second after the first minute). */
  windows: number;
  /** Mean, lowest and highest admitted tokens over a 60 s window, ÷ the limit. */
  mean: number;
  min: number;
  max: number;
}

/** An admitted request as the limit measure reads it: when it was sent (ms from the start) and its tokens. */
export interface Admission {
  at: number;
  tokens: number;
}

/** The admitted requests of `tenant` among results: not refused by a limit, tokens as the engine counted them. */
export function admissionsOf(results: readonly RequestResult[], tenant: string): Admission[] {
  return results
    .filter((r) => r.tag === tenant && r.error !== LIMIT_REFUSED && r.status !== 0)
    .map((r) => ({ at: r.sentAt, tokens: r.promptTokens + r.outputTokens }));
}

/** Admitted tokens per 60 s ÷ `limit`, over every window ending on a whole second in [60 s, durationS]. */
export function limitHeld(admissions: readonly Admission[], limit: number, durationS: number): LimitHeld {
  const perS = new Float64Array(Math.ceil(durationS) + 1);
  for (const a of admissions) {
    const s = Math.floor(a.at / 1000);
    if (s >= 0 && s < perS.length) perS[s]! += a.tokens;
  }
  let window = 0;
  const ratios: number[] = [];
  for (let s = 0; s < durationS; s++) {
    window += perS[s]!;
    if (s >= 60) window -= perS[s - 60]!;
    if (s >= 59) ratios.push(window / limit);
  }
  if (ratios.length === 0) return { limit, windows: 0, mean: Number.NaN, min: Number.NaN, max: Number.NaN };
  const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
  return { limit, windows: ratios.length, mean: r4(mean), min: r4(Math.min(...ratios)), max: r4(Math.max(...ratios)) };
}

const r4 = (x: number): number => Math.round(x * 10_000) / 10_000;
const round = (x: number | null): number | null => (x === null ? null : Math.round(x * 10) / 10);
