/**
 * The agent's model of its engine's prefix cache: an LRU over chain hashes.
 *
 * Steps:
 *  1. Size: capacity in chunks = KV tokens × chars/token ÷ chunk chars (an
 *     override wins). Shrinking evicts from the LRU end.
 *  2. Admit a request: `predict` = longest cached prefix (in chunks); `record`
 *     touches its chain tail-first, so the first chunk is most recent — the
 *     engine frees a finished request's blocks tail-first too, so tails are
 *     evicted before the shared heads.
 *  3. Feedback from the response (cached tokens): fewer than predicted means
 *     the engine evicted what we still hold, and everything older than it went
 *     first: drop the LRU end up to the missed chunk's age and shrink the
 *     effective capacity by 10% (misses compound; one may be a cache clear); more than predicted means the engine
 *     holds more than we thought: grow the effective capacity (≤ 2× nominal).
 *  4. Reset on engine restart or cache clear (`reset`): empty, and the next
 *     publish carries no delta (from = -1), so routers pull the snapshot.
 *  5. Deltas: `added`/`removed` since the last publish, cancelling
 *     add-then-evict and evict-then-add, so published = current − added + removed.
 *  6. Bound what is published: with `published` = K > 0, routers are told
 *     only the K most recently used chunks (a second insertion-ordered set
 *     over the LRU's newest end). A chunk's prefix is always touched after
 *     it, so the K newest are prefix-closed: a router never sees a chunk
 *     without the chunks before it. Prediction and admission still use the
 *     whole model.
 * Complexity: touch/insert/evict O(1) (Map insertion order is the LRU order);
 * predict O(matched chunks); snapshot O(min(size, K)).
 * Trade-off: text chunks, not the engine's token blocks, so edges are
 * approximate; and traffic that bypasses the agent is invisible except through
 * the feedback in step 3. The cap K trades what a router can see (the
 * oldest, least likely hits, evicted first by the engine too) for a router
 * whose memory grows with replicas × K instead of with every replica's whole
 * cache.
 */

export interface CacheModelOptions {
  /** Capacity in chunks (≥ 1). */
  capacity: number;
  /** Publish at most this many chunks, the most recently used (0 = all). */
  published?: number;
}

export interface Delta {
  /** True when the receiver must pull a snapshot (reset, or delta too large). */
  full: boolean;
  added: BigUint64Array;
  removed: BigUint64Array;
}

export class CacheModel {
  /** hash → stamp (monotonic touch counter); iteration order = LRU first. */
  readonly #lru = new Map<bigint, number>();
  /** The published part when capped: the `#limit` newest keys of the LRU, oldest first; undefined = all of the LRU. */
  readonly #top: Set<bigint> | undefined;
  readonly #limit: number;
  #stamp = 0;
  #nominal: number;
  #effective: number;
  #added = new Set<bigint>();
  #removed = new Set<bigint>();
  #full = true;
  /** Counters for metrics and the bench. */
  stats = { evictions: 0, corrections: 0, dropped: 0, promotions: 0, resets: 0 };

  constructor(opts: CacheModelOptions) {
    this.#nominal = Math.max(1, Math.floor(opts.capacity));
    this.#effective = this.#nominal;
    this.#limit = Math.max(0, Math.floor(opts.published ?? 0));
    this.#top = this.#limit > 0 ? new Set() : undefined;
  }

  get size(): number {
    return this.#lru.size;
  }

  /** Chunks routers are told of: min(size, the cap). */
  get publishedSize(): number {
    return this.#top?.size ?? this.#lru.size;
  }

  get capacity(): number {
    return this.#effective;
  }

  get nominalCapacity(): number {
    return this.#nominal;
  }

  /** The touch counter now: stamps above it are newer. */
  get stampNow(): number {
    return this.#stamp;
  }

  has(h: bigint): boolean {
    return this.#lru.has(h);
  }

