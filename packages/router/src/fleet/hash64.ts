/**
 * Open-addressing hash table keyed by 64-bit chain hashes, stored as two u32
 * halves, with an int32 value per key.
 *
 * Steps: slot = (lo ^ hi) & mask (chain hashes are xxh64 outputs, already
 * uniform); linear probing; deletion by backward shift (no tombstones);
 * doubling at 1/2 load.
 * Complexity: O(1) expected per get/set/delete; 4+4+4+1 bytes per slot, so
 * ≈ 26 bytes per key at worst load — a Map<bigint, …> costs ≈ 60 and caps at
 * 2^24 entries.
 * Trade-off: keys arrive as BigUint64Array; `halves` views them as u32 pairs
 * without creating a BigInt per hash (little-endian hosts).
 */
import { endianness } from 'node:os';

const LE = endianness() === 'LE';

/** The u32 halves of packed 64-bit hashes: [lo0, hi0, lo1, hi1, …]. */
export function halves(hashes: BigUint64Array): Uint32Array {
  if (LE) return new Uint32Array(hashes.buffer, hashes.byteOffset, hashes.length * 2);
  const out = new Uint32Array(hashes.length * 2);
  for (let i = 0; i < hashes.length; i++) {
    const h = hashes[i]!;
    out[2 * i] = Number(h & 0xffffffffn);
    out[2 * i + 1] = Number(h >> 32n);
  }
  return out;
}

export class Hash64Table {
  #lo: Uint32Array;
  #hi: Uint32Array;
  #val: Int32Array;
  #used: Uint8Array;
  #mask: number;
  size = 0;

  constructor(capacity = 16) {
    let cap = 16;
    while (cap < capacity * 2) cap *= 2;
    this.#lo = new Uint32Array(cap);
    this.#hi = new Uint32Array(cap);
    this.#val = new Int32Array(cap);
    this.#used = new Uint8Array(cap);
    this.#mask = cap - 1;
  }

  /** Position of the key, or -1. */
  find(lo: number, hi: number): number {
    const used = this.#used;
    const los = this.#lo;
    const his = this.#hi;
    const mask = this.#mask;
    for (let i = (lo ^ hi) & mask; ; i = (i + 1) & mask) {
      if (used[i] === 0) return -1;
      if (los[i] === lo && his[i] === hi) return i;
    }
  }

  has(lo: number, hi: number): boolean {
    return this.find(lo, hi) >= 0;
  }

  valueAt(pos: number): number {
    return this.#val[pos]!;
  }

  setValueAt(pos: number, v: number): void {
    this.#val[pos] = v;
  }

  /** Inserts or overwrites; returns true if the key was new. */
  set(lo: number, hi: number, v: number): boolean {
    if ((this.size + 1) * 2 > this.#used.length) this.#grow();
    const mask = this.#mask;
    for (let i = (lo ^ hi) & mask; ; i = (i + 1) & mask) {
      if (this.#used[i] === 0) {
        this.#used[i] = 1;
        this.#lo[i] = lo;
        this.#hi[i] = hi;
        this.#val[i] = v;
        this.size++;
        return true;
      }
      if (this.#lo[i] === lo && this.#hi[i] === hi) {
        this.#val[i] = v;
        return false;
      }
    }
  }

  delete(lo: number, hi: number): boolean {
    const pos = this.find(lo, hi);
    if (pos < 0) return false;
    this.deleteAt(pos);
    return true;
  }

  /** Backward-shift deletion keeps probe chains intact without tombstones. */
  deleteAt(pos: number): void {
    const used = this.#used;
    const mask = this.#mask;
    let hole = pos;
    for (let i = (pos + 1) & mask; used[i] === 1; i = (i + 1) & mask) {
      const home = (this.#lo[i]! ^ this.#hi[i]!) & mask;
      // Move entry i into the hole if its home is not in (hole, i] cyclically.
      if ((i > hole && (home <= hole || home > i)) || (i < hole && home <= hole && home > i)) {
        this.#lo[hole] = this.#lo[i]!;
        this.#hi[hole] = this.#hi[i]!;
        this.#val[hole] = this.#val[i]!;
        hole = i;
      }
    }
    used[hole] = 0;
    this.size--;
  }

  /** Calls fn(lo, hi, value) for every entry. */
  forEach(fn: (lo: number, hi: number, v: number) => void): void {
    const used = this.#used;
    for (let i = 0; i < used.length; i++) if (used[i] === 1) fn(this.#lo[i]!, this.#hi[i]!, this.#val[i]!);
  }

  clear(): void {
    this.#used.fill(0);
    this.size = 0;
  }

  /** Bytes held by the arrays (for the bench and metrics). */
  get bytes(): number {
    return this.#used.length * 13;
  }

  #grow(): void {
    const lo = this.#lo;
    const hi = this.#hi;
    const val = this.#val;
    const used = this.#used;
    const cap = used.length * 2;
    this.#lo = new Uint32Array(cap);
    this.#hi = new Uint32Array(cap);
    this.#val = new Int32Array(cap);
    this.#used = new Uint8Array(cap);
    this.#mask = cap - 1;
    this.size = 0;
    for (let i = 0; i < used.length; i++) if (used[i] === 1) this.set(lo[i]!, hi[i]!, val[i]!);
  }
}
