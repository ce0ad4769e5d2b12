/**
 * Prefill/decode pairs (placement/pair.ts): an aggregated fleet is placed as
 * before; a disaggregated one gets a prefill replica by the policy and a
 * decode replica by load, the KV it would take, KV room and the transfer's cost, or one leg when
 * the decode replica lacks little of the prompt.
 */
import { describe, expect, it } from 'vitest';
import { createPolicy } from '../src/placement/registry.ts';
import { placeRequest } from '../src/placement/place.ts';
import { dispatchPlaced, placePair, type PairSettings } from '../src/placement/pair.ts';
import { formatRoute, parseRoute, routeOf } from '../src/placement/route.ts';
import { LocalState } from '../src/core/local.ts';
import { StallBudget, TAU_MS, stallCost } from '../src/placement/stalls.ts';
import { parseBootstrap, sglangBody, vllmPrefillBody } from '../src/http/pd.ts';
import { CONFIG, SYSTEM, chainOf, chat, makeState, makeView, preq, type StateOverrides } from './helpers.ts';

const S: PairSettings = CONFIG;
/** The prefill by load on (off by default: docs/DISAGGREGATION.md, "Prefilling on the decode pool by load"). */
const BY_LOAD: PairSettings = { ...CONFIG, pdStallShare: 0.008 };
/** A prompt of about 2,600 tokens: over the default 1,024-token threshold. */
const LONG = SYSTEM.repeat(3);
const long = (user: string): Record<string, unknown> => chat(user, {}, LONG);

function fleet(specs: Array<[string, StateOverrides]>) {
  const view = makeView(specs.map(([id, o]) => makeState(id, o)));
  return { view, policy: createPolicy('warmpath', CONFIG), local: new LocalState(CONFIG) };
}

