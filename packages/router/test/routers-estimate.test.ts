/**
 * RoutersEstimate: the traffic ratio, and the routers heard on gossip that it
 * leans on before traffic has told it anything.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ROUTERS_ESTIMATE, ROUTERS_TAU_MS, RoutersEstimate } from '../src/core/routers-estimate.ts';

const TTL = 3_000;

/** Runs `ms` of placements every 10 ms with `published` / `own` in flight; the last estimate. */
function run(e: RoutersEstimate, from: number, ms: number, published: number, own: number): number {
  let n = 1;
  for (let t = from; t < from + ms; t += 10) n = e.update(published, own, t);
  return n;
}

describe('RoutersEstimate', () => {
  it('is exactly one for a router that hears no other, before and after traffic', () => {
    const e = new RoutersEstimate(TTL);
    expect(e.update(0, 0, 0)).toBe(1);
    expect(run(e, 0, 1_000, 3, 3)).toBe(1);
    expect(run(e, 1_000, 10_000, 5, 5)).toBe(1);
  });

  it('starts from the routers it hears, while the reports still lag its own requests', () => {
    const e = new RoutersEstimate(TTL);
    for (let i = 0; i < 15; i++) e.heard(`router-${i}`, 0);
    expect(e.update(0, 0, 0)).toBe(16);
    // Its first requests are in flight, the replicas have not reported them: the ratio alone would read 1.
    expect(run(e, 0, 100, 0, 2)).toBeGreaterThan(15);
  });

  it('gives way to the traffic ratio as its averages fill', () => {
    const e = new RoutersEstimate(10 * ROUTERS_TAU_MS);
    for (let i = 0; i < 15; i++) e.heard(`router-${i}`, 0);
    // Four routers share the clients: the fleet's in-flight work is four times this router's.
    const late = run(e, 0, 5 * ROUTERS_TAU_MS, 8, 2);
    expect(late).toBeGreaterThan(4);
    expect(late).toBeLessThan(4 + 0.01 * 12);
    // More routers' traffic than it hears: the ratio, never pulled down.
    const f = new RoutersEstimate(TTL);
    f.heard('router-0', 0);
    expect(run(f, 0, 100, 12, 2)).toBeCloseTo(6, 5);
  });

  it('forgets a router not heard within the TTL, and counts at most MAX_ROUTERS_ESTIMATE', () => {
    const e = new RoutersEstimate(TTL);
    e.heard('a', 0);
    e.heard('b', 0);
    expect(e.heardCount(0)).toBe(2);
    e.heard('b', 2_500);
    expect(e.heardCount(TTL + 1_000)).toBe(1);
    const many = new RoutersEstimate(TTL);
    for (let i = 0; i < 2 * MAX_ROUTERS_ESTIMATE; i++) many.heard(`r${i}`, 0);
    expect(many.heardCount(0)).toBe(MAX_ROUTERS_ESTIMATE);
    expect(many.update(0, 0, 0)).toBe(MAX_ROUTERS_ESTIMATE);
  });
});
