/**
 * The hit-rate ceiling of references.ts: every request's prompt blocks looked
 * up, in arrival order, in one cache as large as the fleet's KV capacity,
 * with Belady's optimal eviction (evict the block whose next use is farthest
 * away); also with unlimited capacity.
 *
 * Steps: a dense id per distinct block → each block's access positions →
 * walk the requests in arrival order: count the hit (the longest run of the
 * prompt's leading blocks present, one token short of the whole prompt, as
 * engines do), then insert or refresh the request's blocks keyed by their
 * next use in a max-heap (lazy deletion) and evict from the top while over
 * capacity.
 * Complexity: O(B log B) for B block accesses.
 */
import { halves, Hash64Table, holding } from '@warmpath/shared/runtime';

/** What the ceiling reads of a request: its arrival, its prompt's block hashes and length. */
export interface CeilingRequest {
  /** Arrival, ms. */
  readonly at: number;
  readonly blockHashes: BigUint64Array;
  readonly promptTokens: number;
}

export interface HitCeiling {
  /** Hit rate with the fleet's KV capacity and optimal eviction. */
  readonly belady: number;
  /** Hit rate with unlimited capacity. */
  readonly unlimited: number;
  /** Per request (plan order), tokens hit under `belady`. */
  readonly cachedTokens: Int32Array;
  /** Per request (plan order), tokens hit under `unlimited`: every block that arrived before it. */
  readonly seenTokens: Int32Array;
}

/**
 * Belady's cache over the plan's prompt blocks; capacityBlocks = Infinity for
 * the unlimited case. Each distinct block gets a dense id once (the only
 * lookups by hash, in a Hash64Table: a Map holds at most 2^24 keys, and an
 * hour of the trace has about 70 million distinct blocks), so the walk reads
 * typed arrays: that hour on 100 replicas is over 100 million block accesses.
 */
export function hitCeiling(reqs: readonly CeilingRequest[], blockSize: number, capacityBlocks: number): HitCeiling {
  const order = reqs.map((_, i) => i).sort((a, b) => reqs[a]!.at - reqs[b]!.at || a - b);
  const { ids, blocks } = blockIds(reqs, order);
  const { start, uses } = useLists(order, ids, blocks);
  const cursor = start.slice(0, blocks); // block → index in `uses` of its next use
  const nextUse = (id: number, pos: number): number => {
    let k = cursor[id]!;
    const end = start[id + 1]!;
    while (k < end && uses[k]! <= pos) k++;
    cursor[id] = k;
    return k < end ? uses[k]! : Number.POSITIVE_INFINITY;
  };
  const cachedNext = new Float64Array(blocks).fill(-1); // block → its current next use (heap key), -1 = not cached
  let cachedCount = 0;
  const seen = new Uint8Array(blocks);
  const heap = new MaxHeap();
  const cachedTokens = new Int32Array(reqs.length);
  const seenTokens = new Int32Array(reqs.length);
  let hit = 0;
  let unlimitedHit = 0;
  let total = 0;
  order.forEach((ri, pos) => {
    const r = reqs[ri]!;
    const rid = ids[ri]!;
    const maxHit = Math.max(0, Math.floor((r.promptTokens - 1) / blockSize));
    let n = 0;
    while (n < maxHit && n < rid.length && cachedNext[rid[n]!]! >= 0) n++;
    let u = 0;
    while (u < maxHit && u < rid.length && seen[rid[u]!] === 1) u++;
    cachedTokens[ri] = n * blockSize;
    seenTokens[ri] = u * blockSize;
    hit += n * blockSize;
    unlimitedHit += u * blockSize;
    total += r.promptTokens;
    for (const id of rid) {
      seen[id] = 1;
      const next = nextUse(id, pos);
      if (cachedNext[id]! < 0) cachedCount++;
      cachedNext[id] = next;
      heap.push(next, id);
    }
    while (cachedCount > capacityBlocks) {
      const top = heap.pop()!;
      // A stale entry (the block was refreshed since) is skipped.
      if (cachedNext[top.id] !== top.key) continue;
      cachedNext[top.id] = -1;
      cachedCount--;
    }
  });
  return {
    belady: total === 0 ? 0 : hit / total,
    unlimited: total === 0 ? 0 : unlimitedHit / total,
    cachedTokens,
    seenTokens,
  };
}

/** A dense id per distinct block (the only lookups by hash), per request's blocks, assigned in arrival order. */
function blockIds(reqs: readonly CeilingRequest[], order: readonly number[]): { ids: Int32Array[]; blocks: number } {
  // Dense ids per block, per request in arrival order.
  const idOf = new Hash64Table(1 << 16);
  const ids: Int32Array[] = new Array(reqs.length);
  for (const ri of order) {
    const hs = reqs[ri]!.blockHashes;
    const h = halves(hs);
    const out = new Int32Array(hs.length);
    for (let k = 0; k < hs.length; k++) {
      const at = idOf.find(h[2 * k]!, h[2 * k + 1]!);
      let id = at < 0 ? -1 : idOf.valueAt(at);
      if (id < 0) idOf.set(h[2 * k]!, h[2 * k + 1]!, (id = idOf.size));
      out[k] = id;
    }
    ids[ri] = out;
  }
  return { ids, blocks: idOf.size };
}

/**
 * Each block's access positions (rank in arrival order), ascending, in one
 * flat array: block b's are uses[start[b] .. start[b + 1]).
 */
function useLists(
  order: readonly number[],
  ids: readonly Int32Array[],
  blocks: number,
): { start: Int32Array; uses: Int32Array } {
  const start = new Int32Array(blocks + 1);
  const last = new Int32Array(blocks).fill(-1);
  order.forEach((ri, pos) => {
    for (const id of ids[ri]!) {
      if (last[id] === pos) continue;
      last[id] = pos;
      start[id + 1]!++;
    }
  });
  for (let b = 0; b < blocks; b++) start[b + 1]! += start[b]!;
  const uses = new Int32Array(start[blocks]!);
  const fill = start.slice(0, blocks);
  last.fill(-1);
  order.forEach((ri, pos) => {
    for (const id of ids[ri]!) {
      if (last[id] === pos) continue;
      last[id] = pos;
      uses[fill[id]!++] = pos;
    }
  });
  return { start, uses };
}

/**
 * A binary max-heap of (key, block id) pairs, in typed arrays: an hour of the
 * trace pushes one pair per block access (over 100 million), past the
 * longest plain array V8 allows.
 */
class MaxHeap {
  #keys = new Float64Array(1 << 16);
  #ids = new Int32Array(1 << 16);
  #n = 0;
  push(key: number, id: number): void {
    let i = this.#n++;
    this.#keys = holding(this.#keys, i);
    this.#ids = holding(this.#ids, i);
    const k = this.#keys;
    const v = this.#ids;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (k[p]! >= key) break;
      k[i] = k[p]!;
      v[i] = v[p]!;
      i = p;
    }
    k[i] = key;
    v[i] = id;
  }
  pop(): { key: number; id: number } | undefined {
    const k = this.#keys;
    const v = this.#ids;
    if (this.#n === 0) return undefined;
    const top = { key: k[0]!, id: v[0]! };
    const n = --this.#n;
    const lastK = k[n]!;
    const lastV = v[n]!;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const c = l + 1 < n && k[l + 1]! > k[l]! ? l + 1 : l;
        if (k[c]! <= lastK) break;
        k[i] = k[c]!;
        v[i] = v[c]!;
        i = c;
      }
      k[i] = lastK;
      v[i] = lastV;
    }
    return top;
  }
}
