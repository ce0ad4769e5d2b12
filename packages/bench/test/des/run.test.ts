import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';
import { runDes } from '../../src/des/run.ts';

const seed = SCENARIOS.seed!;

describe('discrete-event fleet simulator', () => {
  it('accounts for every request and reuses the real placement (warmpath sends sessions to warm replicas)', async () => {
    const plan = seed.build({ seed: 3, rate: 10, duration: 6, model: DEFAULT_MODEL });
    const r = await runDes({ scenario: seed, plan, policy: 'warmpath', replicas: 3, routers: 2, durationS: 6 });
    expect(r.requests).toBe(plan.length);
    expect(r.completed + r.errors).toBe(plan.length);
    expect(r.completed).toBeGreaterThan(plan.length * 0.9);
    expect(r.detail!.branches.warm ?? 0).toBeGreaterThan(0);
    expect(r.cache_hit_rate).toBeGreaterThan(0.3);
  });

  it('crosses idle gaps longer than its time slice (one router, three requests minutes apart)', async () => {
    const body = { model: DEFAULT_MODEL, messages: [{ role: 'user', content: 'hello '.repeat(100) }], max_tokens: 4 };
    const plan = [0, 5_000, 60_000].map((at) => ({ at, body }));
    const r = await runDes({ scenario: seed, plan, policy: 'oracle', replicas: 2, routers: 1, durationS: 60 });
    expect(r.completed).toBe(3);
  });
});
