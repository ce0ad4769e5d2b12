/**
 * Time for the transport-free cores (router and agent): a reading of `now`
 * and one-shot timers. Live processes use `realClock`; the discrete-event
 * simulator passes its event queue, so the same core code runs in virtual time.
 */
export interface Clock {
  /** ms on this clock's own scale (wall or monotonic; virtual in the simulator). */
  now(): number;
  /** Runs `fn` once after `ms` (≤ 0: as soon as the current work is done); returns a cancel function. */
  schedule(ms: number, fn: () => void): () => void;
}

/** setTimeout / setImmediate timers that never keep a process alive on their own (servers and sockets do). */
export function realClock(now: () => number = Date.now): Clock {
  return {
    now,
    schedule(ms, fn) {
      if (ms <= 0) {
        const i = setImmediate(fn);
        i.unref();
        return () => clearImmediate(i);
      }
      const t = setTimeout(fn, ms);
      t.unref();
      return () => clearTimeout(t);
    },
  };
}
