/**
 * How many routers' worth of traffic the fleet carries per request of this
 * router's (N): what `share`, `slice`, `expect` and the retry read
 * (docs/SCALE.md, "1,000 replicas").
 *
 * Steps: two averages over about ROUTERS_TAU_MS, the candidates' published
 * in-flight requests and this router's own among them; their ratio is N once
 * traffic has run for a while. Before that the ratio knows nothing (no
 * traffic) or too little (the reports lag this router's own requests by a
 * gossip delay, so the ratio reads low), and every router of a fleet starting
 * cold would take itself for the only one and send its first requests where
 * all the others send theirs. So until the averages have weight, N leans on
 * the routers this router hears: the distinct routers whose batches vouched
 * for a state within a state's lifetime (heard()), plus itself. The lean
 * fades as the averages fill (weight 1 − e^(−t/τ) over t of traffic), and
 * only ever raises N: a router that hears no other is exactly one.
 * Complexity: update O(1) amortized; the routers heard are counted at most
 * once per HEARD_COUNT_MS, O(routers heard).
 */

/** Time constant of the averages, ms. */
export const ROUTERS_TAU_MS = 2_000;
/** The most routers' worth of traffic a router believes it sees. */
export const MAX_ROUTERS_ESTIMATE = 256;
/** How often the routers heard are counted again, ms. */
const HEARD_COUNT_MS = 1_000;

export class RoutersEstimate {
  /** Smoothed in-flight requests: the fleet's published and this router's own among them. */
  #published = 0;
  #own = 0;
  #estimatedAt = -Infinity;
  /** The averages' weight, 0 before this router had a request in flight, toward 1. */
  #weight = 0;
  #routers = 1;
  /** A router's peer id → when a batch of its last vouched for a state, ms. */
  readonly #heard = new Map<string, number>();
  #heardCount = 0;
  #countedAt = -Infinity;

  /** A router not heard for this long is no longer counted (the router's state TTL), ms. */
  readonly forgetMs: number;

  constructor(forgetMs: number) {
    this.forgetMs = forgetMs;
  }

  /** Router `peer` vouched for a state (its batch carried it) at `now`. */
  heard(peer: string, now: number): void {
    if (this.#heard.size < MAX_ROUTERS_ESTIMATE || this.#heard.has(peer)) this.#heard.set(peer, now);
  }

  /** The other routers heard within forgetMs of `now`. */
  heardCount(now: number): number {
    if (now - this.#countedAt < HEARD_COUNT_MS) return this.#heardCount;
    this.#countedAt = now;
    for (const [peer, at] of this.#heard) if (now - at > this.forgetMs) this.#heard.delete(peer);
    return (this.#heardCount = this.#heard.size);
  }

  /** N from `published` (the candidates' published in-flight requests) and `own` (this router's among them); ≥ 1. */
  update(published: number, own: number, now: number): number {
    const a = 1 - Math.exp(-Math.max(0, now - this.#estimatedAt) / ROUTERS_TAU_MS);
    // The weight grows with the time traffic ran, from the first estimate on (the averages start at their first reading).
    if (this.#own > 0) this.#weight += a * (1 - this.#weight);
    this.#estimatedAt = now;
    this.#published += a * (published - this.#published);
    this.#own += a * (own - this.#own);
    const ratio = this.#own > 0 ? Math.min(MAX_ROUTERS_ESTIMATE, Math.max(1, this.#published / this.#own)) : 1;
    const heard = Math.min(MAX_ROUTERS_ESTIMATE, this.heardCount(now) + 1);
    this.#routers = ratio + (1 - this.#weight) * Math.max(0, heard - ratio);
    return this.#routers;
  }

  /** The last estimate (1 before the first). */
  get routers(): number {
    return this.#routers;
  }
}
