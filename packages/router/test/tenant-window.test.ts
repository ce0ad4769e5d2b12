import { describe, expect, it } from 'vitest';
import { SLOT_MS, SlidingWindow, WINDOW_MS } from '../src/tenants/window.ts';

/** Largest count admitted in any 60 s interval, from a sorted list of admission times. */
function worstInterval(times: number[]): number {
  let worst = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while (times[hi]! - times[lo]! >= WINDOW_MS) lo++;
    worst = Math.max(worst, hi - lo + 1);
  }
  return worst;
}

describe('sliding window', () => {
  it('holds the limit over any 60 s, a burst at the window edge included', () => {
    const limit = 100;
    const w = new SlidingWindow();
    const admitted: number[] = [];
    const offer = (t: number): void => {
      if (w.sum(t).requests + 1 <= limit) {
        w.add(t, 1, 0);
        admitted.push(t);
      }
    };
    // A burst at the very end of a slot, then offers every 10 ms for three minutes.
    for (let i = 0; i < 200; i++) offer(999);
    for (let t = 1_000; t < 180_000; t += 10) for (let i = 0; i < 3; i++) offer(t);
    expect(admitted.length).toBeGreaterThan(2 * limit); // it keeps admitting as the window moves
    expect(worstInterval(admitted)).toBeLessThanOrEqual(limit);
  });

  it('frees the window after 60 to 61 s, and says when', () => {
    const w = new SlidingWindow();
    w.add(500, 1, 40);
    w.add(30_500, 1, 60);
    expect(w.sum(30_600)).toEqual({ requests: 2, tokens: 100 });
    // The first slot [0, 1 s) leaves at 61 s.
    expect(w.waitUntil(30_600, 'tokens', 60)).toBe(61_000 - 30_600);
    expect(w.sum(60_999).tokens).toBe(100);
    expect(w.sum(61_000).tokens).toBe(60);
    expect(w.waitUntil(61_000, 'requests', 0)).toBe(91_000 - 61_000);
    expect(w.empty(90_999)).toBe(false);
    expect(w.empty(91_000)).toBe(true);
    expect(w.sum(200_000)).toEqual({ requests: 0, tokens: 0 });
  });

  it('corrects a reservation in its own slot, and not once it left', () => {
    const w = new SlidingWindow();
    const slot = w.add(2_000, 1, 1_000);
    w.add(5_000, 1, 10);
    w.adjust(slot, 9_000, -700);
    expect(w.sum(9_000).tokens).toBe(310);
    w.adjust(slot, 2_000 + WINDOW_MS + 2 * SLOT_MS, +500);
    expect(w.sum(2_000 + WINDOW_MS + 2 * SLOT_MS).tokens).toBe(10);
  });
});
