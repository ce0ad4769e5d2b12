/**
 * The warmth scan: for a request's prefix chain, the longest matched prefix
 * (in chunks) of every replica slot that holds its first chunk. One algorithm
 * for every source of "who holds this chunk": the digest holder index
 * (holders.ts) and this router's optimistic overlay (placement/local.ts).
 *
 * Steps: reset the slots the previous scan touched; for chunk i = 0, 1, …
 * the source offers every slot holding hash i; a slot advances from depth i
 * to i + 1 only if it held chunks 0..i-1 (a chain hash names its whole
 * prefix, so a hole ends the match); stop at the first chunk that advanced
 * no slot.
 * Complexity: O(matched depth + holders of the matched hashes), never a scan
 * of all replicas; no allocation per scan (the depth array grows with the
 * highest slot, the touched list is reused).
 * Trade-off: results live in scratch read through `depthOf` / `slots` until
 * the next scan, so a scan's answer must be consumed before the next one —
 * the price of allocating nothing on the placement hot path.
 */

/** Where holders come from: the chain's keys in the source's own form (`K`). */
export interface HolderSource<K> {
  /** Keys held; 0 lets the scan skip the lookups. */
  readonly size: number;
  /** Calls `scan.offer(slot, i)` for every slot holding chunk i of `keys` (valid at `now`). */
  offerHolders(keys: K, i: number, now: number, scan: WarmthScan): void;
}

export class WarmthScan {
  #depth = new Int32Array(64);
  readonly #touched: number[] = [];
  #advanced = false;

  /** Makes room for `slot` (called when a slot first appears, not per scan). */
  grow(slot: number): void {
    if (this.#depth.length > slot) return;
    const d = new Int32Array(Math.max(slot + 1, this.#depth.length * 2));
    d.set(this.#depth);
    this.#depth = d;
  }

  /** Scans the first `n` chunks of `keys` against `source`; read the answer with depthOf / slots. */
  scan<K>(keys: K, n: number, source: HolderSource<K>, now: number): void {
    const depth = this.#depth;
    for (const s of this.#touched) depth[s] = 0;
    this.#touched.length = 0;
    if (source.size === 0) return;
    for (let i = 0; i < n; i++) {
      this.#advanced = false;
      source.offerHolders(keys, i, now, this);
      if (!this.#advanced) break;
    }
  }

  /** Slot `s` holds chunk i: it advances only if it held every chunk before. */
  offer(s: number, i: number): void {
    const depth = this.#depth;
    if (depth[s] !== i) return;
    depth[s] = i + 1;
    if (i === 0) this.#touched.push(s);
    this.#advanced = true;
  }

  /** Slots with a non-zero depth in the last scan, in the order they matched chunk 0 (do not modify). */
  get slots(): readonly number[] {
    return this.#touched;
  }

  /** Matched depth (chunks) of `slot` in the last scan. */
  depthOf(slot: number): number {
    return this.#depth[slot] ?? 0;
  }
}
