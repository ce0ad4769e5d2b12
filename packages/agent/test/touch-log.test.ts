import { describe, expect, it } from 'vitest';
import { TouchLog } from '../src/touch-log.ts';

describe('TouchLog', () => {
  it('maps a stamp to the time of the note that covers it', () => {
    const log = new TouchLog();
    log.note(3, 100); // stamps 1–3 at 100 ms
    log.note(5, 200); // 4–5 at 200 ms
    expect(log.timeOf(1)).toBe(100);
    expect(log.timeOf(3)).toBe(100);
    expect(log.timeOf(4)).toBe(200);
    expect(log.timeOf(6)).toBeUndefined();
  });
  it('drops what no cached stamp needs, and past its cap the older half, reading younger, never older', () => {
    const log = new TouchLog(8);
    for (let s = 1; s <= 6; s++) log.note(s, s * 10);
    log.prune(4); // stamps below 4 are gone from the cache
    expect(log.size).toBe(3);
    expect(log.timeOf(5)).toBe(50);
    for (let s = 7; s <= 20; s++) {
      log.note(s, s * 10);
      log.prune(4); // stamp 4 stays cached: only the cap bounds the log
    }
    expect(log.size).toBeLessThanOrEqual(8);
    const t = log.timeOf(4)!;
    expect(t).toBeGreaterThan(40); // the oldest time kept, later than 4's own
    expect(t).toBeLessThanOrEqual(200);
    log.clear();
    expect(log.size).toBe(0);
  });
});
