/**
 * A sliding 60-second window of requests and tokens, in one-second slots.
 *
 * Steps: a slot per second holds what was admitted in it; the window's sum is
 * the current slot plus the WINDOW_SLOTS − 1 before it (61 slots), so a slot
 * leaves the sum only once every instant in it lies 60 s or more in the past.
 * Admitting only while sum + cost ≤ limit then holds the limit over ANY 60 s
 * interval, not just aligned minutes: the interval's last admission saw every
 * earlier admission of the interval in its sum. The price of the one-second
 * granularity is that an admission may be held up to one second longer than
 * an exact log would (docs/TENANTS.md, "Limits").
 * A correction (the engine's usage replacing a reservation) goes to the slot
 * the reservation went to, while that slot is still in the window.
 * Complexity: O(1) amortized per add/adjust (slots past are zeroed as the
 * window moves, at most WINDOW_SLOTS per call); O(WINDOW_SLOTS) per sum.
 * Memory: 61 slots × 2 float64 counters, about 1 KB per tenant, allocated
 * at the tenant's first request.
 */
import type { Counts } from './types.ts';

/** Slot length, ms. */
export const SLOT_MS = 1_000;
/** The limit's span, ms. */
export const WINDOW_MS = 60_000;
/** Slots summed: the current one and the 60 before it (see the header). */
export const WINDOW_SLOTS = WINDOW_MS / SLOT_MS + 1;

/** A slot's index in the ring (slots before time 0 included). */
const at = (slot: number): number => ((slot % WINDOW_SLOTS) + WINDOW_SLOTS) % WINDOW_SLOTS;

/** `dims` counters per one-second slot over the window: the engine under SlidingWindow and usage accounting. */
export class SlotRing {
  readonly dims: number;
  /** Slot-major: slot i's counters at [i × dims, (i + 1) × dims). */
  readonly #v: Float64Array;
  /** The newest slot written or cleared (absolute second); every older slot in the ring is from before it. */
  #head = -Infinity;
  /** The newest slot anything was added to. */
  #last = -Infinity;

  constructor(dims: number) {
    this.dims = dims;
    this.#v = new Float64Array(WINDOW_SLOTS * dims);
  }

  /** Adds `values` (one per counter) at `now`; returns the slot (absolute second) for a later `adjust`. */
  add(now: number, values: readonly number[]): number {
    const slot = this.#advance(now);
    const base = at(slot) * this.dims;
    for (let d = 0; d < this.dims; d++) this.#v[base + d]! += values[d] ?? 0;
    this.#last = slot;
    return slot;
  }

  /** Corrects counter `d` of `slot` by `delta` (never below 0); nothing once the slot left the window. */
  adjust(slot: number, now: number, d: number, delta: number): void {
    const head = this.#advance(now);
    if (slot <= head - WINDOW_SLOTS || slot > head) return;
    const i = at(slot) * this.dims + d;
    this.#v[i] = Math.max(0, this.#v[i]! + delta);
  }

  /** Counter `d` summed over the window at `now`. */
  sum(now: number, d: number): number {
    this.#advance(now);
    let sum = 0;
    for (let i = d; i < this.#v.length; i += this.dims) sum += this.#v[i]!;
    return sum;
  }

  /** Is the window empty at `now` (nothing added in it)? */
  empty(now: number): boolean {
    return Math.floor(now / SLOT_MS) - this.#last >= WINDOW_SLOTS;
  }

  /**
   * How long from `now` until counter `d` falls to `target` or below, ms: the
   * slots leave oldest first, each at the end of its 61st second; 0 when
   * already there.
   */
  waitUntil(now: number, d: number, target: number): number {
    const head = this.#advance(now);
    let sum = this.sum(now, d);
    if (sum <= target) return 0;
    for (let slot = head - WINDOW_SLOTS + 1; slot <= head; slot++) {
      sum -= this.#v[at(slot) * this.dims + d]!;
      if (sum <= target) return Math.max(0, (slot + WINDOW_SLOTS) * SLOT_MS - now);
    }
    return (head + WINDOW_SLOTS) * SLOT_MS - now;
  }

  /** Moves the head to `now`'s slot, zeroing the slots it passes; returns the head. A clock that went back keeps the head. */
  #advance(now: number): number {
    const slot = Math.floor(now / SLOT_MS);
    if (slot <= this.#head) return this.#head;
    const from = this.#head === -Infinity ? slot - WINDOW_SLOTS : Math.max(this.#head, slot - WINDOW_SLOTS);
    for (let s = from + 1; s <= slot; s++) this.#v.fill(0, at(s) * this.dims, (at(s) + 1) * this.dims);
    this.#head = slot;
    return slot;
  }
}

const REQUESTS = 0;
const TOKENS = 1;

/** Requests and tokens admitted over the window. */
export class SlidingWindow {
  readonly #ring = new SlotRing(2);

  /** Adds an admission; returns its slot (absolute second) for a later `adjust`. */
  add(now: number, requests: number, tokens: number): number {
    return this.#ring.add(now, [requests, tokens]);
  }

  /** Corrects the tokens of `slot` by `delta` (a reservation replaced by what was used); nothing once the slot left the window. */
  adjust(slot: number, now: number, delta: number): void {
    this.#ring.adjust(slot, now, TOKENS, delta);
  }

  /** Requests and tokens in the window at `now`. */
  sum(now: number): Counts {
    return { requests: this.#ring.sum(now, REQUESTS), tokens: this.#ring.sum(now, TOKENS) };
  }

  /** Is the window empty at `now` (nothing admitted in it)? */
  empty(now: number): boolean {
    return this.#ring.empty(now);
  }

  /** How long from `now` until the window's requests or tokens fall to `target` or below, ms (SlotRing.waitUntil). */
  waitUntil(now: number, which: keyof Counts, target: number): number {
    return this.#ring.waitUntil(now, which === 'requests' ? REQUESTS : TOKENS, target);
  }
}