describe('placePair', () => {
  it('an aggregated fleet (no roles): exactly the policy placement, no pair', () => {
    const ids = ['a', 'b', 'c', 'd'];
    const f = fleet(ids.map((id) => [id, {}]));
    const g = fleet(ids.map((id) => [id, {}]));
    for (let i = 0; i < 20; i++) {
      const body = i % 2 === 0 ? long(`q ${i}`) : chat(`q ${i}`);
      const paired = placePair(f.policy, preq(body, { now: 1 }), f.view, f.local, S);
      const plain = placeRequest(g.policy, preq(body, { now: 1 }), g.view, g.local);
      expect(paired.pd).toBeUndefined();
      const { replica, ...rest } = paired.placement;
      const { replica: plainReplica, ...plainRest } = plain;
      expect(replica?.id).toBe(plainReplica?.id);
      expect(rest).toEqual(plainRest);
    }
  });

  it('a long prompt: prefill on a prefill replica, decode on a decode replica of its zone, the transfer counted', () => {
    const f = fleet([
      ['p1', { role: 'prefill', zone: 'a' }],
      ['d-a', { role: 'decode', zone: 'a' }],
      ['d-b', { role: 'decode', zone: 'b' }],
    ]);
    const { placement, pd } = placePair(f.policy, preq(long('hi')), f.view, f.local, S);
    expect(pd).toMatchObject({ mode: 'transfer', by: 'split' });
    expect(pd!.prefill?.id).toBe('p1');
    expect(pd!.decode.id).toBe('d-a');
    expect(placement.replica?.id).toBe('d-a');
    expect(pd!.transferTokens).toBeGreaterThan(S.pdThresholdTokens);
    expect(placement.replica === undefined ? 0 : placement.work).toBe(16); // the decode leg computes the output only
  });

  it('the decode replica of the same zone loses once its load outweighs the cross-zone transfer', () => {
    const f = fleet([
      ['p1', { role: 'prefill', zone: 'a' }],
      ['d-a', { role: 'decode', zone: 'a', load: { inflightTokens: 5_000 } }],
      ['d-b', { role: 'decode', zone: 'b' }],
    ]);
    expect(placePair(f.policy, preq(long('hi')), f.view, f.local, S).pd?.decode.id).toBe('d-b');
  });

  it('a decode replica without KV room for the request is taken only when none has room', () => {
    const f = fleet([
      ['p1', { role: 'prefill' }],
      ['d1', { role: 'decode', capacity: { kvTokens: 1_000 } }],
      ['d2', { role: 'decode', load: { inflightTokens: 20_000 } }],
    ]);
    expect(placePair(f.policy, preq(long('hi')), f.view, f.local, S).pd?.decode.id).toBe('d2');
  });

  it('a decode replica holding the shared document takes the leg over a cold one with less load: the cold one would hold a second copy', () => {
    // The question is long too (over the threshold): a transfer either way, of the question alone to d1.
    const body = chat(SYSTEM.repeat(2), {}, LONG);
    const held = chainOf(long('another question'));
    const f = fleet([
      ['p1', { role: 'prefill' }],
      ['d1', { role: 'decode', load: { inflightTokens: 1_500 }, digest: { added: held.slice(0, -2) } }],
      ['d2', { role: 'decode' }],
    ]);
    const { pd } = placePair(f.policy, preq(body), f.view, f.local, S);
    expect(pd).toMatchObject({ mode: 'transfer', by: 'split', decode: { id: 'd1' } });
    // It carries what d1 lacks, not the document: less than half the prompt.
    expect(pd!.transferTokens).toBeGreaterThan(S.pdThresholdTokens);
    expect(pd!.transferTokens).toBeLessThan(preq(body).info.promptTokens / 2);
  });

  it("a decode leg sent since the replica's report counts its transferred prompt in that replica's free KV", () => {
    const f = fleet([
      ['p1', { role: 'prefill' }],
      ['d1', { role: 'decode', capacity: { kvTokens: 4_000 } }],
      ['d2', { role: 'decode', capacity: { kvTokens: 4_000 }, load: { inflightTokens: 100 } }],
    ]);
    const t = Date.now() + 10; // after the states' reports: what is sent now is beyond them
    const first = placePair(f.policy, preq(long('first'), { now: t }), f.view, f.local, S);
    expect(first.pd).toMatchObject({ mode: 'transfer', decode: { id: 'd1' } });
    const { placement, pd } = first;
    if (placement.replica === undefined || pd === undefined) throw new Error('placed');
    expect(placement.kv).toBe(placement.work! + pd.transferTokens);
    dispatchPlaced(f.local, placement, preq(long('first')).info, t);
    // d1 is still the less loaded (its leg's work is the output), but the prompt it receives leaves no room for another.
    const second = placePair(f.policy, preq(long('second'), { now: t + 1 }), f.view, f.local, S);
    expect(second.pd?.decode.id).toBe('d2');
  });

  it('conditional: a short prompt, or one the decode replica holds, is prefilled there with no transfer', () => {
    const body = long('the same document');
    const f = fleet([
      ['p1', { role: 'prefill' }],
      ['d1', { role: 'decode' }],
      ['d2', { role: 'decode', digest: { added: chainOf(body) } }],
    ]);
    const short = placePair(f.policy, preq(chat('hi', {}, 'short')), f.view, f.local, S);
    expect(short.pd).toMatchObject({ mode: 'local', by: 'short', prefill: undefined });
    const held = placePair(f.policy, preq(body), f.view, f.local, S);
    expect(held.pd).toMatchObject({ mode: 'local', by: 'cached' });
    expect(held.placement.replica?.id).toBe('d2');
    const never = placePair(f.policy, preq(body), f.view, f.local, { ...S, pdThresholdTokens: 0 });
    expect(never.pd?.mode).toBe('transfer');
  });

  it('by load: with the prefill pool queued, the decode replica prefills a long prompt as far as the ITL budget allows', () => {
    const specs = (queue: number): Array<[string, StateOverrides]> => [
      ['p1', { role: 'prefill', load: { prefillTokens: queue, inflightTokens: queue } }],
      ['d1', { role: 'decode', load: { running: 10 } }],
    ];
    const out = { max_tokens: 500 };
    // `chats`: before each long prompt, a short one (about 750 tokens, one output token) the threshold prefills on d1.
    const run = (queue: number, settings: PairSettings, chats = false): string[] => {
      const f = fleet(specs(queue));
      const t = Date.now();
      return Array.from({ length: 8 }, (_, i) => {
        if (chats) {
          const c = placePair(
            f.policy,
            preq(chat('x '.repeat(1_500), { max_tokens: 1 }, 'short'), { now: t + i }),
            f.view,
            f.local,
            settings,
          );
          expect(c.pd?.by).toBe('short');
        }
        const pd = placePair(f.policy, preq(chat(`q ${i}`, out, LONG), { now: t + i }), f.view, f.local, settings).pd!;
        return `${pd.mode}:${pd.by}`;
      });
    };
    // Each request earns 500 × 0.008 = 4 gaps; a local prefill of one chunk on a replica running 10 streams costs 10.
    const queued = run(40_000, BY_LOAD);
    expect(queued.filter((x) => x === 'local:load')).toHaveLength(3);
    expect(queued.slice(0, 2)).toEqual(['transfer:split', 'transfer:split']);
    expect(queued[2]).toBe('local:load');
    // The threshold's local prefills stall the same streams: charged (10 streams × about 0.1 of a chunk each), they leave less to spend.
    expect(run(40_000, BY_LOAD, true).filter((x) => x === 'local:load').length).toBeLessThan(3);
    // No budget (the default), or no prefill queue to skip: every long prompt is transferred.
    expect(run(40_000, S).every((x) => x === 'transfer:split')).toBe(true);
    expect(run(0, BY_LOAD).every((x) => x === 'transfer:split')).toBe(true);
  });

  it('by load with an ITL target: none on a decode replica whose published ITL p99 is past it; the budget alone below it or unknown', () => {
    const byLoad = (settings: PairSettings, itlP99Ms?: number): number => {
      const f = fleet([
        ['p1', { role: 'prefill', load: { prefillTokens: 40_000, inflightTokens: 40_000 } }],
        ['d1', { role: 'decode', load: { running: 10, ...(itlP99Ms !== undefined ? { itlP99Ms } : {}) } }],
      ]);
      const t = Date.now();
      return Array.from({ length: 8 }, (_, i) => {
        const q = preq(chat(`q ${i}`, { max_tokens: 500 }, LONG), { now: t + i });
        return placePair(f.policy, q, f.view, f.local, settings).pd!.by;
      }).filter((by) => by === 'load').length;
    };
    const target = { ...BY_LOAD, pdItlTargetMs: 50 };
    expect(byLoad(target, 240)).toBe(0);
    expect(byLoad(target, 38)).toBe(3);
    expect(byLoad(target)).toBe(3);
    // Off (the default): the tail is not read.
    expect(S.pdItlTargetMs).toBe(0);
    expect(byLoad(BY_LOAD, 240)).toBe(3);
  });

  it('the ITL budget decays: credit left from a quiet spell releases no burst of stalls', () => {
    const b = new StallBudget();
    b.earn(0, 1_000, 0.01);
    expect(b.credit(0)).toBeCloseTo(10);
    expect(b.spend(0, 4)).toBe(true);
    expect(b.spend(0, 7)).toBe(false);
    expect(b.credit(TAU_MS)).toBeCloseTo(6 / Math.E);
    expect(b.spend(10 * TAU_MS, 0.01)).toBe(false);
    b.charge(10 * TAU_MS, 5);
    expect(b.credit(10 * TAU_MS)).toBeLessThan(-4.9);
    expect(stallCost(8_193, 10, 8_192)).toBe(20);
    expect(stallCost(5_000, 0, 8_192)).toBe(0);
  });

  it('mixed fleet: a `both` replica chosen for both legs serves the request alone', () => {
    const f = fleet([
      ['both1', {}],
      ['d1', { role: 'decode', load: { inflightTokens: 50_000 } }],
    ]);
    const { placement, pd } = placePair(f.policy, preq(long('hi')), f.view, f.local, S);
    expect(pd).toMatchObject({ mode: 'local', by: 'same' });
    expect(placement.replica?.id).toBe('both1');
  });

  it('one pool left (every prefill replica excluded after failures): the decode replica prefills', () => {
    const f = fleet([
      ['p1', { role: 'prefill' }],
      ['d1', { role: 'decode' }],
    ]);
    const r = placePair(f.policy, preq(long('hi'), { exclude: new Set(['p1']) }), f.view, f.local, S);
    expect(r.pd).toMatchObject({ mode: 'local', by: 'one-pool' });
    expect(r.placement.replica?.id).toBe('d1');
  });

  it('several routers: a first attempt is placed as a first attempt, the other pool not counted as replicas tried', () => {
    const body = long('a shared document');
    const chain = chainOf(body);
    const f = fleet([
      [
        'p1',
        {
          role: 'prefill',
          load: { inflight: 4, inflightTokens: 400 },
          digest: { from: -1, added: chain, size: chain.length },
        },
      ],
      ['p2', { role: 'prefill', load: { inflight: 4, inflightTokens: 400 } }],
      ['d1', { role: 'decode', load: { inflight: 4, inflightTokens: 400 } }],
      ['d2', { role: 'decode', load: { inflight: 4, inflightTokens: 400 } }],
    ]);
    // This router sent one of each replica's four requests: four routers share the clients (warmpath's retry step is on).
    for (const id of ['p1', 'p2', 'd1', 'd2']) f.local.dispatch(id, 100, Date.now() - 60_000);
    for (let i = 0; i < 8; i++) {
      const { placement, pd } = placePair(f.policy, preq(long(`q ${i}`)), f.view, f.local, S);
      expect(placement.replica !== undefined && placement.step).toBe('warm');
      expect(pd?.prefill?.id).toBe('p1');
    }
  });

  it('x-warmpath-route names the pair and reads back; a reader of the old format still gets the branch', () => {
    const f = fleet([
      ['p1', { role: 'prefill' }],
      ['d1', { role: 'decode' }],
    ]);
    const { placement, pd } = placePair(f.policy, preq(long('hi')), f.view, f.local, S);
    const header = formatRoute(routeOf(placement, 'first', pd));
    expect(header).toMatch(/; pd=transfer; pd-by=split; prefill=p1; decode=d1$/);
    expect(parseRoute(header)).toEqual({
      ...routeOf(placement, 'first'),
      pd: { mode: 'transfer', by: 'split', prefill: 'p1', decode: 'd1' },
    });
    expect(parseRoute(formatRoute(routeOf(placement, 'first')))?.pd).toBeUndefined();
  });
});

