/**
 * Event queue of the discrete-event simulator: a binary min-heap on
 * (time, insertion order), so events at equal times run in the order they were
 * scheduled and a run is deterministic. A cancelled event stays in the heap
 * and does nothing when its time comes.
 * Complexity: O(log n) push and pop, O(1) cancel.
 */
import type { Clock } from '@warmpath/shared/runtime';

const NOTHING = (): void => {};

export interface SimEvent {
  at: number;
  seq: number;
  run: () => void;
}

export class EventQueue {
  #heap: SimEvent[] = [];
  #seq = 0;
  now = 0;

  get size(): number {
    return this.#heap.length;
  }

  /** Time of the next event (Infinity when empty). */
  get nextAt(): number {
    return this.#heap[0]?.at ?? Number.POSITIVE_INFINITY;
  }

  /** Schedules `run` at absolute virtual time `at` (never in the past). */
  at(at: number, run: () => void): SimEvent {
    if (Number.isNaN(at)) throw new Error('event scheduled at NaN: a bug in the caller');
    const e = { at: Math.max(at, this.now), seq: this.#seq++, run };
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p]!, e)) break;
      h[i] = h[p]!;
      i = p;
    }
    h[i] = e;
    return e;
  }

  after(delayMs: number, run: () => void): SimEvent {
    return this.at(this.now + delayMs, run);
  }

  cancel(e: SimEvent): void {
    e.run = NOTHING;
  }

  /** This queue as the cores' clock: virtual now, events as timers. */
  clock(): Clock {
    return {
      now: () => this.now,
      schedule: (ms, fn) => {
        const e = this.after(ms, fn);
        return () => this.cancel(e);
      },
    };
  }

  #pop(): SimEvent | undefined {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined || h.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      let best = last;
      if (l < h.length && less(h[l]!, best)) {
        m = l;
        best = h[l]!;
      }
      if (r < h.length && less(h[r]!, best)) m = r;
      if (m === i) break;
      h[i] = h[m]!;
      i = m;
    }
    h[i] = last;
    return top;
  }

  /** Runs events in time order until the queue is empty or `until` is passed. */
  run(until = Number.POSITIVE_INFINITY): void {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || top.at > until) return;
      this.#pop();
      this.now = top.at;
      top.run();
    }
  }
}

const less = (a: SimEvent, b: SimEvent) => a.at < b.at || (a.at === b.at && a.seq < b.seq);
