/**
 * The saturation queue: bounded set of waiters woken (all at once, on the
 * next tick) by a fleet state update or one of this router's completions, or
 * by a short poll timer. Each woken waiter re-runs placement itself.
 * Complexity: O(waiters) per wake. Trade-off: waking everyone is a thundering
 * herd in principle, but placement is microseconds and the queue is bounded.
 */
export class WaitQueue {
  readonly max: number;
  readonly pollMs: number;
  readonly #waiters = new Set<() => void>();
  #scheduled = false;

  constructor(max: number, pollMs = 50) {
    this.max = max;
    this.pollMs = pollMs;
  }

  get length(): number {
    return this.#waiters.size;
  }

  /** Resolves true when woken (re-run placement), false when `ms` elapsed, the queue is full, or aborted. */
  wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.#waiters.size >= this.max || signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const finish = (v: boolean): void => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      };
      const wake = (): void => finish(true);
      const onAbort = (): void => finish(false);
      // Poll at least every pollMs: load decays on replicas even when no message arrives.
      const timer = setTimeout(() => finish(ms > this.pollMs), Math.min(ms, this.pollMs));
      this.#waiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  wake(): void {
    if (this.#waiters.size === 0 || this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      for (const w of [...this.#waiters]) w();
    });
  }
}
