import { describe, expect, it } from 'vitest';
import { mulberry32 } from '@warmpath/shared/runtime';
import { DEFAULT_GOSSIP, delayMedianMs, delaySampler, validateGossip } from '../../src/des/gossip.ts';
import { runDes } from '../../src/des/run.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

const seed = SCENARIOS.seed!;

function quantiles(spec: string, n = 20_000): { p50: number; p99: number; min: number; mean: number } {
  const draw = delaySampler(spec, mulberry32(7));
  const xs = Array.from({ length: n }, draw).sort((a, b) => a - b);
  return {
    p50: xs[Math.floor(n / 2)]!,
    p99: xs[Math.floor(n * 0.99)]!,
    min: xs[0]!,
    mean: xs.reduce((a, b) => a + b, 0) / n,
  };
}

describe('DES gossip model (des/gossip.ts)', () => {
  it('each distribution has the shape its spec names', () => {
    const u = quantiles('uniform:5:20');
    expect(u.min).toBeGreaterThanOrEqual(5);
    expect(u.p99).toBeLessThan(20);
    const e = quantiles('exp:50:250');
    expect(e.min).toBeGreaterThanOrEqual(50);
    expect(e.mean).toBeGreaterThan(230);
    expect(e.mean).toBeLessThan(270);
    const l = quantiles('lognormal:500:1500');
    expect(l.p50).toBeGreaterThan(470);
    expect(l.p50).toBeLessThan(530);
    expect(l.p99).toBeGreaterThan(1350);
    expect(l.p99).toBeLessThan(1650);
  });

  it("delayMedianMs is each distribution's median, as drawn", () => {
    for (const spec of ['uniform:5:20', 'exp:50:250', 'lognormal:500:1500']) {
      const drawn = quantiles(spec).p50;
      expect(Math.abs(delayMedianMs(spec) - drawn) / drawn, spec).toBeLessThan(0.03);
    }
    expect(() => delayMedianMs('gamma:1:2')).toThrow(/unknown distribution/);
  });

  it('bad specs are refused with what is acceptable', () => {
    expect(() => validateGossip({ delay: 'gamma:1:2', loss: 0 })).toThrow(
      /uniform:min:max, exp:base:mean or lognormal:p50:p99/,
    );
    expect(() => validateGossip({ delay: 'uniform:20:5', loss: 0 })).toThrow(/max below min/);
    expect(() => validateGossip({ delay: 'lognormal:0:10', loss: 0 })).toThrow(/0 < p50/);
    expect(() => validateGossip({ delay: 'uniform:5', loss: 0 })).toThrow(/two non-negative numbers/);
    expect(() => validateGossip({ delay: 'uniform:5:20', loss: 1 })).toThrow(/probability/);
  });

  it('the default model is the run without one (same stream, same result); loss makes routers pull snapshots and loses no request', async () => {
    const plan = seed.build({ seed: 2, rate: 12, duration: 6, model: DEFAULT_MODEL });
    const base = { scenario: seed, plan, policy: 'warmpath', replicas: 3, routers: 2, durationS: 6 };
    const [plain, explicit] = [await runDes(base), await runDes({ ...base, gossip: DEFAULT_GOSSIP })];
    expect(JSON.stringify(explicit)).toBe(JSON.stringify(plain));
    const lossy = await runDes({ ...base, gossip: { delay: 'lognormal:200:600', loss: 0.3 } });
    expect(lossy.completed).toBe(plan.length);
    expect(lossy.detail!.gossip!.pulls).toBeGreaterThan(plain.detail!.gossip!.pulls);
    expect(lossy.detail!.gossip!.viewHashes).toBeGreaterThan(0);
  });
});
