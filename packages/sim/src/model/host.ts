/**
 * Host-memory KV tier, after vLLM's native CPU offloading: blocks the GPU
 * prefix cache evicts are kept in host memory, and a later prompt whose
 * prefix continues there loads them back over PCIe instead of recomputing.
 *
 * Steps: the block pool hands every evicted hashed block's chain hash to
 * `put` (MRU end; the LRU block is dropped past capacity); at admission,
 * `match` extends the GPU hit with the leading blocks found here and
 * `touch`es them (they stay here too: a reload copies, it does not move).
 * Complexity: O(1) per put, O(matched blocks) per match (a Map keeps the
 * recency order: delete + set moves a key to the MRU end).
 * Trade-off: a Map keyed by the 64-bit hash as a bigint is simple and only
 * paid for when the tier is on (capacity 0 stores nothing and matches nothing).
 */
import { halves } from '@warmpath/shared/runtime';

export class HostKvCache {
  /** Capacity in blocks (0 = the tier is off). */
  readonly capacity: number;
  /** Chain hash (hi << 32 | lo) → true, LRU first. */
  readonly #lru = new Map<bigint, true>();
  /** Blocks dropped from host memory to make room (diagnostics). */
  evictions = 0;

  constructor(capacityBlocks: number) {
    this.capacity = Math.max(0, Math.floor(capacityBlocks));
  }

  get size(): number {
    return this.#lru.size;
  }

  /** Stores one block evicted from the GPU (by its hash halves), dropping the LRU block past capacity. */
  put(lo: number, hi: number): void {
    if (this.capacity === 0) return;
    const key = keyOf(lo, hi);
    this.#lru.delete(key);
    this.#lru.set(key, true);
    if (this.#lru.size > this.capacity) {
      this.#lru.delete(this.#lru.keys().next().value!);
      this.evictions++;
    }
  }

  /** How many of hashes[from..max) are held here, in order from `from`; marks them recently used when `touch`. */
  match(hashes: BigUint64Array, from: number, max: number, touch: boolean): number {
    if (this.#lru.size === 0) return 0;
    const h = halves(hashes);
    const n = Math.min(hashes.length, max);
    let i = from;
    while (i < n) {
      const key = keyOf(h[2 * i]!, h[2 * i + 1]!);
      if (!this.#lru.has(key)) break;
      if (touch) {
        this.#lru.delete(key);
        this.#lru.set(key, true);
      }
      i++;
    }
    return i - from;
  }

  /** Drops everything (vLLM's /reset_prefix_cache also resets the offloaded tier). Returns how many. */
  clear(): number {
    const n = this.#lru.size;
    this.#lru.clear();
    return n;
  }
}

function keyOf(lo: number, hi: number): bigint {
  return (BigInt(hi) << 32n) | BigInt(lo);
}
