import { describe, expect, it } from 'vitest';
import { DES_ONLY_POLICIES, deploymentOf, FEEDS } from '../../src/des/feeds.ts';
import { runDes } from '../../src/des/run.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

const seed = SCENARIOS.seed!;

describe('policy deployments (des/feeds.ts)', () => {
  it('peers run without admission on their own feeds; @agents runs them behind Warmpath agents; warmpath-instant is warmpath on the true state', () => {
    expect(deploymentOf('warmpath')).toEqual({ routerPolicy: 'warmpath', feed: { kind: 'gossip' }, admission: true });
    expect(deploymentOf('oracle').routerPolicy).toBe('warmpath');
    expect(deploymentOf('warmpath-instant')).toEqual({
      routerPolicy: 'warmpath',
      feed: { kind: 'events', delayMs: 0 },
      admission: true,
    });
    expect(deploymentOf('llm-d-approx').feed).toEqual({ kind: 'poll', everyMs: 50, delayMs: 1 });
    expect(deploymentOf('dynamo-kv').admission).toBe(false);
    expect(deploymentOf('dynamo-kv@agents')).toEqual({
      routerPolicy: 'dynamo-kv',
      feed: { kind: 'gossip' },
      admission: true,
    });
    for (const p of Object.keys(FEEDS).filter((p) => p !== 'warmpath-instant'))
      expect(DES_ONLY_POLICIES).toContain(`${p}@agents`);
  });

  it('warmpath-instant is deterministic and sees fresher state than gossip (fewer stale choices on the same plan)', async () => {
    const plan = seed.build({ seed: 2, rate: 12, duration: 6, model: DEFAULT_MODEL });
    const run = () =>
      runDes({ scenario: seed, plan, policy: 'warmpath-instant', replicas: 3, routers: 2, durationS: 6 });
    const [a, b] = [await run(), await run()];
    expect(a.completed).toBe(plan.length);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(a.detail!.branches.warm ?? 0).toBeGreaterThan(0);
  });

  it('the oracle places through the routers (queue and retries included) with its own branch', async () => {
    const plan = seed.build({ seed: 2, rate: 12, duration: 6, model: DEFAULT_MODEL });
    const r = await runDes({ scenario: seed, plan, policy: 'oracle', replicas: 3, routers: 2, durationS: 6 });
    expect(r.routers).toBe(2);
    expect(r.completed).toBe(plan.length);
    expect(r.detail!.branches.oracle ?? 0).toBeGreaterThan(plan.length / 2);
  });

  it('a peer without admission sends everything to its engines (all answered, late), where behind the agents an overload is refused', async () => {
    const plan = seed.build({ seed: 2, rate: 150, duration: 3, model: DEFAULT_MODEL });
    const bare = await runDes({ scenario: seed, plan, policy: 'dynamo-kv', replicas: 1, routers: 1, durationS: 3 });
    const agents = await runDes({
      scenario: seed,
      plan,
      policy: 'dynamo-kv@agents',
      replicas: 1,
      routers: 1,
      durationS: 3,
    });
    expect(bare.errors).toBe(0);
    expect(agents.errors).toBeGreaterThan(0);
  });
});
