/**
 * Paged KV cache with a prefix cache, after vLLM V1's BlockPool.
 *
 * Steps: blocks live in one array; a block holding a full, hashed block of a
 * prompt is registered under its chained hash. Freed blocks (ref count 0) join
 * a free queue at the MRU end but keep their hash, so a later request can reuse
 * them; allocation pops the LRU end and only then forgets the hash (eviction).
 * Blocks with ref > 0 are never evicted. An evicted block's hash goes to the
 * host-memory tier when there is one (host.ts).
 * Complexity: allocate/free/touch O(1) per block (intrusive doubly linked list
 * over typed arrays); prefix match O(matched blocks) lookups in a Hash64Table
 * (hashes as u32 halves: no BigInt per lookup, about a quarter of a
 * Map<bigint, …>'s cost per operation).
 * Trade-off: a hash names a block by the text of its whole prefix (chained), so
 * sharing is exact for equal prefixes, at the price of one hash table entry per block.
 */
import { halves, Hash64Table } from '@warmpath/shared/runtime';
import type { HostKvCache } from './host.ts';

export class BlockPool {
  readonly numBlocks: number;
  private readonly ref: Int32Array;
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private readonly inFree: Uint8Array;
  /** The chain hash each block is registered under, as u32 halves, when `hashed`. */
  private readonly hashLo: Uint32Array;
  private readonly hashHi: Uint32Array;
  private readonly hashed: Uint8Array;
  /** Chain hash → block. */
  private readonly byHash: Hash64Table;
  /** Sentinel index of the free queue: next[head] is LRU, prev[head] is MRU. */
  private readonly head: number;
  private free: number;
  /** Hashed blocks dropped to make room (diagnostics). */
  evictions = 0;
  /**
   * The engine's clock, ms, as its scheduler last set it (the start of the
   * current step): when a block is freed, and so how long an evicted one had
   * sat unused.
   */
  now = 0;
  /** When each free hashed block was last released, ms. */
  private readonly freedAt: Float64Array;
  /** Sum over evicted blocks of how long each had sat free and cached, ms (diagnostics: ÷ evictions is the cache's turnover). */
  evictedAgeMs = 0;
  /** Where evicted hashed blocks go (the host-memory tier), if any. */
  readonly host: HostKvCache | undefined;

  constructor(numBlocks: number, host?: HostKvCache) {
    this.numBlocks = numBlocks;
    this.host = host;
    this.head = numBlocks;
    this.ref = new Int32Array(numBlocks);
    this.prev = new Int32Array(numBlocks + 1);
    this.next = new Int32Array(numBlocks + 1);
    this.inFree = new Uint8Array(numBlocks);
    this.hashLo = new Uint32Array(numBlocks);
    this.hashHi = new Uint32Array(numBlocks);
    this.hashed = new Uint8Array(numBlocks);
    this.freedAt = new Float64Array(numBlocks);
    this.byHash = new Hash64Table(Math.min(numBlocks, 1 << 16));
    this.prev[this.head] = this.head;
    this.next[this.head] = this.head;
    this.free = 0;
    for (let b = 0; b < numBlocks; b++) this.pushMru(b);
  }

  /** Blocks not referenced by any request (includes evictable cached blocks). */
  get numFree(): number {
    return this.free;
  }

  get numUsed(): number {
    return this.numBlocks - this.free;
  }

  /** Blocks currently holding a hashed prefix (referenced or not). */
  get numCached(): number {
    return this.byHash.size;
  }

  /** Leading hashes of `hashes` (at most `max`) present in the cache. */
  match(hashes: BigUint64Array, max: number): number {
    const n = Math.min(hashes.length, max);
    const h = halves(hashes);
    let i = 0;
    while (i < n && this.byHash.find(h[2 * i]!, h[2 * i + 1]!) >= 0) i++;
    return i;
  }

