/**
 * UsageShare (tenants/share.ts): merging other routers' usage, stale and
 * reordered messages, the growth estimate between messages, expiry of silent
 * routers, the partition factor, and garbage dropped and counted.
 */
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { FORGET_MS, LIVE_MS, MAX_SHARED_TENANTS, UsageShare, type TenantUsage } from '../src/tenants/share.ts';

const LIMITED = new Set(['a', 'b', 'c']);

/** A share whose local usage is the map the test changes. */
function router(id: string, usage = new Map<string, TenantUsage>(), epoch = 1): UsageShare {
  return new UsageShare({ id, local: () => usage, limited: (t) => LIMITED.has(t), epoch });
}

describe('UsageShare', () => {
  it('sums what each other router last said, per tenant; a later message replaces the earlier one', () => {
    const usageB = new Map([['a', { requests: 10, tokens: 1_000 }]]);
    const usageC = new Map([
      ['a', { requests: 5, tokens: 500 }],
      ['b', { requests: 1, tokens: 7 }],
    ]);
    const a = router('A');
    const b = router('B', usageB);
    const c = router('C', usageC);
    expect(a.ingest(b.encode(0), 'B', 0)).toBe(true);
    expect(a.ingest(c.encode(0), 'C', 0)).toBe(true);
    expect(a.others('a', 0)).toEqual({ requests: 15, tokens: 1_500 });
    expect(a.others('b', 0)).toEqual({ requests: 1, tokens: 7 });
    expect(a.others('c', 0)).toEqual({ requests: 0, tokens: 0 });
    // B's usage fell (its window slid): the new message replaces the old; a tenant left out has none.
    usageB.set('a', { requests: 4, tokens: 400 });
    usageC.delete('b');
    a.ingest(b.encode(100), 'B', 100);
    a.ingest(c.encode(100), 'C', 100);
    expect(a.others('a', 100)).toEqual({ requests: 9, tokens: 900 });
    expect(a.others('b', 100)).toEqual({ requests: 0, tokens: 0 });
    expect(a.limitFactor(100)).toBe(1);
    expect(a.stats.accepted).toBe(4);
  });

  it('sends only tenants with a limit and some usage, at most MAX_SHARED_TENANTS of them, the largest first', () => {
    const many = new Map<string, TenantUsage>();
    for (let i = 0; i < MAX_SHARED_TENANTS + 10; i++) many.set(`t${i}`, { requests: 1, tokens: i });
    many.set('idle', { requests: 0, tokens: 0 });
    const seen: string[] = [];
    const b = new UsageShare({ id: 'B', local: () => many, limited: (t) => t !== 'idle' && t !== 't5000', epoch: 1 });
    const a = new UsageShare({
      id: 'A',
      local: () => [],
      limited: (t) => {
        seen.push(t);
        return true;
      },
    });
    const bytes = b.encode(0);
    expect(a.ingest(bytes, 'B', 0)).toBe(true);
    expect(seen).toHaveLength(MAX_SHARED_TENANTS);
    expect(seen).not.toContain('idle');
    expect(seen).not.toContain('t0');
    expect(seen).toContain(`t${MAX_SHARED_TENANTS + 9}`);
    expect(a.others('t5000', 0).tokens).toBe(0);
  });

  it('drops reordered and repeated messages as stale; a restart (later epoch) starts over', () => {
    const usage = new Map([['a', { requests: 1, tokens: 100 }]]);
    const b = router('B', usage, 5);
    const a = router('A');
    const first = b.encode(0);
    usage.set('a', { requests: 2, tokens: 200 });
    const second = b.encode(10);
    expect(a.ingest(second, 'B', 10)).toBe(true);
    expect(a.ingest(first, 'B', 11)).toBe(false);
    expect(a.ingest(second, 'B', 12)).toBe(false);
    expect(a.stats.stale).toBe(2);
    expect(a.others('a', 12).tokens).toBe(200);
    // B restarted: sequence 1 again, but a later epoch.
    const restarted = router('B', new Map([['a', { requests: 1, tokens: 50 }]]), 6);
    expect(a.ingest(restarted.encode(20), 'B', 20)).toBe(true);
    expect(a.others('a', 20).tokens).toBe(50);
  });

  it('counts growth between messages at the rate the last two showed, only upwards and for at most LIVE_MS', () => {
    const usage = new Map([['a', { requests: 10, tokens: 1_000 }]]);
    const b = router('B', usage);
    const a = router('A');
    a.ingest(b.encode(0), 'B', 0);
    usage.set('a', { requests: 20, tokens: 2_000 });
    a.ingest(b.encode(250), 'B', 250);
    // 1,000 tokens in 250 ms: 125 ms later, about 500 more are in flight unheard.
    expect(a.others('a', 375)).toEqual({ requests: 25, tokens: 2_500 });
    // Shrinking windows are not extrapolated downwards.
    usage.set('a', { requests: 5, tokens: 500 });
    a.ingest(b.encode(500), 'B', 500);
    expect(a.others('a', 600)).toEqual({ requests: 5, tokens: 500 });
    // Past LIVE_MS, B no longer counts at all.
    expect(a.others('a', 500 + LIVE_MS + 1)).toEqual({ requests: 0, tokens: 0 });
  });

  it('falls back to its 1/N share when cut off from every other router, and keeps it however long that lasts', () => {
    const a = router('A');
    const others = ['B', 'C', 'D'].map((id) => router(id, new Map([['a', { requests: 1, tokens: 10 }]])));
    expect(a.limitFactor(0)).toBe(1); // alone from the start: nobody to share with
    for (const o of others) a.ingest(o.encode(0), o.id, 0);
    expect(a.limitFactor(0)).toBe(1);
    expect(a.others('a', 0).tokens).toBe(30);
    // Only B still heard: A and B keep 2/4 of the limit between them; C and D's usage no longer counts.
    a.ingest(others[0]!.encode(LIVE_MS), 'B', LIVE_MS);
    expect(a.limitFactor(LIVE_MS + 500)).toBe(2 / 4);
    expect(a.others('a', LIVE_MS + 500).tokens).toBe(10);
    // Nobody heard, even far past FORGET_MS: 1/4, never more (a partition is not told from the others leaving).
    expect(a.limitFactor(2 * LIVE_MS + 1)).toBe(1 / 4);
    expect(a.limitFactor(10 * FORGET_MS)).toBe(1 / 4);
    expect(a.routers(10 * FORGET_MS)).toEqual({ known: 3, live: 0 });
    // B is heard again: C and D, silent past FORGET_MS while someone talks, have left.
    a.ingest(others[0]!.encode(10 * FORGET_MS), 'B', 10 * FORGET_MS);
    expect(a.routers(10 * FORGET_MS)).toEqual({ known: 1, live: 1 });
    expect(a.limitFactor(10 * FORGET_MS)).toBe(1);
    expect(a.stats.forgotten).toBe(2);
  });

  it('forgets a router at once on its bye, and a bye cannot be replayed to forget it again', () => {
    const b = router('B', new Map([['a', { requests: 1, tokens: 10 }]]));
    const c = router('C');
    const a = router('A');
    a.ingest(b.encode(0), 'B', 0);
    a.ingest(c.encode(0), 'C', 0);
    const bye = b.encode(10, true);
    expect(a.ingest(bye, 'B', 10)).toBe(true);
    expect(a.routers(10)).toEqual({ known: 1, live: 1 });
    expect(a.others('a', 10).tokens).toBe(0);
    expect(a.limitFactor(10)).toBe(1);
  });

  it('drops garbage and counts it: undecodable, malformed, out of bounds, or not from the router it names', () => {
    const packr = new Packr({ useRecords: false, moreTypes: false });
    const a = router('A');
    const good = { v: 1, r: 'B', e: 1, s: 1, u: ['a', 1, 10] };
    const bad: Uint8Array[] = [
      new Uint8Array([0xc1, 0xff, 0x00]),
      packr.pack('hello'),
      packr.pack(null),
      packr.pack({ ...good, v: 2 }),
      packr.pack({ ...good, r: '' }),
      packr.pack({ ...good, r: 'x'.repeat(300) }),
      packr.pack({ ...good, e: -1 }),
      packr.pack({ ...good, s: 1.5e400 }),
      packr.pack({ ...good, u: ['a', 1] }),
      packr.pack({ ...good, u: ['a', -1, 10] }),
      packr.pack({ ...good, u: ['a', 1, Number.NaN] }),
      packr.pack({ ...good, u: [7, 1, 10] }),
      packr.pack({ ...good, u: 'a' }),
      packr.pack({ ...good, bye: 'yes' }),
      packr.pack({ ...good, r: 'A' }), // our own id
    ];
    for (const bytes of bad) expect(a.ingest(bytes, undefined, 0)).toBe(false);
    // Signed by C, claiming to be B.
    expect(a.ingest(packr.pack(good), 'C', 0)).toBe(false);
    expect(a.stats.garbage).toBe(bad.length + 1);
    expect(a.routers(0)).toEqual({ known: 0, live: 0 });
    // The same message from its own author is taken; a tenant without a limit here is not kept.
    expect(a.ingest(packr.pack({ ...good, u: ['a', 1, 10, 'zz', 5, 5] }), 'B', 0)).toBe(true);
    expect(a.others('a', 0)).toEqual({ requests: 1, tokens: 10 });
    expect(a.others('zz', 0)).toEqual({ requests: 0, tokens: 0 });
  });
});
