/**
 * The optimistic overlay (LocalState owns one): prefixes this router just
 * dispatched, as a holder source for the fleet's one warmth scan
 * (fleet/warmth.ts) — the same chained longest-prefix rule as the digest
 * index, over holders that expire.
 */
import { Hash64Table, mix32 } from '@warmpath/shared/runtime';
import type { HolderSource, WarmthScan } from '../fleet/warmth.ts';

const untilBits = new Float64Array(1);
const untilWords = new Uint32Array(untilBits.buffer);
/** One half (`seed`) of a (slot, expiry) pair's contribution to an entry's signature. */
function pairSig(slot: number, until: number, seed: number): number {
  untilBits[0] = until;
  return mix32(slot ^ seed ^ mix32(untilWords[0]! ^ mix32(untilWords[1]! ^ seed)));
}
const SEED_A = 0;
const SEED_B = 0x5bd1e995;

/**
 * Chain hash → the slots this router just sent it to, each with an expiry.
 * Keyed like the digest index (a Hash64Table over the hashes' u32 halves,
 * value = entry number), so a lookup creates no BigInt. Like the digest
 * index, each entry keeps a 64-bit signature of its (slot, expiry) pairs, so
 * the warmth scan can skip a run of chunks with the same holders (the chunks
 * of one prompt, added together, expire together).
 */
export class Overlay implements HolderSource<Uint32Array> {
  readonly #index = new Hash64Table(1 << 10);
  /** Per entry number: its holders and their expiries (local clock, ms), its key's halves (to delete it), its signature. */
  readonly #slots: number[][] = [];
  readonly #until: number[][] = [];
  readonly #keys: number[] = [];
  readonly #sigA: number[] = [];
  readonly #sigB: number[] = [];
  readonly #free: number[] = [];
  /**
   * Every (entry, expiry) added, in the order added: expiries are now + a
   * fixed TTL, so they come due in this order and prune visits only the
   * entries with a holder due, not every entry (pruning every entry each
   * sweep was a visible share of a simulated fleet's run). A clock that
   * steps back only delays a prune: reads check expiries themselves.
   */
  #dueEntry: number[] = [];
  #dueAt: number[] = [];
  #dueHead = 0;

  get size(): number {
    return this.#index.size;
  }

  /** `slot` holds the first `n` hashes of `h` (halves) until `until`. */
  add(h: Uint32Array, n: number, slot: number, until: number): void {
    for (let i = 0; i < n; i++) {
      const lo = h[2 * i]!;
      const hi = h[2 * i + 1]!;
      const pos = this.#index.find(lo, hi);
      if (pos < 0) {
        const e = this.#free.pop() ?? this.#slots.length;
        this.#due(e, until);
        this.#slots[e] = [slot];
        this.#until[e] = [until];
        this.#keys[2 * e] = lo;
        this.#keys[2 * e + 1] = hi;
        this.#sigA[e] = pairSig(slot, until, SEED_A);
        this.#sigB[e] = pairSig(slot, until, SEED_B);
        this.#index.set(lo, hi, e);
        continue;
      }
      const e = this.#index.valueAt(pos);
      this.#due(e, until);
      const slots = this.#slots[e]!;
      const j = slots.indexOf(slot);
      if (j >= 0) {
        const before = this.#until[e]![j]!;
        this.#sigA[e]! ^= pairSig(slot, before, SEED_A);
        this.#sigB[e]! ^= pairSig(slot, before, SEED_B);
        this.#until[e]![j] = until;
      } else {
        slots.push(slot);
        this.#until[e]!.push(until);
      }
      this.#sigA[e]! ^= pairSig(slot, until, SEED_A);
      this.#sigB[e]! ^= pairSig(slot, until, SEED_B);
    }
  }

  find(h: Uint32Array, i: number): number {
    return this.#index.find(h[2 * i]!, h[2 * i + 1]!);
  }

  /** The same (slot, expiry) pairs: the same holders at any instant. */
  same(a: number, b: number): boolean {
    const ea = this.#index.valueAt(a);
    const eb = this.#index.valueAt(b);
    return (
      ea === eb ||
      (this.#slots[ea]!.length === this.#slots[eb]!.length &&
        this.#sigA[ea] === this.#sigA[eb] &&
        this.#sigB[ea] === this.#sigB[eb])
    );
  }

  offerHolders(pos: number, i: number, now: number, scan: WarmthScan): void {
    const e = this.#index.valueAt(pos);
    const slots = this.#slots[e]!;
    const until = this.#until[e]!;
    for (let j = 0; j < slots.length; j++) if (until[j]! > now) scan.offer(slots[j]!, i);
  }

  #due(e: number, until: number): void {
    this.#dueEntry.push(e);
    this.#dueAt.push(until);
  }

  /** Drops holders expired at `now`, and hashes left without one. O(holders come due since the last prune). */
  prune(now: number): void {
    let head = this.#dueHead;
    const entries = this.#dueEntry;
    const at = this.#dueAt;
    while (head < entries.length && at[head]! <= now) this.#pruneEntry(entries[head++]!, now);
    if (head * 2 > entries.length) {
      this.#dueEntry = entries.slice(head);
      this.#dueAt = at.slice(head);
      head = 0;
    }
    this.#dueHead = head;
  }

  /** Entry e without its holders expired at `now` (an entry freed or reused since it was queued loses only expired holders, if any). */
  #pruneEntry(e: number, now: number): void {
    const slots = this.#slots[e]!;
    if (slots.length === 0) return;
    const until = this.#until[e]!;
    let k = 0;
    for (let j = 0; j < slots.length; j++) {
      if (until[j]! <= now) {
        this.#sigA[e]! ^= pairSig(slots[j]!, until[j]!, SEED_A);
        this.#sigB[e]! ^= pairSig(slots[j]!, until[j]!, SEED_B);
        continue;
      }
      slots[k] = slots[j]!;
      until[k++] = until[j]!;
    }
    slots.length = until.length = k;
    if (k === 0) {
      this.#index.delete(this.#keys[2 * e]!, this.#keys[2 * e + 1]!);
      this.#free.push(e);
    }
  }
}
