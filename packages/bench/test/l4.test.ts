import { describe, expect, it } from 'vitest';
import { assignRouters } from '../src/l4.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../src/scenarios.ts';

const plan = () => SCENARIOS.chat!.build({ seed: 3, rate: 5, duration: 10, model: DEFAULT_MODEL });

describe('L4 assignment of requests to routers', () => {
  it('sticky keeps every session on one router; random spreads a session over several', () => {
    const sticky = assignRouters(plan(), 4, 'sticky', 1);
    const random = assignRouters(plan(), 4, 'random', 1);
    const routersOf = (p: typeof sticky) => {
      const m = new Map<string, Set<number>>();
      for (const r of p) (m.get(r.session!) ?? m.set(r.session!, new Set()).get(r.session!)!).add(r.target!);
      return [...m.values()];
    };
    expect(routersOf(sticky).every((s) => s.size === 1)).toBe(true);
    expect(routersOf(random).some((s) => s.size > 1)).toBe(true);
    // Both use every router.
    expect(new Set(sticky.map((r) => r.target)).size).toBe(4);
    expect(new Set(random.map((r) => r.target)).size).toBe(4);
  });

  it('is deterministic for a seed, different across seeds', () => {
    const a = assignRouters(plan(), 3, 'random', 7).map((r) => r.target);
    expect(assignRouters(plan(), 3, 'random', 7).map((r) => r.target)).toEqual(a);
    expect(assignRouters(plan(), 3, 'random', 8).map((r) => r.target)).not.toEqual(a);
  });

  it('chat requests carry the session header', () => {
    const p = plan();
    expect(p.every((r) => r.session !== undefined && r.headers?.['x-session-id'] === r.session)).toBe(true);
  });
});
