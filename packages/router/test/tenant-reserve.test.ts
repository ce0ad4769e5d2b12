/**
 * The interactive reserve (docs/TENANTS.md, "Interactive reserve"): which
 * replicas are set apart (placement/reserve.ts), when the split holds and
 * when it is lent (tenants/split.ts), the file's `reserve`, and the router
 * core placing each band on its side.
 */
import { HashRing } from '@warmpath/shared/wire';
import { manualClock } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { routerConfig } from '../src/config.ts';
import { RouterCore } from '../src/core/router-core.ts';
import type { Dispatch, SendResult } from '../src/core/types.ts';
import { reservedCount, reservedSlots } from '../src/placement/reserve.ts';
import { parseTenants, TenantFileError } from '../src/tenants/file.ts';
import { BandSplit, leavesSide } from '../src/tenants/split.ts';
import { Tenancy } from '../src/tenants/tenancy.ts';
import { chat, makeState } from './helpers.ts';

const TENANTS = [
  { name: 'chat', keys: ['k1'], priorities: ['interactive'] },
  { name: 'evals', keys: ['k2'], priorities: ['batch'] },
];
const IDS = ['a', 'b', 'c', 'd'];

describe('the reserved replicas', () => {
  it('sets apart round(share × members), keeping one replica on each side', () => {
    expect([1, 2, 3, 4, 10].map((n) => reservedCount(0.5, n))).toEqual([0, 1, 2, 2, 5]);
    expect(reservedCount(0.01, 4)).toBe(1);
    expect(reservedCount(0.99, 4)).toBe(3);
    expect(reservedCount(0, 4)).toBe(0);
  });

  it('names the same replicas from any ring of the same members, and moves few when one joins', () => {
    const ring = (ids: string[]) => new HashRing(ids.map((id) => ({ id, weight: 1 })));
    const slotsOf = (r: HashRing) => Int32Array.from(r.members, (m) => IDS.indexOf(m.id) + (m.id === 'e' ? 5 : 0));
    const one = ring(IDS);
    const two = ring([...IDS].reverse());
    const a = reservedSlots(one, slotsOf(one), 0.5)!;
    expect(a.size).toBe(2);
    expect([...reservedSlots(two, slotsOf(two), 0.5)!].sort()).toEqual([...a].sort());
    expect(reservedSlots(ring(['a']), Int32Array.of(0), 0.5)).toBeUndefined();
    const grown = ring([...IDS, 'e']);
    const b = reservedSlots(grown, slotsOf(grown), 0.5)!;
    expect(b.size).toBe(3); // round(2.5)
    expect([...a].filter((s) => b.has(s)).length).toBeGreaterThanOrEqual(1);
  });
});

describe('the split', () => {
  const reserve = { interactive: 0.5, lendAfterSeconds: 10 };

  it('holds while both sides have work, and is lent once either is idle', () => {
    const s = new BandSplit();
    expect(s.sideOf(reserve, 'interactive', 0)).toBeUndefined();
    s.note('interactive', 0);
    expect(s.sideOf(reserve, 'batch', 0)).toBeUndefined(); // no lower band yet: the rest is the interactive band's too
    s.note('standard', 1_000);
    expect(s.sideOf(reserve, 'interactive', 1_000)).toEqual({ share: 0.5, side: 'reserved' });
    expect(s.sideOf(reserve, 'batch', 1_000)).toEqual({ share: 0.5, side: 'rest' });
    expect(s.sideOf(reserve, 'batch', 10_000)?.side).toBe('rest');
    expect(s.sideOf(reserve, 'batch', 10_001)).toBeUndefined(); // no interactive for 10 s: the reserve is lent
    expect(s.sideOf(undefined, 'batch', 1_000)).toBeUndefined();
    expect(s.sideOf(reserve, undefined, 1_000)).toBeUndefined();
  });

  it('places again on the whole group only an interactive request with no room', () => {
    const none = (branch: 'saturated' | 'no-replica') => ({ replica: undefined, branch }) as const;
    const interactive = { share: 0.5, side: 'reserved' } as const;
    const lower = { share: 0.5, side: 'rest' } as const;
    expect(leavesSide(interactive, none('saturated'))).toBe(true);
    expect(leavesSide(interactive, none('no-replica'))).toBe(true);
    expect(leavesSide(lower, none('saturated'))).toBe(false);
    expect(leavesSide(lower, none('no-replica'))).toBe(false);
  });
});

describe('the file', () => {
  it('reads reserve, with lendAfterSeconds defaulting to 10, and names each problem', () => {
    const set = parseTenants(JSON.stringify({ reserve: { interactive: 0.25 }, tenants: TENANTS }), 't');
    expect(set.reserve).toEqual({ interactive: 0.25, lendAfterSeconds: 10 });
    expect(parseTenants(JSON.stringify({ tenants: TENANTS }), 't').reserve).toBeUndefined();
    const bad = () =>
      parseTenants(JSON.stringify({ reserve: { interactive: 1, lendAfterSeconds: 0, x: 1 }, tenants: TENANTS }), 't');
    expect(bad).toThrow(TenantFileError);
    try {
      bad();
    } catch (err) {
      expect((err as TenantFileError).problems).toEqual([
        'reserve.x: unknown field',
        'reserve.interactive: expected a share of the replicas, > 0 and < 1',
        'reserve.lendAfterSeconds: expected a number > 0 and ≤ 3600',
      ]);
    }
  });
});

