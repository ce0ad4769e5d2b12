/**
 * The ablation switches (router config `placementOff`): each warmpath step
 * switched off alone makes its branch disappear and the simpler rule it
 * refines take over. One case per switchable step (the Record's type demands
 * every one), each on a fleet where the step fires when switched on.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@warmpath/shared/runtime';
import { ROUTER_SCHEMA, routerConfig } from '../src/config.ts';
import type { FleetView } from '../src/fleet/view.ts';
import { LocalState } from '../src/core/local.ts';
import { notifyDispatch, placeRequest } from '../src/placement/place.ts';
import { warmpathOptions } from '../src/placement/registry.ts';
import type { Placement, PlacementRequest, Policy } from '../src/placement/types.ts';
import { createWarmpathPolicy } from '../src/placement/warmpath/index.ts';
import { SWITCHABLE_STEP_NAMES, type SwitchableStep } from '../src/placement/warmpath/steps.ts';
import { CONFIG, chainOf, chat, makeState, makeView, preq } from './helpers.ts';

/** Warmpath built as the router builds it, from validated config. */
const warmpath = (...off: SwitchableStep[]): Policy =>
  createWarmpathPolicy(warmpathOptions(routerConfig({ placementOff: off })));
const place = (p: Policy, req: PlacementRequest, view: FleetView, local = new LocalState(CONFIG)): Placement =>
  placeRequest(p, req, view, local);
