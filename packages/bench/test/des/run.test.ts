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

  it("reports how long the engines' evicted KV blocks had sat unused, once they evict", async () => {
    // 30 distinct 20k-token prompts, 2 s apart, on one replica of 461k tokens of KV: the later ones evict the earlier.
    const plan = Array.from({ length: 30 }, (_, i) => ({
      at: i * 2_000,
      body: {
        model: DEFAULT_MODEL,
        messages: [{ role: 'user', content: `${i} `.repeat(40_000 / String(i).length) }],
        max_tokens: 1,
      },
    }));
    const r = await runDes({ scenario: seed, plan, policy: 'round-robin', replicas: 1, routers: 1, durationS: 70 });
    expect(r.completed).toBe(30);
    const age = r.detail!.kvEvictionAgeS;
    expect(age).toBeGreaterThan(10);
    expect(age).toBeLessThan(70);
    // Without evictions there is no age to report.
    const small = await runDes({
      scenario: seed,
      plan: plan.slice(0, 2),
      policy: 'round-robin',
      replicas: 1,
      routers: 1,
      durationS: 10,
    });
    expect(small.detail!.kvEvictionAgeS).toBeUndefined();
  });

  it('crosses idle gaps longer than its time slice (one router, three requests minutes apart)', async () => {
    const body = { model: DEFAULT_MODEL, messages: [{ role: 'user', content: 'hello '.repeat(100) }], max_tokens: 4 };
    const plan = [0, 5_000, 60_000].map((at) => ({ at, body }));
    const r = await runDes({ scenario: seed, plan, policy: 'oracle', replicas: 2, routers: 1, durationS: 60 });
    expect(r.completed).toBe(3);
  });
});