describe('the engines dialects (http/pd.ts)', () => {
  it("vLLM's prefill request: one token, not streamed, asking for remote decode; the rest of the body kept", () => {
    const b = vllmPrefillBody({
      model: 'm',
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 99,
      temperature: 0,
    });
    expect(b).toEqual({
      model: 'm',
      stream: false,
      max_tokens: 1,
      max_completion_tokens: 1,
      temperature: 0,
      kv_transfer_params: {
        do_remote_decode: true,
        do_remote_prefill: false,
        remote_engine_id: null,
        remote_block_ids: null,
        remote_host: null,
        remote_port: null,
      },
    });
  });

  it("SGLang's request to both legs names the prefill replica's bootstrap and the room", () => {
    expect(sglangBody({ model: 'm' }, { host: '10.0.0.2', port: 8998 }, 42)).toEqual({
      model: 'm',
      bootstrap_host: '10.0.0.2',
      bootstrap_port: 8998,
      bootstrap_room: 42,
    });
    expect(parseBootstrap('[::1]:8998')).toEqual({ host: '::1', port: 8998 });
    expect(parseBootstrap('p0:0')).toBeUndefined();
    expect(parseBootstrap('nohost')).toBeUndefined();
    expect(parseBootstrap(undefined)).toBeUndefined();
  });
});