const ids = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`);
const warmOn = (chain: BigUint64Array) => ({ digest: { from: -1, added: chain, size: chain.length } });
const lora = (id: string, hot: string[]) =>
  makeState(id, { adapters: ['a1', 'a2', 'a3'], hotAdapters: hot, capacity: { adapterSlots: 2 } });

describe('placementOff: config', () => {
  it('is empty by default and reaches the policy options', () => {
    expect(routerConfig().placementOff).toEqual([]);
    expect(warmpathOptions(routerConfig({ placementOff: ['balance', 'overlay'] })).placementOff).toEqual([
      'balance',
      'overlay',
    ]);
  });

  it('parses from the string form of flags, env and --router-set key=value', () => {
    expect(routerConfig({ placementOff: 'balance' }).placementOff).toEqual(['balance']);
    expect(loadConfig(ROUTER_SCHEMA, { argv: ['--placement-off', 'balance,overlay'] }).placementOff).toEqual([
      'balance',
      'overlay',
    ]);
    expect(loadConfig(ROUTER_SCHEMA, { env: { WARMPATH_PLACEMENT_OFF: 'spill, bound-floor' } }).placementOff).toEqual([
      'spill',
      'bound-floor',
    ]);
  });

  it('rejects an unknown step, naming the known ones', () => {
    expect(() => routerConfig({ placementOff: ['balance', 'warmth'] })).toThrow(ConfigError);
    expect(() => routerConfig({ placementOff: 'warmth' })).toThrow(
      `may list only ${SWITCHABLE_STEP_NAMES.join(', ')} (got "warmth")`,
    );
  });
});

const CASES: Record<SwitchableStep, () => void> = {
  warm() {
    // The deepest prefix is on `other`; without warmth the key's ring home takes it.
    const body = chat('a long user turn '.repeat(60));
    const home = place(warmpath(), preq(body), makeView(ids(5).map((id) => makeState(id)))).replica!.id;
    const other = ids(5).find((id) => id !== home)!;
    const view = makeView(ids(5).map((id) => makeState(id, id === other ? warmOn(chainOf(body)) : {})));
    expect(place(warmpath(), preq(body), view)).toMatchObject({ branch: 'warm', replica: { id: other } });
    expect(place(warmpath('warm'), preq(body), view)).toMatchObject({ branch: 'ring', replica: { id: home } });
  },

  'warm-over-bound'() {
    const body = chat('a long conversation turn '.repeat(400), { max_tokens: 16 });
    const chain = chainOf(body);
    const others = ids(4).map((id) =>
      makeState(id, { load: { inflightTokens: 20_000 }, ...warmOn(chain.slice(0, 13)) }),
    );
    const view = makeView([
      makeState('home', { load: { inflightTokens: 50_000, prefillTokens: 500 }, ...warmOn(chain) }),
      ...others,
    ]);
    expect(place(warmpath(), preq(body), view)).toMatchObject({ branch: 'warm-over-bound', replica: { id: 'home' } });
    // Off: the warmest within the bound (the system prompt's holders; queues tie → the lowest id).
    expect(place(warmpath('warm-over-bound'), preq(body), view)).toMatchObject({
      branch: 'warm',
      replica: { id: 'r0' },
    });
  },

  balance() {
    const sys = chainOf(chat(''), 13);
    const view = makeView([
      ...ids(7).map((id) => makeState(id, { load: { inflightTokens: 40_000 }, ...warmOn(sys) })),
      makeState('idle'),
    ]);
    expect(place(warmpath(), preq(chat('a new session')), view)).toMatchObject({
      branch: 'balance',
      replica: { id: 'idle' },
    });
    // Off: the warm pick keeps it (queues tie → the lowest id).
    expect(place(warmpath('balance'), preq(chat('a new session')), view)).toMatchObject({
      branch: 'warm',
      replica: { id: 'r0' },
    });
  },

  'balance-spread'() {
    // Four routers share the clients (as in share below); a system prompt is warm on 12 busy replicas, 4 others idle.
    const local = new LocalState(CONFIG);
    const sent = Date.now() - 60_000;
    for (let k = 0; k < 16; k++) local.dispatch(`r${k}`, 100, sent);
    const sys = chainOf(chat(''), 13);
    const view = makeView(
      ids(16).map((id, i) =>
        makeState(
          id,
          i < 12
            ? { load: { inflight: 4, inflightTokens: 30_000 }, ...warmOn(sys) }
            : { load: { inflight: 4, inflightTokens: 400 } },
        ),
      ),
    );
    const targets = (p: Policy) =>
      new Set(
        Array.from({ length: 24 }, (_, k) => place(p, preq(chat(`a new session ${k}`)), view, local)).map(
          (x) => `${x.branch}:${x.replica!.id}`,
        ),
      );
    // On: each prompt draws its target among the first four idle replicas in the key's ring, so the routers do not herd.
    const on = [...targets(warmpath())];
    expect(on.every((x) => x.startsWith('balance:'))).toBe(true);
    expect(on.length).toBeGreaterThan(1);
    // Off: the ring's first idle replica, for every prompt sharing the prefix, as with one router.
    const off = [...targets(warmpath('balance-spread'))];
    expect(off).toHaveLength(1);
    expect(off[0]).toMatch(/^balance:/);
  },

  'key-tie-break'() {
    // A system prompt warm everywhere; r2 has the shortest prefill queue.
    const sys = chainOf(chat(''), 13);
    const queues = [4_000, 3_000, 500, 2_000, 1_000, 2_500];
    const view = makeView(
      ids(6).map((id, i) => makeState(id, { load: { prefillTokens: queues[i]! }, ...warmOn(sys) })),
    );
    const keys = ['session-1', 'session-2', 'session-3', 'session-4'];
    const keyed = (p: Policy, key: string) => place(p, preq(chat('call 1', { prompt_cache_key: key })), view);
    // On: keyed calls follow their key's ring order, so they do not all land on r2.
    expect(new Set(keys.map((k) => keyed(warmpath(), k).replica!.id)).size).toBeGreaterThan(1);
    // Off: every keyed call breaks the tie as a keyless one does — the shortest queue.
    for (const k of keys)
      expect(keyed(warmpath('key-tie-break'), k)).toMatchObject({ branch: 'warm', replica: { id: 'r2' } });
  },

  overlay() {
    const sys = 'A brand-new shared system prompt. '.repeat(100);
    const view = makeView(ids(8).map((id) => makeState(id)));
    const now = Date.now();
    const burst = (p: Policy): Placement[] => {
      const local = new LocalState(CONFIG);
      const first: PlacementRequest = preq(chat('u0', { prompt_cache_key: 'k0' }, sys), { now });
      notifyDispatch(p, first, place(p, first, view, local).replica!, local);
      return [1, 2, 3, 4, 5].map((i) =>
        place(p, preq(chat(`u${i}`, { prompt_cache_key: `k${i}` }, sys), { now: now + i }), view, local),
      );
    };
    expect(burst(warmpath()).every((p) => p.branch === 'warm')).toBe(true);
    // Off: nothing is warm until gossip says so; each key goes to its own ring home.
    const off = burst(warmpath('overlay'));
    expect(off.every((p) => p.branch === 'ring')).toBe(true);
    expect(new Set(off.map((p) => p.replica!.id)).size).toBeGreaterThan(1);
    // …and the policy no longer feeds the overlay.
    const local = new LocalState(CONFIG);
    const p = warmpath('overlay');
    const req = preq(chat('u0', {}, sys), { now });
    notifyDispatch(p, req, place(p, req, view, local).replica!, local);
    expect(local.overlaySize).toBe(0);
  },

  'bound-floor'() {
    // The home carries 1,500 tokens: under the floor (2,048), though over c × its share of so little work.
    const req = preq(chat('x'));
    const home = place(warmpath(), req, makeView(ids(4).map((id) => makeState(id)))).replica!.id;
    const view = makeView(ids(4).map((id) => makeState(id, { load: { inflightTokens: id === home ? 1_500 : 0 } })));
    expect(place(warmpath(), req, view)).toMatchObject({ branch: 'ring', replica: { id: home } });
    const off = place(warmpath('bound-floor'), req, view);
    expect(off.branch).toBe('spill');
    expect(off.replica!.id).not.toBe(home);
  },

  share() {
    // Three other routers' requests are in flight everywhere (3 per replica); this router's 3 on `home` were in its
    // last report, so it carries a quarter of the traffic and reckons its new work there 4 times.
    const req = preq(chat('x'));
    const home = place(warmpath(), req, makeView(ids(4).map((id) => makeState(id)))).replica!.id;
    const local = new LocalState(CONFIG);
    const sent = Date.now() - 60_000;
    for (let k = 0; k < 3; k++) local.dispatch(home, 100, sent);
    const view = makeView(ids(4).map((id) => makeState(id, { load: { inflight: 3, inflightTokens: 300 } })));
    // One request's work sent to `home` since its report: under the floor counted once, over it (and the bound) counted 4 times.
    local.dispatch(home, 1_200, Date.now() + 60_000);
    expect(place(warmpath(), req, view, local).branch).toBe('spill');
    expect(place(warmpath('share'), req, view, local)).toMatchObject({ branch: 'ring', replica: { id: home } });
  },

  expect() {
    // Four routers share the clients (as in share above); a system prompt is warm on all four replicas. `r0` reported
    // the shortest prefill queue 200 ms ago, but work was arriving there at 100k tokens/s: the three other routers'
    // share of that since (about 15k tokens) makes it the longest.
    const local = new LocalState(CONFIG);
    const sent = Date.now() - 60_000;
    for (let k = 0; k < 4; k++) local.dispatch(`r${k}`, 100, sent);
    const warm = warmOn(chainOf(chat('')));
    const view = makeView(
      ids(4).map((id) =>
        makeState(id, {
          load: {
            inflight: 4,
            inflightTokens: 400,
            prefillTokens: id === 'r0' ? 0 : 2_000,
            arrivalTokensPerS: id === 'r0' ? 100_000 : 0,
          },
          ...warm,
        }),
      ),
    );
    const req = preq(chat('a question'), { now: Date.now() + 200 });
    place(warmpath(), req, view, local); // the first placement learns how many routers share the clients
    expect(local.routers).toBeCloseTo(4, 0);
    expect(place(warmpath(), req, view, local)).toMatchObject({ branch: 'warm', replica: { id: 'r1' } });
    expect(place(warmpath('expect'), req, view, local)).toMatchObject({ branch: 'warm', replica: { id: 'r0' } });
  },

  horizon() {
    // A system prompt warm on r0 and r1, both queues empty; r0's recent clients send it 20k tokens/s, r1's 1k.
    const warm = warmOn(chainOf(chat('')));
    const view = makeView([
      makeState('r0', { load: { recentTokensPerS: 20_000 }, ...warm }),
      makeState('r1', { load: { recentTokensPerS: 1_000 }, ...warm }),
    ]);
    // On: the new conversation's home is the replica whose next seconds are quieter.
    expect(place(warmpath(), preq(chat('a new question')), view)).toMatchObject({
      branch: 'warm',
      replica: { id: 'r1' },
    });
    // Off: equal queues, so the lower id.
    expect(place(warmpath('horizon'), preq(chat('a new question')), view)).toMatchObject({
      branch: 'warm',
      replica: { id: 'r0' },
    });
    // The queue still counts: 70k tokens queued on r1 outweigh 3 s of r0's 19k tokens/s more.
    const queued = makeView([
      makeState('r0', { load: { recentTokensPerS: 20_000 }, ...warm }),
      makeState('r1', { load: { recentTokensPerS: 1_000, prefillTokens: 70_000 }, ...warm }),
    ]);
    expect(place(warmpath(), preq(chat('a new question')), queued)).toMatchObject({ replica: { id: 'r0' } });
  },

  slice() {
    // Four routers share the clients (as in share above); a system prompt is warm on all 16 replicas, every queue empty.
    const local = new LocalState(CONFIG);
    const sent = Date.now() - 60_000;
    for (let k = 0; k < 16; k++) local.dispatch(`r${k}`, 100, sent);
    const view = makeView(
      ids(16).map((id) => makeState(id, { load: { inflight: 4, inflightTokens: 400 }, ...warmOn(chainOf(chat(''))) })),
    );
    const picks = (p: Policy) =>
      new Set(
        Array.from({ length: 24 }, (_, k) => place(p, preq(chat(`question ${k}`)), view, local)).map(
          (x) => `${x.branch}:${x.replica!.id}`,
        ),
      );
    // On: each prompt's own slice of the tied replicas, so the routers do not all send their next prompt to one replica.
    const on = [...picks(warmpath())];
    expect(on.every((x) => x.startsWith('warm:'))).toBe(true);
    expect(on.length).toBeGreaterThan(4);
    // Off: the tie goes to the lowest id, for every prompt, on every router.
    expect([...picks(warmpath('slice'))]).toEqual(['warm:r0']);
  },

  'queue-limit'() {
    // r0 holds the whole prompt (a long history), the others only its first chunks; r0 has 300 tokens of prefill queued.
    const body = chat('a long conversation turn '.repeat(200));
    const chain = chainOf(body);
    const view = makeView([
      makeState('r0', { load: { prefillTokens: 300 }, ...warmOn(chain) }),
      ...['r1', 'r2'].map((id) => makeState(id, warmOn(chain.slice(0, 4)))),
    ]);
    const on = place(warmpath(), preq(body), view);
    expect(on).toMatchObject({ branch: 'warm', replica: { id: 'r0' } });
    if (on.replica === undefined) throw new Error('no pick');
    // The limit: its queue + this request's work there + the prefill it saves over r1/r2 (the chunks only r0 holds).
    const saved = (chain.length - 4) * (CONFIG.chunkChars / CONFIG.charsPerToken);
    expect(on.queueLimit).toBe(Math.ceil(300 + on.work! + saved));
    const off = place(warmpath('queue-limit'), preq(body), view);
    expect(off.replica?.id).toBe('r0');
    expect(off).not.toHaveProperty('queueLimit');
  },

  spill() {
    const req = preq(chat('x'));
    const home = place(warmpath(), req, makeView(ids(4).map((id) => makeState(id)))).replica!.id;
    const view = makeView(
      ids(4).map((id) => makeState(id, { load: { inflightTokens: id === home ? 50_000 : 1_000 } })),
    );
    expect(place(warmpath(), req, view).branch).toBe('spill');
    // Off: the home over the bound → the least loaded (ties → the first in id order).
    const least = ids(4).find((id) => id !== home)!;
    expect(place(warmpath('spill'), req, view)).toMatchObject({ branch: 'least-loaded', replica: { id: least } });
  },

  'spill-two-choices'() {
    const req = preq(chat('a cold prompt'));
    const home = place(warmpath(), req, makeView(ids(5).map((id) => makeState(id)))).replica!.id;
    const view = makeView(ids(5).map((id) => makeState(id, { load: { prefillTokens: id === home ? 6_000 : 0 } })));
    // With spill-least-queued off (it would take any shorter queue along the ring once the home's is kept).
    expect(place(warmpath('spill-least-queued'), req, view).branch).toBe('spill-two-choices');
    expect(place(warmpath('spill-two-choices', 'spill-least-queued'), req, view)).toMatchObject({
      branch: 'ring',
      replica: { id: home },
    });
  },

  'spill-least-queued'() {
    // A cold prompt; the ring's two choices for it queue far more prefill than the prompt's own, the others none.
    const req = preq(chat('a cold document line '.repeat(200)));
    const home = place(warmpath(), req, makeView(ids(6).map((id) => makeState(id)))).replica!.id;
    const queued = (busy: string[], tokens: number) =>
      makeView(ids(6).map((id) => makeState(id, { load: { prefillTokens: busy.includes(id) ? tokens : 0 } })));
    const second = place(warmpath(), req, queued([home], 6_000)).replica!.id;
    const view = queued([home, second], 20_000);
    const on = place(warmpath(), req, view);
    expect(on.branch).toBe('spill-least-queued');
    expect([home, second]).not.toContain(on.replica!.id);
    // Off: the two choices alone, equal queues: the ring's home.
    expect(place(warmpath('spill-least-queued'), req, view)).toMatchObject({ branch: 'ring', replica: { id: home } });
  },

  'retry-two-choices'() {
    // Four routers share the clients (as in slice above); a system prompt is warm on 16 replicas, r0 refused each request, r5 is busy.
    const local = new LocalState(CONFIG);
    const sent = Date.now() - 60_000;
    for (let k = 0; k < 16; k++) local.dispatch(`r${k}`, 100, sent);
    const view = makeView(
      ids(16).map((id) =>
        makeState(id, {
          load: { inflight: 4, inflightTokens: 400, prefillTokens: id === 'r5' ? 1_500 : 0 },
          ...warmOn(chainOf(chat(''))),
        }),
      ),
    );
    const retries = (p: Policy) =>
      Array.from({ length: 40 }, (_, k) =>
        place(p, preq(chat(`question ${k}`), { exclude: new Set(['r0']) }), view, local),
      );
    // On: each retry samples two warm replicas (its own draw) and takes the cheaper: spread, never r0, never the busy r5 over an idle one.
    const on = retries(warmpath());
    expect(on.every((x) => x.branch === 'retry-two-choices' && x.replica!.id !== 'r0' && x.replica!.id !== 'r5')).toBe(
      true,
    );
    expect(new Set(on.map((x) => x.replica!.id)).size).toBeGreaterThan(6);
    // The retry step placed them, each by the token cost of its sampled rows.
    expect(on.every((x) => x.replica !== undefined && x.step === 'retry' && x.by === 'cost')).toBe(true);
    // Off: a retry is placed as a first attempt is.
    expect(
      retries(warmpath('retry-two-choices')).every(
        (x) => x.branch === 'warm' && x.replica!.id !== 'r0' && x.replica !== undefined && x.step === 'warm',
      ),
    ).toBe(true);
    // One router alone: a refusal is no herd, the retry is placed as a first attempt is.
    const alone = makeView(ids(16).map((id) => makeState(id, warmOn(chainOf(chat(''))))));
    expect(place(warmpath(), preq(chat('question'), { exclude: new Set(['r0']) }), alone).branch).toBe('warm');
    // The cold choice: with 4 idle cold replicas beside the 16 warm ones, a retry whose refusal found little
    // queued beyond its limit stays warm (a cold row lacks the whole prompt); one that found the herd's
    // work there counts it on every warm row, and some retries go cold.
    const mixed = makeView([
      ...ids(16).map((id) =>
        makeState(id, { load: { inflight: 4, inflightTokens: 400, prefillTokens: 0 }, ...warmOn(chainOf(chat(''))) }),
      ),
      ...['c0', 'c1', 'c2', 'c3'].map((id) => makeState(id)),
    ]);
    const cold = (missed: number) =>
      Array.from({ length: 40 }, (_, k) =>
        place(warmpath(), { ...preq(chat(`question ${k}`), { exclude: new Set(['r0']) }), missed }, mixed, local),
      ).filter((x) => x.replica!.id.startsWith('c')).length;
    expect(cold(0)).toBe(0);
    expect(cold(100_000)).toBeGreaterThan(0);
  },

  'adapter-home'() {
    const view = makeView(ids(4).map((id) => lora(id, [])));
    const spread = (p: Policy) => {
      const picks = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const r = place(p, preq(chat(`prompt ${i}`, { model: 'a3' }, `system ${i} `.repeat(200)), { view }), view);
        picks.add(`${r.branch}:${r.replica!.id}`);
      }
      return picks;
    };
    // On: every cold load of a3 goes to its adapter ring home.
    expect(spread(warmpath()).size).toBe(1);
    // Off: each prompt follows its own key's ring, like a base-model request.
    const off = [...spread(warmpath('adapter-home'))];
    expect(off.every((x) => /^(ring|spill|spill-two-choices):/.test(x))).toBe(true);
    expect(new Set(off.map((x) => x.split(':')[1])).size).toBeGreaterThan(1);
  },
};

describe('placementOff: each step switched off alone', () => {
  for (const step of SWITCHABLE_STEP_NAMES) it(step, CASES[step]);
});
