/**
 * Open-addressing hash table keyed by 64-bit chain hashes, stored as two u32
 * halves, with an int32 value per key (or none: a set).
 *
 * Steps: slot = (lo ^ hi) & mask (chain hashes are xxh64 outputs, already
 * uniform); linear probing; deletion by backward shift (no tombstones);
 * doubling at 3/4 load.
 * Complexity: O(1) expected per get/set/delete (at 3/4 load a hit probes
 * ≈ 2.5 slots, a miss ≈ 8.5); 4+4+4+1 bytes per slot (4+4+1 for a set), so
 * 17–35 bytes per key (12–24 for a set) — a Map<bigint, …> costs ≈ 60 and
 * caps at 2^24 entries.
 * Trade-off: keys arrive as BigUint64Array; `halves` views them as u32 pairs
 * without creating a BigInt per hash (little-endian hosts). 3/4 load rather
 * than 1/2 makes a router's digest tables about a third smaller (they are
 * most of its memory at 1,000 replicas) for a few more probes per lookup.
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

/**
 * `out` with the halves `h` written into it, where `h` is what halves(out)
 * returned: on little-endian hosts a view of `out` (nothing to do), else a
 * copy to fold back.
 */
export function fromHalves(out: BigUint64Array, h: Uint32Array): BigUint64Array {
  if (!LE) for (let i = 0; i < out.length; i++) out[i] = (BigInt(h[2 * i + 1]!) << 32n) | BigInt(h[2 * i]!);
  return out;
}

/** Slots for `n` keys at most 3/4 full, a power of two ≥ 16. */
function slotsFor(n: number): number {
  let cap = 16;
  while (cap * 3 < n * 4) cap *= 2;
  return cap;
}

export class Hash64Table {
  #lo: Uint32Array;
  #hi: Uint32Array;
  /** Values; undefined for a set (every value reads 0). */
  #val: Int32Array | undefined;
  #used: Uint8Array;
  #mask: number;
  size = 0;

  /** `values` false: a set of hashes, 4 bytes a slot smaller. */
  constructor(capacity = 16, values = true) {
    const cap = slotsFor(capacity);
    this.#lo = new Uint32Array(cap);
    this.#hi = new Uint32Array(cap);
    this.#val = values ? new Int32Array(cap) : undefined;
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
    return this.#val?.[pos] ?? 0;
  }

  setValueAt(pos: number, v: number): void {
    if (this.#val !== undefined) this.#val[pos] = v;
  }

  /** Inserts or overwrites; returns true if the key was new. */
  set(lo: number, hi: number, v: number): boolean {
    if ((this.size + 1) * 4 > this.#used.length * 3) this.#grow();
    const mask = this.#mask;
    for (let i = (lo ^ hi) & mask; ; i = (i + 1) & mask) {
      if (this.#used[i] === 0) {
        this.#used[i] = 1;
        this.#lo[i] = lo;
        this.#hi[i] = hi;
        if (this.#val !== undefined) this.#val[i] = v;
        this.size++;
        return true;
      }
      if (this.#lo[i] === lo && this.#hi[i] === hi) {
        if (this.#val !== undefined) this.#val[i] = v;
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
        if (this.#val !== undefined) this.#val[hole] = this.#val[i]!;
        hole = i;
      }
    }
    used[hole] = 0;
    this.size--;
  }

  /** Calls fn(lo, hi, value) for every entry. */
  forEach(fn: (lo: number, hi: number, v: number) => void): void {
    const used = this.#used;
    for (let i = 0; i < used.length; i++) if (used[i] === 1) fn(this.#lo[i]!, this.#hi[i]!, this.#val?.[i] ?? 0);
  }

  clear(): void {
    this.#used.fill(0);
    this.size = 0;
  }

  /** Bytes held by the arrays (for the bench and metrics). */
  get bytes(): number {
    return this.#used.length * (this.#val !== undefined ? 13 : 9);
  }

  #grow(): void {
    const lo = this.#lo;
    const hi = this.#hi;
    const val = this.#val;
    const used = this.#used;
    const cap = used.length * 2;
    this.#lo = new Uint32Array(cap);
    this.#hi = new Uint32Array(cap);
    this.#val = val !== undefined ? new Int32Array(cap) : undefined;
    this.#used = new Uint8Array(cap);
    this.#mask = cap - 1;
    this.size = 0;
    for (let i = 0; i < used.length; i++) if (used[i] === 1) this.set(lo[i]!, hi[i]!, val?.[i] ?? 0);
  }
}
