/**
 * Admission control: may this engine take one more request now?
 *
 * Steps (pure; the proxy supplies the numbers):
 *  1. inflight: more than `maxInflight` requests in flight → reject "inflight".
 *  2. queue: the engine queues (waiting > 0 at the last scrape) and that
 *     queue plus requests admitted since would reach `maxWaiting` → "queue".
 *  3. kv: projected KV use = used at the last scrape + need of requests
 *     admitted since + waiting requests × their mean need; adding this
 *     request's need (uncached prompt + outputReserve × max_tokens: a cached
 *     prefix's blocks are already counted once, however many requests share
 *     them) over kvHighWatermark × capacity → reject "kv". The scrape shows
 *     what running requests hold now, not what they grow to before they end:
 *     the projection is never below the sum of every in-flight request's
 *     need (its reservation), or a scrape taken early in a burst's decode
 *     lets the agent admit into KV its running requests still need. A request whose
 *     whole size (prompt + reserve) is larger than the cache is rejected
 *     "too_large" (no replica of this size can run it without preempting
 *     itself).
 *  4. stale: the router sent a queue limit (x-warmpath-queue-limit: the
 *     prefill it expected queued here when it chose this replica, plus
 *     what it would lose by going elsewhere) and the prefill queued here
 *     now — requests admitted and not yet at their first token — is
 *     longer: other routers chose this replica too since its last report.
 *     The router tries another replica; it sends no limit on a request's
 *     last attempt, so nothing is lost to this rule.
 *  Bands: with a priority band (x-warmpath-priority), each threshold above
 *  is scaled by the band's share (BAND_SHARES): lower bands are refused first.
 *  An idle engine (nothing running or waiting, nothing admitted since) admits
 *  anything that fits, so projections can never starve a replica.
 * Complexity: O(1).
 * Trade-off: projections from a scrape up to one interval old plus the
 * agent's own admissions; conservative on purpose (a reject costs the router
 * one retry elsewhere, a preemption costs the engine a recompute).
 */

export const REJECT_REASONS = ['queue', 'kv', 'inflight', 'too_large', 'stale'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export interface AdmissionLimits {
  maxWaiting: number;
  maxInflight: number;
  kvHighWatermark: number;
}

export interface AdmissionInput {
  /** Engine state at the last scrape. */
  running: number;
  waiting: number;
  kvUsedTokens: number;
  kvCapacityTokens: number;
  /** Requests this agent has in flight now. */
  inflight: number;
  /** Requests (and their KV need) admitted since the last scrape. */
  sinceCount: number;
  sinceNeed: number;
  /** KV need of every request in flight (their reservations: uncached prompt + output reserve), tokens. */
  totalNeed?: number;
  /** Mean KV need of in-flight requests (tokens), to price the engine's queue. */
  meanNeed: number;
  /** This request's new KV need in tokens (uncached prompt + output reserve). */
  need: number;
  /** This request's whole KV footprint (prompt + output reserve); default `need`. */
  size?: number;
  /** Uncached prompt tokens of the requests in flight without a first token yet. */
  pendingPrefill?: number;
  /** The router's queue limit for this request (x-warmpath-queue-limit), tokens; undefined = none. */
  queueLimit?: number;
  /** The request's priority band rank (x-warmpath-priority: 0 interactive, 1 standard, 2 batch); undefined = none sent. */
  band?: number;
}

/**
 * The share of each threshold (maxInflight, maxWaiting, kvHighWatermark) a
 * band may fill, by band rank: a lower band is refused while a higher one
 * still has room, so under load batch is refused before standard before
 * interactive. A request without a band (no tenants file) has the whole.
 */
export const BAND_SHARES = [1, 0.9, 0.75] as const;

export function admit(x: AdmissionInput, limits: AdmissionLimits): RejectReason | undefined {
  const share = x.band === undefined ? 1 : (BAND_SHARES[x.band] ?? 1);
  if (limits.maxInflight > 0 && x.inflight >= Math.max(1, Math.floor(limits.maxInflight * share))) return 'inflight';
  const idle = x.running === 0 && x.waiting === 0 && x.sinceCount === 0;
  // Admissions join the queue only when the engine already queues; otherwise
  // they start running and the kv rule prices them.
  if (limits.maxWaiting > 0 && x.waiting > 0 && x.waiting + x.sinceCount >= Math.max(1, limits.maxWaiting * share))
    return 'queue';
  if (x.queueLimit !== undefined && (x.pendingPrefill ?? 0) > x.queueLimit) return 'stale';
  if (x.kvCapacityTokens > 0) {
    if ((x.size ?? x.need) > x.kvCapacityTokens) return 'too_large';
    if (!idle) {
      // The scrape shows what running requests hold now, not what they will
      // grow to; their reservations (totalNeed) bound that, so the larger wins.
      const projected = Math.max(x.kvUsedTokens + x.sinceNeed + x.waiting * x.meanNeed, x.totalNeed ?? 0) + x.need;
      if (projected > limits.kvHighWatermark * share * x.kvCapacityTokens) return 'kv';
    }
  }
  return undefined;
}