  /** The block cached under hashes[i] (which must be cached). */
  #blockOf(h: Uint32Array, i: number): number {
    return this.byHash.valueAt(this.byHash.find(h[2 * i]!, h[2 * i + 1]!));
  }

  /** How many of the first `count` matched blocks sit in the free queue (would stop being free). */
  freeAmongMatched(hashes: BigUint64Array, count: number): number {
    const h = halves(hashes);
    let k = 0;
    for (let i = 0; i < count; i++) if (this.ref[this.#blockOf(h, i)] === 0) k++;
    return k;
  }

  /** Takes a reference on the first `count` cached blocks of `hashes`, appending them to `out`. */
  acquireCached(hashes: BigUint64Array, count: number, out: number[]): void {
    const h = halves(hashes);
    for (let i = 0; i < count; i++) {
      const b = this.#blockOf(h, i);
      if (this.ref[b] === 0) this.unlink(b);
      this.ref[b]!++;
      out.push(b);
    }
  }

  /** Allocates `n` fresh blocks (evicting LRU cached ones); false, with nothing taken, if too few. */
  allocate(n: number, out: number[]): boolean {
    if (n > this.free) return false;
    for (let i = 0; i < n; i++) {
      const b = this.next[this.head]!;
      this.unlink(b);
      if (this.hashed[b] === 1) {
        this.byHash.delete(this.hashLo[b]!, this.hashHi[b]!);
        this.host?.put(this.hashLo[b]!, this.hashHi[b]!);
        this.hashed[b] = 0;
        this.evictions++;
        this.evictedAgeMs += this.now - this.freedAt[b]!;
      }
      this.ref[b] = 1;
      out.push(b);
    }
    return true;
  }

  /** Registers a full block under the chain hash hashes[i]; a hash already cached keeps its first block. */
  commit(block: number, hashes: BigUint64Array, i: number): void {
    const h = halves(hashes);
    const lo = h[2 * i]!;
    const hi = h[2 * i + 1]!;
    if (this.hashed[block] === 1 || this.byHash.find(lo, hi) >= 0) return;
    this.hashLo[block] = lo;
    this.hashHi[block] = hi;
    this.hashed[block] = 1;
    this.byHash.set(lo, hi, block);
  }

  /**
   * Drops a request's references. Tail blocks are freed first so a prompt's
   * early (most shared) blocks are evicted last; unhashed blocks go straight
   * to the LRU end since they hold nothing reusable.
   */
  release(blocks: readonly number[]): void {
    for (let i = blocks.length - 1; i >= 0; i--) {
      const b = blocks[i]!;
      if (--this.ref[b]! > 0) continue;
      if (this.hashed[b] === 0) this.pushLru(b);
      else {
        this.freedAt[b] = this.now;
        this.pushMru(b);
      }
    }
  }

  /** Forgets every unreferenced cached block (vLLM's /reset_prefix_cache). Returns how many were dropped. */
  resetPrefixCache(): number {
    let dropped = 0;
    for (let b = 0; b < this.numBlocks; b++) {
      if (this.hashed[b] === 0 || this.ref[b] !== 0) continue;
      this.byHash.delete(this.hashLo[b]!, this.hashHi[b]!);
      this.hashed[b] = 0;
      dropped++;
    }
    return dropped;
  }

  private unlink(b: number): void {
    const p = this.prev[b]!;
    const n = this.next[b]!;
    this.next[p] = n;
    this.prev[n] = p;
    this.inFree[b] = 0;
    this.free--;
  }

  private pushMru(b: number): void {
    const last = this.prev[this.head]!;
    this.next[last] = b;
    this.prev[b] = last;
    this.next[b] = this.head;
    this.prev[this.head] = b;
    this.inFree[b] = 1;
    this.free++;
  }

  private pushLru(b: number): void {
    const first = this.next[this.head]!;
    this.prev[first] = b;
    this.next[b] = first;
    this.prev[b] = this.head;
    this.next[this.head] = b;
    this.inFree[b] = 1;
    this.free++;
  }

  /** Self-check for tests: free-list length and ref counts agree. */
  checkInvariants(): void {
    let n = 0;
    for (let b = this.next[this.head]!; b !== this.head; b = this.next[b]!) {
      if (this.ref[b] !== 0) throw new Error(`block ${b} in free queue with ref ${this.ref[b]}`);
      if (++n > this.numBlocks) throw new Error('free queue cycle');
    }
    if (n !== this.free) throw new Error(`free count ${this.free} != queue length ${n}`);
    for (let b = 0; b < this.numBlocks; b++) {
      if (this.ref[b]! < 0) throw new Error(`block ${b} ref < 0`);
      if ((this.ref[b] === 0) !== (this.inFree[b] === 1)) throw new Error(`block ${b} free flag disagrees with ref`);
    }
    this.byHash.forEach((lo, hi, b) => {
      if (this.hashed[b] !== 1 || this.hashLo[b] !== lo || this.hashHi[b] !== hi)
        throw new Error(`hash index disagrees for block ${b}`);
    });
    let registered = 0;
    for (let b = 0; b < this.numBlocks; b++) registered += this.hashed[b]!;
    if (registered !== this.byHash.size)
      throw new Error(`${registered} blocks registered, ${this.byHash.size} in the index`);
  }
}
