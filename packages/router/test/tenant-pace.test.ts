/**
 * Pacing within a per-minute limit (tenants/pace.ts): with `burstSeconds` a
 * tenant sending far over its limit is admitted evenly at its rate (a burst,
 * then one request per cost ÷ rate), never more than the window allows; its
 * router's rate follows its share of the tenant's admissions; without it the
 * window alone (a whole minute's limit at once).
 */
import { describe, expect, it } from 'vitest';
import { TenantLimiter } from '../src/tenants/limits.ts';
import { paceRate } from '../src/tenants/pace.ts';
import type { FleetShare, Tenant } from '../src/tenants/types.ts';

const tenant = (limits: Tenant['limits']): Tenant => ({
  name: 't',
  keys: ['k'],
  weight: 1,
  priorities: ['standard'],
  limits,
});

/** Offers one request of `cost` every `everyMs` for `forMs`; the admission times. */
function offer(l: TenantLimiter, t: Tenant, cost: number, everyMs: number, forMs: number): number[] {
  const at: number[] = [];
  for (let now = 0; now < forMs; now += everyMs) if (l.admit(t, cost, now).ok) at.push(now);
  return at;
}

describe('pacing', () => {
  it('admits a tenant offering 5× its limit evenly, at its rate, within the window', () => {
    // 600 tokens per minute = 10 per second; requests of 10 tokens offered 50 a second.
    const at = offer(new TenantLimiter(), tenant({ tokensPerMinute: 600, burstSeconds: 1 }), 10, 20, 180_000);
    // A burst of about one second's worth at the start, then one a second: never the whole minute at once.
    expect(at.filter((t) => t < 1_000).length).toBeLessThanOrEqual(3);
    // Then about one a second (the window's one-second slots hold one back now and then): 9–10 every 10 s.
    const inSpan = (from: number, ms: number) => at.filter((t) => t >= from && t < from + ms).length;
    for (let s = 10; s < 170; s += 10) expect([9, 10]).toContain(inSpan(s * 1_000, 10_000));
    for (let s = 5; s < 180; s++) expect(inSpan(s * 1_000, 1_000)).toBeLessThanOrEqual(1);
    // Over any 60 s: at most the limit.
    for (const from of at) expect(at.filter((t) => t >= from && t < from + 60_000).length).toBeLessThanOrEqual(60);
  });

  it('without burstSeconds the window alone: a whole minute admitted at once', () => {
    const at = offer(new TenantLimiter(), tenant({ tokensPerMinute: 600 }), 10, 20, 2_000);
    expect(at).toHaveLength(60);
    expect(at.at(-1)).toBeLessThan(1_200);
  });

  it("a router's rate is its share of the tenant's admissions, at least 1 ÷ the routers known", () => {
    expect(paceRate(60_000, 1, 0, 0, 4)).toBe(1); // no usage yet: the whole rate, per ms
    expect(paceRate(60_000, 1, 30, 90, 4)).toBeCloseTo(0.25);
    expect(paceRate(60_000, 1, 1, 99, 4)).toBeCloseTo(0.25); // floored at 1/4
    expect(paceRate(60_000, 0.5, 50, 50, 2)).toBeCloseTo(0.25); // cut off: the limit factor too
    const share: FleetShare = {
      others: () => ({ requests: 0, tokens: 1_800 }),
      limitFactor: () => 1,
      routers: () => ({ known: 3 }),
    };
    // Others admitted 3× this router's: it paces at a quarter of the rate once it has usage.
    const at = offer(new TenantLimiter(share), tenant({ tokensPerMinute: 2_400, burstSeconds: 1 }), 10, 10, 60_000);
    const late = at.filter((t) => t >= 30_000).length;
    expect(late).toBeGreaterThan(25);
    expect(late).toBeLessThan(45);
  });
});
