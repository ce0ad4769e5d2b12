/**
 * Pacing within a per-minute limit, for a tenant whose limits set
 * `burstSeconds`: its admissions through this router come at most at its
 * share of the limit's rate, with a burst of that many seconds of it, as
 * well as within the sliding window.
 *
 * Why: the window alone lets a tenant that was idle spend a whole minute's
 * limit at once, and a tenant held at its limit then gets its budget back
 * in the same waves a minute later (what left the window at once comes
 * back at once). Paced, a tenant over its limit is admitted evenly, as if
 * it sent at its limit (docs/TENANTS.md, "Pacing").
 * Rule (the generic cell rate algorithm, one theoretical arrival time per
 * tenant and limit): rate = limit × f ÷ 60 s × this router's share of the
 * tenant's admissions over the window (own ÷ (own + others), at least
 * 1 ÷ the routers known, so a router new to the tenant is not starved); a
 * request of `cost` passes when tat − now + cost ÷ rate ≤ the burst, or
 * when tat ≤ now (so a request larger than the burst still passes, alone);
 * on admission tat = max(tat, now) + cost ÷ rate.
 * Invariant: pacing only refuses what the window would admit, so the limit
 * over any 60 s holds as before; a tenant sending below its rate in bursts
 * within its burst never meets it.
 * Complexity: O(1) per admission, one number per tenant and limit.
 * Trade-off: a paced tenant, even within its limit, may not send more than
 * its burst at once (hence opt-in per tenant); the pace counts the
 * reservation (prompt + max_tokens), not the engine's usage that later
 * replaces it in the window, so answers shorter than max_tokens pace a
 * tenant a little below its limit. Each router's share follows where the
 * tenant's clients send, so sticky L4 keeps each router's own share.
 */

const MINUTE_MS = 60_000;

/** One tenant's pace for one limit (requests or tokens). */
export interface Pace {
  /** Theoretical arrival time, ms: when the tenant's admissions so far would have been sent at its rate. */
  tat: number;
}

/** The rate of a limit through this router, per ms: its part of limit × f by its share of the tenant's admissions. */
export function paceRate(limit: number, f: number, own: number, others: number, routers: number): number {
  const floor = 1 / Math.max(1, routers);
  const share = own + others > 0 ? Math.max(floor, own / (own + others)) : 1;
  return (limit * f * share) / MINUTE_MS;
}

/** How long from `now` until `cost` passes the pace, ms; 0 when it passes now. */
export function paceWait(p: Pace, cost: number, rate: number, burstMs: number, now: number): number {
  if (p.tat <= now) return 0;
  return Math.max(0, p.tat - now + cost / rate - burstMs);
}

/** The admission of `cost` at `now`: moves the theoretical arrival time on. */
export function paceTake(p: Pace, cost: number, rate: number, now: number): void {
  p.tat = Math.max(p.tat, now) + cost / rate;
}
