/**
 * The fair queue (tenants/fair.ts) under saturation: capacity frees a little
 * at a time, each wake pass hands it out in the queue's order, and a waiter
 * that finds no room comes back, as the router core does it.
 */
import { manualClock } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { FairQueue, QUANTUM, type WaiterClass } from '../src/tenants/fair.ts';

interface W extends WaiterClass {
  readonly id: string;
}

/** A queue whose `room` tokens per pass go to the waiters woken first; the others come back. */
function saturated(max = 1_000) {
  const clock = manualClock();
  const served: W[] = [];
  const shed: W[] = [];
  let room = 0;
  const q: FairQueue<W> = new FairQueue<W>({
    max,
    pollMs: 50,
    clock,
    classOf: (w) => w,
    onWake: (w) => {
      if (w.cost <= room) {
        room -= w.cost;
        served.push(w);
      } else q.add(w, 60_000);
    },
    onShed: (w) => shed.push(w),
  });
  const pass = (tokens: number): void => {
    room = tokens;
    q.wake();
    clock.advance(0);
  };
  return { q, served, shed, pass };
}

const waiter = (id: string, tenant: string, o: Partial<WaiterClass> = {}): W => ({
  id,
  tenant,
  band: 1,
  weight: 1,
  cost: QUANTUM,
  ...o,
});

const count = (ws: W[], tenant: string): number => ws.filter((w) => w.tenant === tenant).length;

describe('fair queue', () => {
  it('shares a band between tenants by weight (deficit round robin)', () => {
    const { q, served, pass } = saturated();
    for (let i = 0; i < 60; i++) {
      q.add(waiter(`a${i}`, 'a', { weight: 1 }), 60_000);
      q.add(waiter(`b${i}`, 'b', { weight: 2 }), 60_000);
    }
    for (let i = 0; i < 30; i++) pass(QUANTUM); // one request's room per pass
    expect(count(served, 'a')).toBe(10);
    expect(count(served, 'b')).toBe(20);
    // Each tenant's own requests in arrival order.
    expect(served.filter((w) => w.tenant === 'a').map((w) => w.id)).toEqual([...Array(10).keys()].map((i) => `a${i}`));
  });

  it('shares by estimated tokens, not by requests', () => {
    const { q, served, pass } = saturated();
    for (let i = 0; i < 40; i++) {
      q.add(waiter(`big${i}`, 'big', { cost: 4 * QUANTUM }), 60_000);
      for (let k = 0; k < 4; k++) q.add(waiter(`small${i}.${k}`, 'small', { cost: QUANTUM }), 60_000);
    }
    for (let i = 0; i < 40; i++) pass(4 * QUANTUM);
    const tokens = (t: string): number => served.filter((w) => w.tenant === t).reduce((s, w) => s + w.cost, 0);
    expect(count(served, 'small')).toBeGreaterThan(3 * count(served, 'big'));
    expect(tokens('small') / tokens('big')).toBeGreaterThan(0.8);
    expect(tokens('small') / tokens('big')).toBeLessThan(1.25);
  });

  it('serves higher bands first, and stays work-conserving', () => {
    const { q, served, pass } = saturated();
    for (let i = 0; i < 5; i++) q.add(waiter(`batch${i}`, 'b', { band: 2 }), 60_000);
    for (let i = 0; i < 5; i++) q.add(waiter(`int${i}`, 'i', { band: 0, cost: 8 * QUANTUM }), 60_000);
    pass(8 * QUANTUM);
    expect(served.map((w) => w.id)).toEqual(['int0']);
    // Room for a batch request but not an interactive one: the batch one takes it rather than leave it idle.
    pass(QUANTUM);
    expect(served.map((w) => w.id)).toEqual(['int0', 'batch0']);
    for (let i = 0; i < 4; i++) pass(8 * QUANTUM);
    expect(served.slice(2).map((w) => w.id)).toEqual(['int1', 'int2', 'int3', 'int4']);
  });

  it('when full, sheds the newest waiter of the lowest band for a higher band, never the other way', () => {
    const { q, shed } = saturated(3);
    expect(q.add(waiter('s0', 's', { band: 1 }), 60_000)).toBe(true);
    expect(q.add(waiter('b0', 'b', { band: 2 }), 60_000)).toBe(true);
    expect(q.add(waiter('b1', 'b', { band: 2 }), 60_000)).toBe(true);
    expect(q.add(waiter('i0', 'i', { band: 0 }), 60_000)).toBe(true);
    expect(shed.map((w) => w.id)).toEqual(['b1']);
    expect(q.add(waiter('b2', 'b', { band: 2 }), 60_000)).toBe(false); // nothing lower to shed
    expect(q.add(waiter('s1', 's', { band: 1 }), 60_000)).toBe(true);
    expect(shed.map((w) => w.id)).toEqual(['b1', 'b0']);
    expect(q.add(waiter('s2', 's', { band: 1 }), 60_000)).toBe(false);
    expect(q.length).toBe(3);
  });

  it('wakes each waiter at its deadline, and polls while it holds waiters', () => {
    const clock = manualClock();
    const woken: string[] = [];
    const q = new FairQueue<W>({
      max: 10,
      pollMs: 50,
      clock,
      classOf: (w) => w,
      onWake: (w) => woken.push(w.id),
      onShed: () => {},
    });
    q.add(waiter('x', 'a'), 30);
    clock.advance(30);
    expect(woken).toEqual(['x']);
    expect(q.length).toBe(0);
    const y = waiter('y', 'a');
    q.add(y, 1_000);
    clock.advance(60); // the poll's pass wakes it
    expect(woken).toEqual(['x', 'y']);
    expect(q.remove(y)).toBe(false);
  });
});
