/**
 * The global limit in virtual time (des/limits.ts) and how it is measured
 * (tenant-figures.ts): the tenants scenario's plan carries each tenant's key
 * and band; admitted tokens per minute are read per 60 s window; routers that
 * share usage over the gossip model hold the flood near its limit, routers
 * that do not each admit the whole limit, and a router cut off falls back to
 * its share.
 */
import { describe, expect, it } from 'vitest';
import { runLimits } from '../../src/des/limits.ts';
import { assignRouters } from '../../src/l4.ts';
import { limitHeld, tenantRows, admissionsOf } from '../../src/tenant-figures.ts';
import { floodTokensPerMinute, tenantsFile, tenantsPlan } from '../../src/tenants-plan.ts';
import type { RequestResult } from '../../src/loadgen.ts';

const RATE = 4;
const DURATION = 90;
const flood = (routers: number) =>
  assignRouters(tenantsPlan({ seed: 1, rate: RATE, duration: DURATION, model: 'm' }, ['flood']), routers, 'random', 1);
const file = JSON.stringify(tenantsFile({ rate: RATE }));
const held = (results: RequestResult[]) =>
  limitHeld(admissionsOf(results, 'flood'), floodTokensPerMinute(RATE), DURATION);

describe('the tenants plan', () => {
  it("carries each tenant's key and band, and the flood sends five times its share", () => {
    const plan = tenantsPlan({ seed: 1, rate: RATE, duration: 60, model: 'm' });
    const count = (t: string) => plan.filter((p) => p.tag === t).length;
    expect(plan.find((p) => p.tag === 'chat-a')?.headers).toMatchObject({
      authorization: 'Bearer sk-chat-a',
      'x-warmpath-priority': 'interactive',
    });
    expect(plan.find((p) => p.tag === 'batch')?.headers?.['x-warmpath-priority']).toBe('batch');
    expect(count('flood') / 60).toBeGreaterThan(4.5 * RATE);
    expect(count('flood') / 60).toBeLessThan(5.5 * RATE);
    expect(plan.every((p, i) => i === 0 || plan[i - 1]!.at <= p.at)).toBe(true);
  });
});

describe('limitHeld and tenantRows', () => {
  it('reads admitted tokens per 60 s window against the limit, from the end of the first minute', () => {
    const admissions = Array.from({ length: 120 }, (_, s) => ({ at: s * 1000 + 500, tokens: s < 60 ? 1000 : 2000 }));
    const h = limitHeld(admissions, 60_000, 120);
    expect(h.windows).toBe(61);
    expect(h.min).toBe(1);
    expect(h.max).toBeCloseTo(119 / 60 + 1 / 60, 4);
  });

  it('counts limit refusals apart from other failures, and TTFT over answered requests', () => {
    const r = (tag: string, over: Partial<RequestResult>): RequestResult => ({
      tag,
      target: 0,
      ok: true,
      status: 200,
      error: undefined,
      ttftMs: 10,
      e2eMs: 20,
      itlMs: [],
      promptTokens: 100,
      cachedTokens: 0,
      outputTokens: 50,
      replica: undefined,
      route: undefined,
      sentAt: 0,
      ...over,
    });
    const rows = tenantRows(
      [
        r('a', { ttftMs: 30 }),
        r('a', {}),
        r('a', { ok: false, status: 429, error: 'rate_limit_exceeded', ttftMs: Number.NaN }),
        r('a', { ok: false, status: 429, error: 'fleet_saturated', ttftMs: Number.NaN }),
      ],
      10,
    );
    expect(rows).toEqual([
      {
        tenant: 'a',
        requests: 4,
        ttftP50Ms: 10,
        ttftP99Ms: 30,
        admitted: 3,
        refused: 1,
        failed: 1,
        completedTokensPerS: 30,
      },
    ]);
  });
});

describe('runLimits', () => {
  it('holds the flood near its limit through 4 routers that share usage; alone, each admits the whole limit', () => {
    const shared = held(runLimits({ plan: flood(4), routers: 4, file, shared: true, seed: 1 }));
    expect(shared.mean).toBeGreaterThan(0.95);
    expect(shared.mean).toBeLessThan(1.05);
    expect(shared.max).toBeLessThan(1.03);
    const alone = held(runLimits({ plan: flood(4), routers: 4, file, shared: false, seed: 1 }));
    expect(alone.mean).toBeGreaterThan(3.5);
  });

  it('a router cut off from the others falls back to its share: the fleet stays near the limit', () => {
    const cut = held(
      runLimits({ plan: flood(4), routers: 4, file, shared: true, seed: 1, partition: { router: 0, fromMs: 30_000 } }),
    );
    expect(cut.mean).toBeGreaterThan(0.9);
    expect(cut.max).toBeLessThan(1.05);
  });
});