describe('the reserve in a reloaded file', () => {
  it('is in force, changed or gone as soon as the file is', () => {
    const file = (reserve?: object) =>
      parseTenants(JSON.stringify({ ...(reserve ? { reserve } : {}), tenants: TENANTS }), 't');
    const tenancy = new Tenancy(file());
    const chat = tenancy.who(tenancy.tenants.get('chat')!, undefined);
    const evals = tenancy.who(tenancy.tenants.get('evals')!, undefined);
    tenancy.split.note('interactive', 0);
    tenancy.split.note('batch', 0);
    expect(tenancy.sideOf(chat, 1)).toBeUndefined();
    tenancy.replace(file({ interactive: 0.25 }));
    expect(tenancy.sideOf(chat, 1)).toEqual({ share: 0.25, side: 'reserved' });
    expect(tenancy.sideOf(evals, 1)).toEqual({ share: 0.25, side: 'rest' });
    expect(tenancy.sideOf(undefined, 1)).toBeUndefined(); // an --api-keys key: no band
    tenancy.replace(file());
    expect(tenancy.sideOf(chat, 1)).toBeUndefined();
  });
});

describe('the reserve in the router core', () => {
  function setup(reserve: Record<string, unknown> | undefined) {
    const clock = manualClock(1_000);
    const sent: Array<{ d: Dispatch<string>; report: (r: SendResult) => void }> = [];
    const file = JSON.stringify({ ...(reserve !== undefined ? { reserve } : {}), tenants: TENANTS });
    const tenancy = new Tenancy(parseTenants(file, 'test'));
    const sides: string[] = [];
    const core = new RouterCore<string>({
      config: routerConfig({ fleet: 'test' }),
      id: 'r',
      clock,
      send: (d, report) => sent.push({ d, report }),
      answer: () => {},
      fetchSnapshot: () => Promise.reject(new Error('none')),
      tenancy,
      metrics: { placed: () => {}, retried: () => {}, upstreamError: () => {}, reserveSide: (x) => sides.push(x) },
    });
    let seq = 1;
    const refresh = (): void => {
      for (const id of IDS) core.receive(makeState(id, { sentAt: clock.now(), seq }));
      seq++;
    };
    refresh();
    const route = (ctx: string, tenant: string) => {
      // A distinct system prompt per request: cold prefixes, spread over the whole side.
      const body = chat(ctx, {}, `system ${ctx} `.repeat(40));
      core.route(ctx, core.describe(body, 'chat', {}), body, tenancy.who(tenancy.tenants.get(tenant)!, undefined));
      return sent.at(-1)!;
    };
    return { clock, core, route, sent, refresh, sides };
  }

  /** Replicas each tenant's requests went to, over `n` of each interleaved. */
  function spread(s: ReturnType<typeof setup>, n: number) {
    const to = { chat: new Set<string>(), evals: new Set<string>() };
    for (let i = 0; i < n; i++) {
      for (const t of ['chat', 'evals'] as const) {
        const x = s.route(`${t}-${i}`, t);
        to[t].add(x.d.replica.id);
        x.report({ kind: 'done', outcome: 'ok' });
      }
    }
    return to;
  }

  it('keeps the lower band off the reserved replicas while both have work, and lends them when interactive is idle', () => {
    const s = setup({ interactive: 0.5 });
    const to = spread(s, 40);
    expect(to.chat.size).toBe(2);
    expect(to.evals.size).toBe(2);
    expect([...to.chat].filter((id) => to.evals.has(id))).toEqual([]);
    // The first request of each side came before the other side had any: the whole group, not counted.
    expect(s.sides.filter((x) => x === 'reserved').length).toBe(39);
    expect(s.sides.filter((x) => x === 'rest').length).toBe(40);
    s.clock.advance(10_001); // no interactive request for longer than lendAfterSeconds
    s.refresh();
    const lent = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const x = s.route(`late-${i}`, 'evals');
      lent.add(x.d.replica.id);
      x.report({ kind: 'done', outcome: 'ok' });
    }
    expect([...to.chat].some((id) => lent.has(id))).toBe(true);
  });

  it('sends an interactive request outside the reserve when no reserved replica can take it', () => {
    const s = setup({ interactive: 0.25 });
    const to = spread(s, 10);
    expect(to.chat.size).toBe(1);
    const [home] = [...to.chat];
    const x = s.route('refused', 'chat');
    expect(x.d.replica.id).toBe(home);
    x.report({ kind: 'rejected', status: 429, reason: 'kv' }); // the one reserved replica refused: the retry goes elsewhere
    expect(s.sent.at(-1)!.d.ctx).toBe('refused');
    expect(s.sent.at(-1)!.d.replica.id).not.toBe(home);
  });

  it('a lower-band request refused by every replica outside the reserve waits, and is not sent to the reserve', () => {
    const s = setup({ interactive: 0.5 });
    const to = spread(s, 20);
    const before = s.sent.length;
    s.route('late', 'evals');
    for (let i = 0; i < 4 && s.sent.length > before + i; i++)
      s.sent[before + i]!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    const tried = s.sent.slice(before).map((x) => x.d.replica.id);
    expect(tried.length).toBe(2); // the two replicas of the rest, then the queue
    expect(tried.every((id) => to.evals.has(id))).toBe(true);
    expect(s.core.waiting).toBe(1);
  });

  it('without a reserve, both bands share every replica', () => {
    const to = spread(setup(undefined), 40);
    expect(to.chat.size).toBeGreaterThan(2);
    expect([...to.chat].some((id) => to.evals.has(id))).toBe(true);
  });
});
