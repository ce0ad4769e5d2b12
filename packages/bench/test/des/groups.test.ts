/**
 * Model groups in the DES (des/run.ts DesGroups): replicas split into
 * groups, routers serving some of them. A router of one group of ten holds
 * that tenth of the replicas, receives about a tenth of the state bytes a
 * router serving every group receives, and still serves its clients.
 */
import { describe, expect, it } from 'vitest';
import { runDes } from '../../src/des/run.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

const seed = SCENARIOS.seed!;

describe('DES: routers serving some model groups', () => {
  it('a router of one group of ten receives about a tenth of the bytes of one serving all, and completes its requests', async () => {
    const plan = seed.build({ seed: 2, rate: 10, duration: 6, model: DEFAULT_MODEL });
    const r = await runDes({
      scenario: seed,
      plan,
      policy: 'warmpath',
      replicas: 20,
      routers: 2,
      durationS: 6,
      groups: { count: 10, routers: [['*'], ['g3']] },
    });
    expect(r.completed).toBe(plan.length);
    const g = r.detail!.gossip!;
    expect(g.routerGroups).toEqual([['*'], ['g3']]);
    const [all, one] = g.receivedBytesPerRouterS!;
    expect(all).toBeGreaterThan(0);
    // About a tenth, not exactly: most messages are change-triggered, so a group's share of the bytes follows its share of the load.
    expect(one! / all!).toBeGreaterThan(0.05);
    expect(one! / all!).toBeLessThan(0.2);
  });
});
