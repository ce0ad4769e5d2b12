import { describe, expect, it } from 'vitest';
import { mulberry32 } from '@warmpath/shared/runtime';
import { DEFAULT_GOSSIP, delayMedianMs, delaySampler, deliverySampler, validateGossip } from '../../src/des/gossip.ts';
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

  it('batch:W: the first hop at once, the others after its window edge, each in the order sent', () => {
    const w = 200;
    const routers = 4;
    const deliver = deliverySampler(`batch:${w}`, mulberry32(3), { length: routers });
    const sends = Array.from({ length: 400 }, (_, i) => i * 7); // a state every 7 ms, well inside a window
    for (const replica of ['r-1', 'r-2', 'r-3']) {
      const at = Array.from({ length: routers }, (_, router) => sends.map((t) => t + deliver(replica, router, t)));
      const first = at.findIndex((xs) => sends.every((t, i) => xs[i]! - t >= 2.5 && xs[i]! - t <= 10));
      expect(first, replica).toBeGreaterThanOrEqual(0); // exactly one router is its first hop: one hop's delay
      for (const [router, xs] of at.entries()) {
        for (let i = 1; i < xs.length; i++) expect(xs[i]!).toBeGreaterThanOrEqual(xs[i - 1]!); // no reordering
        if (router === first) continue;
        const delays = sends.map((t, i) => xs[i]! - t);
        expect(Math.min(...delays)).toBeGreaterThanOrEqual(2.5);
        expect(Math.max(...delays)).toBeLessThanOrEqual(2 * 10 + w);
        // States batched together: far fewer distinct arrival windows than states.
        expect(new Set(xs.map((x) => Math.floor(x / w))).size).toBeLessThan(sends.length / 10);
      }
    }
    const d = quantiles(`batch:${w}`);
    expect(Math.abs(delayMedianMs(`batch:${w}`) - d.p50) / d.p50).toBeLessThan(0.03);
  });

  it('bad specs are refused with what is acceptable', () => {
    expect(() => validateGossip({ delay: 'gamma:1:2', loss: 0 })).toThrow(
      /uniform:min:max, exp:base:mean, lognormal:p50:p99 or batch:window/,
    );
    expect(() => validateGossip({ delay: 'batch:0', loss: 0 })).toThrow(/one positive window/);
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

  it('batch:W in a run: the routers see it (another run than the default), every request answered, no chain broken, the same twice', async () => {
    const plan = seed.build({ seed: 2, rate: 12, duration: 6, model: DEFAULT_MODEL });
    const base = { scenario: seed, plan, policy: 'warmpath', replicas: 4, routers: 3, durationS: 6 };
    const gossip = { delay: 'batch:200', loss: 0 };
    const [batched, again, plain] = [
      await runDes({ ...base, gossip }),
      await runDes({ ...base, gossip }),
      await runDes(base),
    ];
    expect(JSON.stringify(again)).toBe(JSON.stringify(batched));
    expect(JSON.stringify(batched)).not.toBe(JSON.stringify(plain));
    expect(batched.completed).toBe(plan.length);
    expect(batched.detail!.gossip!.pulls).toBe(0);
  });
});
