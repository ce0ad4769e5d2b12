/** Per-tenant admission: the fleet's share, the headers, the reservation, OpenAI's duration format. */
import { describe, expect, it } from 'vitest';
import { formatDuration, TenantLimiter } from '../src/tenants/limits.ts';
import type { FleetShare, Tenant } from '../src/tenants/types.ts';

const tenant = (limits: Tenant['limits']): Tenant => ({
  name: 't',
  keys: ['k'],
  weight: 1,
  priorities: ['standard'],
  limits,
});

describe('tenant limiter', () => {
  it('admits while local + others + cost ≤ limit × the limit factor', () => {
    let factor = 1;
    const share: FleetShare = {
      others: (name) => (name === 't' ? { requests: 6, tokens: 600 } : { requests: 0, tokens: 0 }),
      limitFactor: () => factor,
    };
    const l = new TenantLimiter(share);
    const t = tenant({ requestsPerMinute: 10, tokensPerMinute: 1_000 });
    const admitted = (cost: number): boolean => l.admit(t, cost, 1_000).ok;
    expect(admitted(100)).toBe(true);
    expect(admitted(100)).toBe(true);
    expect(admitted(300)).toBe(false); // 600 + 200 + 300 > 1000
    expect(admitted(200)).toBe(true); // = 1000
    const refused = l.admit(t, 1, 1_000);
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.limit).toBe('tokens');
    expect(refused.headers['x-ratelimit-remaining-tokens']).toBe('0');
    expect(refused.headers['x-ratelimit-remaining-requests']).toBe('1');
    // Cut off from the other routers: its 1/N of the limit.
    factor = 0.5;
    expect(l.admit(tenant({ requestsPerMinute: 10 }), 0, 1_000).ok).toBe(false); // 3 + 6 + 1 > 5
    expect([...l.localUsage(1_000)]).toEqual([['t', { requests: 3, tokens: 400 }]]);
  });

  it('settles a reservation with the engine count, in the slot it was made in', () => {
    const l = new TenantLimiter();
    const t = tenant({ tokensPerMinute: 1_000 });
    const a = l.admit(t, 900, 1_000);
    expect(a.ok).toBe(true);
    expect(l.admit(t, 200, 2_000).ok).toBe(false);
    if (a.ok) l.settle(a.ticket, 150, 3_000);
    const b = l.admit(t, 200, 3_000);
    expect(b.ok && b.headers['x-ratelimit-remaining-tokens']).toBe('650');
    expect(b.ok && b.headers['x-ratelimit-reset-tokens']).toBe('1m1s'); // the newest slot [3 s, 4 s) leaves at 64 s
    // The slot of the first left the window: its 150 no longer count.
    const c = l.admit(t, 0, 62_000);
    expect(c.ok && c.headers['x-ratelimit-remaining-tokens']).toBe('800');
  });

  it("formats durations as OpenAI's headers do", () => {
    expect(formatDuration(20)).toBe('20ms');
    expect(formatDuration(1_000)).toBe('1s');
    expect(formatDuration(1_500)).toBe('1.5s');
    expect(formatDuration(360_000)).toBe('6m0s');
    expect(formatDuration(3_723_000)).toBe('1h2m3s');
  });
});
