import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventQueue } from '../../src/des/queue.ts';

describe('EventQueue', () => {
  it('runs events in (time, insertion) order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 }), (times) => {
        const q = new EventQueue();
        const seen: Array<[number, number]> = [];
        times.forEach((t, i) => q.at(t, () => seen.push([q.now, i])));
        q.run();
        const expected = times.map((t, i) => [t, i] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        expect(seen).toEqual(expected);
      }),
    );
  });

  it('lets events schedule more events and stops at `until`', () => {
    const q = new EventQueue();
    let n = 0;
    const tick = () => {
      n++;
      q.after(10, tick);
    };
    q.at(0, tick);
    q.run(95);
    expect(n).toBe(10);
    expect(q.now).toBe(90);
  });
});
