/**
 * The router queue: requests that found no room wait here, at most `max` of
 * them, until a fleet state update or one of this router's own completions
 * wakes them all, or their poll timer fires (load decays on replicas even
 * when no message arrives). Each woken request runs placement again itself.
 *
 * Steps: add(w, ms) arms a timer of min(ms, pollMs) → wake() coalesces every
 * wake of one instant into one scheduled pass over the waiters, in arrival
 * order → a woken or timed-out waiter leaves the queue before `onWake` runs.
 * Complexity: O(1) add/remove, O(waiters) per wake.
 * Trade-off: waking everyone is a thundering herd in principle, but placement
 * is microseconds and the queue is bounded.
 */
import type { Clock } from './types.ts';

/** What the core asks of its queue: this one, or tenants/fair.ts's with a tenants file. */
export interface Waiting<W> {
  readonly length: number;
  add(w: W, ms: number): boolean;
  remove(w: W): boolean;
  wake(): void;
}

export class WaitQueue<W> implements Waiting<W> {
  readonly #max: number;
  readonly #pollMs: number;
  readonly #clock: Clock;
  readonly #onWake: (w: W) => void;
  /** waiter → cancel of its poll timer; Map order = arrival order. */
  readonly #waiters = new Map<W, () => void>();
  #scheduled = false;

  constructor(max: number, pollMs: number, clock: Clock, onWake: (w: W) => void) {
    this.#max = max;
    this.#pollMs = pollMs;
    this.#clock = clock;
    this.#onWake = onWake;
  }

  get length(): number {
    return this.#waiters.size;
  }

  /** Waits `w` for at most `ms` (polling every pollMs); false when the queue is full. */
  add(w: W, ms: number): boolean {
    if (this.#waiters.size >= this.#max) return false;
    const cancel = this.#clock.schedule(Math.min(ms, this.#pollMs), () => {
      if (this.#waiters.delete(w)) this.#onWake(w);
    });
    this.#waiters.set(w, cancel);
    return true;
  }

  /** Takes `w` out of the queue; false when it was not waiting. */
  remove(w: W): boolean {
    const cancel = this.#waiters.get(w);
    if (cancel === undefined) return false;
    cancel();
    this.#waiters.delete(w);
    return true;
  }

  /** Wake every waiter, once per instant however often called. */
  wake(): void {
    if (this.#waiters.size === 0 || this.#scheduled) return;
    this.#scheduled = true;
    this.#clock.schedule(0, () => {
      this.#scheduled = false;
      const woken = [...this.#waiters];
      this.#waiters.clear();
      for (const [w, cancel] of woken) {
        cancel();
        this.#onWake(w);
      }
    });
  }
}
