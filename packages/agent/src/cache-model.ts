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
 *  6. Turnover: `record` with a time notes when its chunks were used (a
 *     TouchLog, touch-log.ts: one entry per request, not per chunk); an
 *     eviction then says how long the chunk it dropped had gone unused
 *     (`evictionAgeMs`): how long a prefix survives without reuse, the age
 *     past which a repeated prompt misses.
 *  7. Bound what is published: with `published` = K > 0, routers are told
 *     only the K most recently used chunks (a second list over the LRU's
 *     newest end). A chunk's prefix is always touched after
 *     it, so the K newest are prefix-closed: a router never sees a chunk
 *     without the chunks before it. Prediction and admission still use the
 *     whole model.
 * Complexity: touch/insert/evict O(1): one node per chunk in typed arrays,
 * found through a Hash64Table keyed by the hash's u32 halves, on two
 * intrusive lists (the LRU, and the newest K when capped); predict O(matched
 * chunks); snapshot O(min(size, K)). A Map of BigInts would make a BigInt per
 * read of a BigUint64Array and hash it, several times the table's cost, on
 * every chunk a long prompt touches (docs/DESIGN-RATIONALE.md, "7. Numbers
 * behind the choices").
 * Trade-off: text chunks, not the engine's token blocks, so edges are
 * approximate; and traffic that bypasses the agent is invisible except through
 * the feedback in step 3. The cap K trades what a router can see (the
 * oldest, least likely hits, evicted first by the engine too) for a router
 * whose memory grows with replicas × K instead of with every replica's whole
 * cache.
 */

import { fromHalves, halves, Hash64Table, holding } from '@warmpath/shared/runtime';
import { TouchLog } from './touch-log.ts';

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
  /** hash halves → node. */
  #index = new Hash64Table(1 << 10);
  /** Per node: the hash's halves, its stamp (monotonic touch counter), and its place in the LRU list and, when capped, in the published list. */
  #lo = new Uint32Array(1 << 10);
  #hi = new Uint32Array(1 << 10);
  #stamps = new Float64Array(1 << 10);
  #prev = new Int32Array(1 << 10);
  #next = new Int32Array(1 << 10);
  #topPrev = new Int32Array(1 << 10);
  #topNext = new Int32Array(1 << 10);
  #inTop = new Uint8Array(1 << 10);
  /** Node 0 is both lists' sentinel: next[0] is the oldest, prev[0] the newest. */
  #nodes = 1;
  readonly #freeNodes: number[] = [];
  #size = 0;
  /** Capped: the published part is the `#limit` newest nodes of the LRU (the top list); 0 = all of the LRU. */
  readonly #limit: number;
  #topSize = 0;
  #stamp = 0;
  #nominal: number;
  #effective: number;
  /** Published since the last takeDelta: added and removed hashes (sets of halves). */
  #added = new Hash64Table(64, false);
  #removed = new Hash64Table(64, false);
  #full = true;
  /** When stamps were made (for evictionAgeMs). */
  readonly #touched = new TouchLog();
  #evictionAgeMs: number | undefined;
  /** Counters for metrics and the bench. */
  stats = { evictions: 0, corrections: 0, dropped: 0, promotions: 0, resets: 0 };

  constructor(opts: CacheModelOptions) {
    this.#nominal = Math.max(1, Math.floor(opts.capacity));
    this.#effective = this.#nominal;
    this.#limit = Math.max(0, Math.floor(opts.published ?? 0));
  }

  get size(): number {
    return this.#size;
  }

  /** Chunks routers are told of: min(size, the cap). */
  get publishedSize(): number {
    return this.#limit > 0 ? this.#topSize : this.#size;
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
    return this.#find(BigUint64Array.of(h), 0) > 0;
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
    const h = halves(hashes);
    let i = 0;
    while (i < hashes.length && this.#index.find(h[2 * i]!, h[2 * i + 1]!) >= 0) i++;
    return i;
  }

  /** Stamp of the chunk `h` (for feedback); -1 if absent. */
  stampOf(h: bigint): number {
    return this.stampAt(BigUint64Array.of(h), 0);
  }

  /** Stamp of the chunk hashes[i]; -1 if absent. */
  stampAt(hashes: BigUint64Array, i: number): number {
    const n = this.#find(hashes, i);
    return n > 0 ? this.#stamps[n]! : -1;
  }

  /**
   * Records that the engine now holds `hashes` (a request's prompt). Tail
   * first, head most recent. With `now` (ms), what it evicts updates
   * `evictionAgeMs`.
   */
  record(hashes: BigUint64Array, now?: number): void {
    const h = halves(hashes);
    for (let i = hashes.length - 1; i >= 0; i--) this.#touch(h[2 * i]!, h[2 * i + 1]!);
    if (now === undefined) {
      this.#evictOver();
      return;
    }
    if (hashes.length > 0) this.#touched.note(this.#stamp, now);
    const last = this.#evictOver();
    const at = last >= 0 ? this.#touched.timeOf(last) : undefined;
    if (at !== undefined) this.#evictionAgeMs = Math.max(0, now - at);
    this.#touched.prune(this.#next[0] !== 0 ? this.#stamps[this.#next[0]!]! : this.#stamp + 1);
  }

  /**
   * How long the chunk most recently evicted to make room had gone unused,
   * ms (recorded with a time); undefined until the model first fills. Low
   * against how often prompts repeat: the KV cache is too small for them.
   */
  get evictionAgeMs(): number | undefined {
    return this.#evictionAgeMs;
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
      for (let n = this.#next[0]!; n !== 0 && this.#stamps[n]! <= missStamp; n = this.#next[0]!) {
        this.#evict(n);
        dropped++;
      }
      this.stats.dropped += dropped;
      // Shrink gently: one miss may be a cache clear, not a smaller cache; repeated misses compound.
      this.#effective = Math.max(
        1,
        Math.ceil(this.#nominal * 0.05),
        Math.min(this.#effective, Math.max(this.#size, Math.floor(this.#effective * 0.9))),
      );
    } else if (actual > predicted) {
      this.stats.promotions++;
      this.#effective = Math.min(this.#nominal * 2, Math.max(this.#effective, this.#size + (actual - predicted)));
    } else if (this.#effective < this.#nominal && this.#size >= this.#effective) {
      // Prediction held at the current size: creep back towards nominal.
      this.#effective = Math.min(this.#nominal, this.#effective + Math.max(1, predicted));
    }
  }

  /** Engine restarted or cleared its cache. */
  reset(): void {
    this.#index.clear();
    this.#next[0] = this.#prev[0] = this.#topNext[0] = this.#topPrev[0] = 0;
    this.#nodes = 1;
    this.#freeNodes.length = 0;
    this.#size = this.#topSize = 0;
    this.#added.clear();
    this.#removed.clear();
    this.#full = true;
    this.#effective = this.#nominal;
    this.#touched.clear();
    this.#evictionAgeMs = undefined;
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
      : { full: false, added: hashesOf(this.#added), removed: hashesOf(this.#removed) };
    this.#added.clear();
    this.#removed.clear();
    this.#full = false;
    return out;
  }

  /** The set as of the last `takeDelta` (what routers hold after applying it). */
  published(): BigUint64Array {
    const next = this.#limit > 0 ? this.#topNext : this.#next;
    return collect(this.publishedSize - this.#added.size + this.#removed.size, (put) => {
      for (let n = next[0]!; n !== 0; n = next[n]!)
        if (this.#added.find(this.#lo[n]!, this.#hi[n]!) < 0) put(this.#lo[n]!, this.#hi[n]!);
      this.#removed.forEach(put);
    });
  }

  /** Current set, LRU first. */
  hashes(): BigUint64Array {
    return collect(this.#size, (put) => {
      for (let n = this.#next[0]!; n !== 0; n = this.#next[n]!) put(this.#lo[n]!, this.#hi[n]!);
    });
  }

  /** The node holding hashes[i], or 0. */
  #find(hashes: BigUint64Array, i: number): number {
    const h = halves(hashes);
    const pos = this.#index.find(h[2 * i]!, h[2 * i + 1]!);
    return pos < 0 ? 0 : this.#index.valueAt(pos);
  }

  #touch(lo: number, hi: number): void {
    const pos = this.#index.find(lo, hi);
    let n: number;
    if (pos >= 0) {
      n = this.#index.valueAt(pos);
      this.#unlink(this.#prev, this.#next, n);
    } else {
      n = this.#newNode(lo, hi);
      this.#index.set(lo, hi, n);
      this.#size++;
    }
    this.#append(this.#prev, this.#next, n);
    this.#stamps[n] = ++this.#stamp;
    if (this.#limit === 0) {
      if (pos < 0) this.#publish(lo, hi);
      return;
    }
    if (this.#inTop[n] === 1) {
      this.#unlink(this.#topPrev, this.#topNext, n);
      this.#append(this.#topPrev, this.#topNext, n);
      return;
    }
    this.#inTop[n] = 1;
    this.#append(this.#topPrev, this.#topNext, n);
    this.#topSize++;
    this.#publish(lo, hi);
    if (this.#topSize > this.#limit) {
      // The oldest published chunk drops out of the digest (the model still holds it).
      const oldest = this.#topNext[0]!;
      this.#leaveTop(oldest);
      this.#unpublish(this.#lo[oldest]!, this.#hi[oldest]!);
    }
  }

  #evict(n: number): void {
    const lo = this.#lo[n]!;
    const hi = this.#hi[n]!;
    this.#index.delete(lo, hi);
    this.#unlink(this.#prev, this.#next, n);
    this.#size--;
    if (this.#limit === 0 || this.#inTop[n] === 1) {
      if (this.#limit > 0) this.#leaveTop(n);
      this.#unpublish(lo, hi);
    }
    this.#freeNodes.push(n);
  }

  #leaveTop(n: number): void {
    this.#unlink(this.#topPrev, this.#topNext, n);
    this.#inTop[n] = 0;
    this.#topSize--;
  }

  #newNode(lo: number, hi: number): number {
    const n = this.#freeNodes.pop() ?? this.#nodes++;
    if (n >= this.#lo.length) {
      this.#lo = holding(this.#lo, n);
      this.#hi = holding(this.#hi, n);
      this.#stamps = holding(this.#stamps, n);
      this.#prev = holding(this.#prev, n);
      this.#next = holding(this.#next, n);
      this.#topPrev = holding(this.#topPrev, n);
      this.#topNext = holding(this.#topNext, n);
      this.#inTop = holding(this.#inTop, n);
    }
    this.#lo[n] = lo;
    this.#hi[n] = hi;
    this.#inTop[n] = 0;
    return n;
  }

  #unlink(prev: Int32Array, next: Int32Array, n: number): void {
    const p = prev[n]!;
    const q = next[n]!;
    next[p] = q;
    prev[q] = p;
  }

  /** Appends n at the newest end of a list. */
  #append(prev: Int32Array, next: Int32Array, n: number): void {
    const last = prev[0]!;
    next[last] = n;
    prev[n] = last;
    next[n] = 0;
    prev[0] = n;
  }

  #publish(lo: number, hi: number): void {
    if (!this.#removed.delete(lo, hi)) this.#added.set(lo, hi, 0);
  }

  #unpublish(lo: number, hi: number): void {
    if (!this.#added.delete(lo, hi)) this.#removed.set(lo, hi, 0);
  }

  /** Evicts the LRU end down to the capacity; returns the stamp of the last chunk evicted (the youngest of them), or -1. */
  #evictOver(): number {
    let last = -1;
    while (this.#size > this.#effective && this.#next[0] !== 0) {
      last = this.#stamps[this.#next[0]!]!;
      this.#evict(this.#next[0]!);
      this.stats.evictions++;
    }
    return last;
  }
}

/** `n` hashes, given as (lo, hi) halves by `fill`, packed into a BigUint64Array. */
function collect(n: number, fill: (put: (lo: number, hi: number) => void) => void): BigUint64Array {
  const out = new BigUint64Array(n);
  const h = halves(out);
  let k = 0;
  fill((lo, hi) => {
    h[2 * k] = lo;
    h[2 * k++ + 1] = hi;
  });
  return fromHalves(out, h);
}

/** A set's hashes as a BigUint64Array. */
function hashesOf(set: Hash64Table): BigUint64Array {
  return collect(set.size, (put) => set.forEach(put));
}

/** Capacity in chunks from engine KV tokens. */
export function chunksFor(kvTokens: number, charsPerToken: number, chunkChars: number): number {
  return Math.max(1, Math.floor((kvTokens * charsPerToken) / chunkChars));
}
