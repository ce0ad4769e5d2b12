/**
 * The holder index: chain hash → the replica slots whose digest holds it,
 * across the whole fleet. It is what makes warmth O(matched depth) instead of
 * O(replicas): the warmth scan asks it for the holders of one hash at a time.
 *
 * Steps: one Hash64Table maps a hash to a value v; v ≥ 0 is the only holder's
 * slot (the common case: a replica's own conversations), v < 0 points to a
 * holder list as -(v + 1) (shared prefixes such as system prompts). A second
 * holder turns the inline slot into a list; removing down to one holder turns
 * it back and recycles the list.
 * Complexity: add and remove O(1) expected + O(holders of that hash) for a
 * shared one; offering the holders of a hash O(holders).
 * Each list keeps a 64-bit signature of its set (two XORs of mixed slots,
 * updated on add and remove), so the warmth scan can tell in O(1) that two
 * chunks have the same holders (`same`: equal size and signature; a false
 * "same" needs two different sets to collide in 64 bits).
 * Trade-off: inline single holders keep the index ≈ 13 bytes per distinct hash
 * with no per-hash object; shared hashes pay one small array each.
 */
import { Hash64Table, mix32 } from '@warmpath/shared/runtime';

/** The two halves of a slot's contribution to a holder list's signature. */
const sigA = (slot: number): number => mix32(slot);
const sigB = (slot: number): number => mix32(slot ^ 0x5bd1e995);
import type { HolderSource, WarmthScan } from './warmth.ts';

export class HolderIndex implements HolderSource<Uint32Array> {
  readonly #index = new Hash64Table(1 << 12);
  /** Holder lists for hashes on several slots; index values < 0 point here as -(i+1). */
  readonly #multi: number[][] = [];
  readonly #multiFree: number[] = [];
  /** Per holder list: the XOR of sigA and of sigB over its slots. */
  readonly #sigA: number[] = [];
  readonly #sigB: number[] = [];

  /** Distinct hashes held by any slot. */
  get size(): number {
    return this.#index.size;
  }

  /** Bytes of the index table (holder lists excluded: small next to it). */
  get bytes(): number {
    return this.#index.bytes;
  }

  /** Records that `slot` holds the hash (lo, hi); idempotent. */
  add(lo: number, hi: number, slot: number): void {
    const pos = this.#index.find(lo, hi);
    if (pos < 0) {
      this.#index.set(lo, hi, slot);
      return;
    }
    const v = this.#index.valueAt(pos);
    if (v >= 0) {
      if (v === slot) return;
      const m = this.#multiFree.pop() ?? this.#multi.length;
      this.#multi[m] = [v, slot];
      this.#sigA[m] = sigA(v) ^ sigA(slot);
      this.#sigB[m] = sigB(v) ^ sigB(slot);
      this.#index.setValueAt(pos, -(m + 1));
    } else {
      const m = -v - 1;
      const list = this.#multi[m]!;
      if (list.includes(slot)) return;
      list.push(slot);
      this.#sigA[m]! ^= sigA(slot);
      this.#sigB[m]! ^= sigB(slot);
    }
  }

  /** Records that `slot` no longer holds the hash (lo, hi); a no-op if it did not. */
  remove(lo: number, hi: number, slot: number): void {
    const pos = this.#index.find(lo, hi);
    if (pos < 0) return;
    const v = this.#index.valueAt(pos);
    if (v >= 0) {
      if (v === slot) this.#index.deleteAt(pos);
      return;
    }
    const m = -v - 1;
    const list = this.#multi[m]!;
    const i = list.indexOf(slot);
    if (i < 0) return;
    list[i] = list[list.length - 1]!;
    list.pop();
    this.#sigA[m]! ^= sigA(slot);
    this.#sigB[m]! ^= sigB(slot);
    if (list.length === 1) {
      this.#index.setValueAt(pos, list[0]!);
      this.#multi[m] = [];
      this.#multiFree.push(m);
    }
  }

  /** The slots holding hash (lo, hi), in the order the warmth scan offers them (tests, debugging). */
  holders(lo: number, hi: number): number[] {
    const pos = this.#index.find(lo, hi);
    if (pos < 0) return [];
    const v = this.#index.valueAt(pos);
    return v >= 0 ? [v] : [...this.#multi[-v - 1]!];
  }

  /** `h` is the chain as u32 halves (`halves(hashes)`); the handle is the hash's position in the index. */
  find(h: Uint32Array, i: number): number {
    return this.#index.find(h[2 * i]!, h[2 * i + 1]!);
  }

  same(a: number, b: number): boolean {
    const va = this.#index.valueAt(a);
    const vb = this.#index.valueAt(b);
    if (va >= 0 || vb >= 0) return va === vb;
    const ma = -va - 1;
    const mb = -vb - 1;
    return (
      ma === mb ||
      (this.#multi[ma]!.length === this.#multi[mb]!.length &&
        this.#sigA[ma] === this.#sigA[mb] &&
        this.#sigB[ma] === this.#sigB[mb])
    );
  }

  offerHolders(pos: number, i: number, _now: number, scan: WarmthScan): void {
    const v = this.#index.valueAt(pos);
    if (v >= 0) scan.offer(v, i);
    else for (const s of this.#multi[-v - 1]!) scan.offer(s, i);
  }
}