  /** Sets the nominal capacity (engine capacity changed); effective follows proportionally. */
  resize(capacity: number): void {
    const next = Math.max(1, Math.floor(capacity));
    if (next === this.#nominal) return;
    this.#effective = Math.max(1, Math.round((this.#effective / this.#nominal) * next));
    this.#nominal = next;
    this.#evictOver();
  }

  /** Longest prefix (chunks) of `hashes` the model believes cached. */
  predict(hashes: BigUint64Array): number {
    let i = 0;
    while (i < hashes.length && this.#lru.has(hashes[i]!)) i++;
    return i;
  }

  /** Stamp of the chunk at `depth` (for feedback); -1 if absent. */
  stampOf(h: bigint): number {
    return this.#lru.get(h) ?? -1;
  }

  /** Records that the engine now holds `hashes` (a request's prompt). Tail first, head most recent. */
  record(hashes: BigUint64Array): void {
    for (let i = hashes.length - 1; i >= 0; i--) this.#touch(hashes[i]!);
    this.#evictOver();
  }

  /**
   * Feedback for a request: `predicted` chunks believed cached at admission
   * (with `stamps[i]` their stamps then), `actual` chunks the engine reported
   * cached. Call after `record`.
   */
  feedback(predicted: number, actual: number, missStamp: number): void {
    if (actual < predicted) {
      if (missStamp < 0) return;
      // The engine had evicted a chunk that was this old; older ones went first.
      this.stats.corrections++;
      let dropped = 0;
      for (const [h, stamp] of this.#lru) {
        if (stamp > missStamp) break;
        this.#evict(h);
        dropped++;
      }
      this.stats.dropped += dropped;
      // Shrink gently: one miss may be a cache clear, not a smaller cache; repeated misses compound.
      this.#effective = Math.max(1, Math.ceil(this.#nominal * 0.05), Math.min(this.#effective, Math.max(this.#lru.size, Math.floor(this.#effective * 0.9))));
    } else if (actual > predicted) {
      this.stats.promotions++;
      this.#effective = Math.min(this.#nominal * 2, Math.max(this.#effective, this.#lru.size + (actual - predicted)));
    } else if (this.#effective < this.#nominal && this.#lru.size >= this.#effective) {
      // Prediction held at the current size: creep back towards nominal.
      this.#effective = Math.min(this.#nominal, this.#effective + Math.max(1, predicted));
    }
  }

  /** Engine restarted or cleared its cache. */
  reset(): void {
    this.#lru.clear();
    this.#top?.clear();
    this.#added.clear();
    this.#removed.clear();
    this.#full = true;
    this.#effective = this.#nominal;
    this.stats.resets++;
  }

  /** Pending delta size (added + removed). */
  get pending(): number {
    return this.#added.size + this.#removed.size;
  }

  /** Takes the delta since the last call; `maxHashes` exceeded → a full (snapshot) marker instead. */
  takeDelta(maxHashes: number): Delta {
    const full = this.#full || this.#added.size + this.#removed.size > maxHashes;
    const out: Delta = full
      ? { full: true, added: new BigUint64Array(0), removed: new BigUint64Array(0) }
      : { full: false, added: BigUint64Array.from(this.#added), removed: BigUint64Array.from(this.#removed) };
    this.#added = new Set();
    this.#removed = new Set();
    this.#full = false;
    return out;
  }

  /** The set as of the last `takeDelta` (what routers hold after applying it). */
  published(): BigUint64Array {
    const out: bigint[] = [];
    for (const h of (this.#top ?? this.#lru).keys()) if (!this.#added.has(h)) out.push(h);
    for (const h of this.#removed) out.push(h);
    return BigUint64Array.from(out);
  }

  /** Current set, LRU first. */
  hashes(): BigUint64Array {
    return BigUint64Array.from(this.#lru.keys());
  }

  #touch(h: bigint): void {
    const top = this.#top;
    const known = this.#lru.delete(h);
    this.#lru.set(h, ++this.#stamp);
    if (top === undefined) {
      if (!known) this.#publish(h);
      return;
    }
    if (top.delete(h)) {
      top.add(h);
      return;
    }
    top.add(h);
    this.#publish(h);
    if (top.size > this.#limit) {
      // The oldest published chunk drops out of the digest (the model still holds it).
      const oldest = top.values().next().value!;
      top.delete(oldest);
      this.#unpublish(oldest);
    }
  }

  #evict(h: bigint): void {
    if (!this.#lru.delete(h)) return;
    if (this.#top === undefined || this.#top.delete(h)) this.#unpublish(h);
  }

  #publish(h: bigint): void {
    if (!this.#removed.delete(h)) this.#added.add(h);
  }

  #unpublish(h: bigint): void {
    if (!this.#added.delete(h)) this.#removed.add(h);
  }

  #evictOver(): void {
    if (this.#lru.size <= this.#effective) return;
    const it = this.#lru.keys();
    while (this.#lru.size > this.#effective) {
      const next = it.next();
      if (next.done === true) break;
      this.#evict(next.value);
      this.stats.evictions++;
    }
  }
}

/** Capacity in chunks from engine KV tokens. */
export function chunksFor(kvTokens: number, charsPerToken: number, chunkChars: number): number {
  return Math.max(1, Math.floor((kvTokens * charsPerToken) / chunkChars));
}
