/**
 * Open-addressing hash table keyed by 64-bit chain hashes, stored as two u32
 * halves, with an int32 value per key (or none: a set).
 *
 * Steps: slot = (lo ^ hi) & mask (chain hashes are xxh64 outputs, already
 * uniform); linear probing; deletion by backward shift (no tombstones);
 * doubling at 3/4 load. A slot is its key's two halves and its value side by
 * side in one array, and an empty slot holds the key 0 (the key 0 itself, if
 * it ever comes, is kept beside the slots): no byte per slot for "used", and
 * a probe touches one cache line for key and value (docs/SCALE.md, "Compact
 * views", measured with router/bench/memory.ts).
 * Complexity: O(1) expected per get/set/delete (at 3/4 load a hit probes
 * ≈ 2.5 slots, a miss ≈ 8.5); 12 bytes per slot (8 for a set), so 16–32
 * bytes per key (11–21 for a set) — a Map<bigint, …> costs several times that
 * and caps at 2^24 entries.
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
  /** Per slot: lo, hi (0, 0 = empty) and, with values, the value (as u32; read back signed). */
  #data: Uint32Array;
  /** Words per slot: 3 with values, 2 for a set. */
  readonly #stride: number;
  readonly #values: boolean;
  #slots: number;
  /** The slots it was made with: clear() returns to them. */
  readonly #initialSlots: number;
  #mask: number;
  /** Keys in slots (the key 0 is not in one). */
  #inSlots = 0;
  /** The key 0, kept apart (an empty slot reads as 0); its position is #slots. */
  #zero = false;
  #zeroValue = 0;
  size = 0;

  /** `values` false: a set of hashes, 4 bytes a slot smaller. */
  constructor(capacity = 16, values = true) {
    this.#values = values;
    this.#stride = values ? 3 : 2;
    this.#slots = this.#initialSlots = slotsFor(capacity);
    this.#mask = this.#slots - 1;
    this.#data = new Uint32Array(this.#slots * this.#stride);
  }

  /** Position of the key, or -1. */
  find(lo: number, hi: number): number {
    if ((lo | hi) === 0) return this.#zero ? this.#slots : -1;
    const d = this.#data;
    const s = this.#stride;
    const mask = this.#mask;
    for (let i = (lo ^ hi) & mask; ; i = (i + 1) & mask) {
      const a = d[i * s]!;
      const b = d[i * s + 1]!;
      if (a === lo && b === hi) return i;
      if ((a | b) === 0) return -1;
    }
  }

  has(lo: number, hi: number): boolean {
    return this.find(lo, hi) >= 0;
  }

  valueAt(pos: number): number {
    if (!this.#values) return 0;
    return pos === this.#slots ? this.#zeroValue : this.#data[pos * 3 + 2]! | 0;
  }

  setValueAt(pos: number, v: number): void {
    if (!this.#values) return;
    if (pos === this.#slots) this.#zeroValue = v;
    else this.#data[pos * 3 + 2] = v;
  }

  /** Inserts or overwrites; returns true if the key was new. */
  set(lo: number, hi: number, v: number): boolean {
    if ((lo | hi) === 0) {
      const added = !this.#zero;
      this.#zero = true;
      this.#zeroValue = this.#values ? v : 0;
      if (added) this.size++;
      return added;
    }
    if ((this.#inSlots + 1) * 4 > this.#slots * 3) this.#grow();
    const d = this.#data;
    const s = this.#stride;
    const mask = this.#mask;
    for (let i = (lo ^ hi) & mask; ; i = (i + 1) & mask) {
      const p = i * s;
      const a = d[p]!;
      const b = d[p + 1]!;
      if ((a | b) === 0) {
        d[p] = lo;
        d[p + 1] = hi;
        if (s === 3) d[p + 2] = v;
        this.#inSlots++;
        this.size++;
        return true;
      }
      if (a === lo && b === hi) {
        if (s === 3) d[p + 2] = v;
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
    this.size--;
    if (pos === this.#slots) {
      this.#zero = false;
      this.#zeroValue = 0;
      return;
    }
    const d = this.#data;
    const s = this.#stride;
    const mask = this.#mask;
    let hole = pos;
    for (let i = (pos + 1) & mask; (d[i * s]! | d[i * s + 1]!) !== 0; i = (i + 1) & mask) {
      const home = (d[i * s]! ^ d[i * s + 1]!) & mask;
      // Move entry i into the hole if its home is not in (hole, i] cyclically.
      if ((i > hole && (home <= hole || home > i)) || (i < hole && home <= hole && home > i)) {
        d.copyWithin(hole * s, i * s, i * s + s);
        hole = i;
      }
    }
    d.fill(0, hole * s, hole * s + s);
    this.#inSlots--;
  }

  /** Calls fn(lo, hi, value) for every entry. */
  forEach(fn: (lo: number, hi: number, v: number) => void): void {
    if (this.#zero) fn(0, 0, this.#zeroValue);
    const d = this.#data;
    const s = this.#stride;
    for (let p = 0; p < d.length; p += s)
      if ((d[p]! | d[p + 1]!) !== 0) fn(d[p]!, d[p + 1]!, s === 3 ? d[p + 2]! | 0 : 0);
  }

  /**
   * Empties the table and returns it to the capacity it was made with: a
   * set filled by a burst and then emptied is not scanned (forEach) at its
   * peak size ever after. The agent's pending digest delta is such a set:
   * kept at its peak, every publish would scan it whole (docs/SCALE.md,
   * "Simulator speed: an hour of the trace at 100 replicas").
   */
  clear(): void {
    if (this.#slots !== this.#initialSlots) {
      this.#slots = this.#initialSlots;
      this.#mask = this.#slots - 1;
      this.#data = new Uint32Array(this.#slots * this.#stride);
    } else this.#data.fill(0);
    this.#zero = false;
    this.#zeroValue = 0;
    this.#inSlots = 0;
    this.size = 0;
  }

  /** Bytes held by the table (for the bench and metrics). */
  get bytes(): number {
    return this.#data.byteLength;
  }

  #grow(): void {
    const old = this.#data;
    const s = this.#stride;
    this.#slots *= 2;
    this.#mask = this.#slots - 1;
    this.#data = new Uint32Array(this.#slots * s);
    this.#inSlots = 0;
    this.size = this.#zero ? 1 : 0;
    for (let p = 0; p < old.length; p += s)
      if ((old[p]! | old[p + 1]!) !== 0) this.set(old[p]!, old[p + 1]!, s === 3 ? old[p + 2]! | 0 : 0);
  }
}
