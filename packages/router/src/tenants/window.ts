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
 * Memory: two Float64Arrays of 61 slots, about 1 KB per tenant, allocated
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

export class SlidingWindow {
  readonly #requests = new Float64Array(WINDOW_SLOTS);
  readonly #tokens = new Float64Array(WINDOW_SLOTS);
  /** The newest slot written or cleared (absolute second); every older slot in the ring is from before it. */
  #head = -Infinity;
  /** The newest slot anything was added to. */
  #last = -Infinity;

  /** Adds an admission; returns its slot (absolute second) for a later `adjust`. */
  add(now: number, requests: number, tokens: number): number {
    const slot = this.#advance(now);
    const i = at(slot);
    this.#last = slot;
    this.#requests[i]! += requests;
    this.#tokens[i]! += tokens;
    return slot;
  }

  /** Corrects the tokens of `slot` by `delta` (a reservation replaced by what was used); nothing once the slot left the window. */
  adjust(slot: number, now: number, delta: number): void {
    const head = this.#advance(now);
    if (slot <= head - WINDOW_SLOTS || slot > head) return;
    const i = at(slot);
    this.#tokens[i] = Math.max(0, this.#tokens[i]! + delta);
  }

  /** Requests and tokens in the window at `now`. */
  sum(now: number): Counts {
    this.#advance(now);
    let requests = 0;
    let tokens = 0;
    for (let i = 0; i < WINDOW_SLOTS; i++) {
      requests += this.#requests[i]!;
      tokens += this.#tokens[i]!;
    }
    return { requests, tokens };
  }

  /** Is the window empty at `now` (nothing admitted in it)? */
  empty(now: number): boolean {
    return Math.floor(now / SLOT_MS) - this.#last >= WINDOW_SLOTS;
  }

  /**
   * How long from `now` until the window's requests (`which` = 'requests') or
   * tokens fall to `target` or below, ms: the slots leave oldest first, each
   * at the end of its 61st second. 0 when already there.
   */
  waitUntil(now: number, which: keyof Counts, target: number): number {
    const head = this.#advance(now);
    const series = which === 'requests' ? this.#requests : this.#tokens;
    let sum = 0;
    for (let i = 0; i < WINDOW_SLOTS; i++) sum += series[i]!;
    if (sum <= target) return 0;
    for (let slot = head - WINDOW_SLOTS + 1; slot <= head; slot++) {
      sum -= series[at(slot)]!;
      if (sum <= target) return Math.max(0, (slot + WINDOW_SLOTS) * SLOT_MS - now);
    }
    return (head + WINDOW_SLOTS) * SLOT_MS - now;
  }

  /** Moves the head to `now`'s slot, zeroing the slots it passes; returns the head. A clock that went back keeps the head. */
  #advance(now: number): number {
    const slot = Math.floor(now / SLOT_MS);
    if (slot <= this.#head) return this.#head;
    const from = this.#head === -Infinity ? slot - WINDOW_SLOTS : Math.max(this.#head, slot - WINDOW_SLOTS);
    for (let s = from + 1; s <= slot; s++) {
      const i = at(s);
      this.#requests[i] = 0;
      this.#tokens[i] = 0;
    }
    this.#head = slot;
    return slot;
  }
}
