import { describe, expect, it } from 'vitest';
import { buildCandidates, scanWarmth } from '../src/placement/candidates.ts';
import { LocalState } from '../src/core/local.ts';
import { notifyDispatch, placeRequest } from '../src/placement/place.ts';
import type { PlacementRequest } from '../src/placement/types.ts';
import { warmpathOptions } from '../src/placement/registry.ts';
import { createWarmpathPolicy } from '../src/placement/warmpath/index.ts';
import { routerConfig } from '../src/config.ts';
import { CONFIG, chainOf, chat, makeState, makeView, options, preq } from './helpers.ts';

const policy = () => createWarmpathPolicy(options());
const ids = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`);

describe('warmpath placement branches', () => {
  it('ring: a cold key goes to its ring home; the same key always lands there', () => {
    const view = makeView(ids(5).map((id) => makeState(id)));
    const p = policy();
    const first = placeRequest(p, preq(chat('a')), view, new LocalState(CONFIG));
    expect(first.branch).toBe('ring');
    for (let i = 0; i < 10; i++)
      expect(placeRequest(p, preq(chat(`other turn ${i}`)), view, new LocalState(CONFIG)).replica?.id).toBe(
        first.replica!.id,
      );
  });

  it('warm: the replica holding the longest prefix wins over the ring home', () => {
    const body = chat('a long user turn '.repeat(60));
    const states = ids(5).map((id) => makeState(id));
    const view0 = makeView(states);
    const home = placeRequest(policy(), preq(body), view0, new LocalState(CONFIG)).replica!.id;
    const other = ids(5).find((id) => id !== home)!;
    const chain = chainOf(body);
    const view = makeView(
      ids(5).map((id) =>
        makeState(
          id,
          id === other
            ? { digest: { from: -1, added: chain, size: chain.length } }
            : id === home
              ? { digest: { from: -1, added: chain.slice(0, 4), size: 4 } }
              : {},
        ),
      ),
    );
    expect(placeRequest(policy(), preq(body), view, new LocalState(CONFIG))).toMatchObject({
      branch: 'warm',
      replica: { id: other },
    });
  });

  it('warm ties (a system prompt cached everywhere) go to the shortest prefill queue, not one hot replica', () => {
    const sysChain = chainOf(chat(''), 13);
    const queues = [4_000, 3_000, 500, 2_000, 1_000, 2_500];
    const view = makeView(
      ids(6).map((id, i) =>
        makeState(id, {
          load: { prefillTokens: queues[i]! },
          digest: { from: -1, added: sysChain, size: sysChain.length },
        }),
      ),
    );
    for (let i = 0; i < 5; i++)
      expect(placeRequest(policy(), preq(chat(`turn ${i}`)), view, new LocalState(CONFIG))).toMatchObject({
        branch: 'warm',
        replica: { id: 'r2' },
      });
    // Equal queues: the id breaks the tie, identically on every router.
    const even = makeView(
      ids(6).map((id) => makeState(id, { digest: { from: -1, added: sysChain, size: sysChain.length } })),
    );
    expect(placeRequest(policy(), preq(chat('x')), even, new LocalState(CONFIG)).replica?.id).toBe('r0');
  });

  it('warm ties with an explicit routing key follow the key ring: every router sends a fan-out to one replica', () => {
    const sysChain = chainOf(chat(''), 13);
    const queues = [4_000, 3_000, 500, 2_000, 1_000, 2_500];
    const view = makeView(
      ids(6).map((id, i) =>
        makeState(id, {
          load: { prefillTokens: queues[i]! },
          digest: { from: -1, added: sysChain, size: sysChain.length },
        }),
      ),
    );
    const cold = makeView(ids(6).map((id) => makeState(id)));
    for (const key of ['session-1', 'session-2', 'session-3']) {
      // The key's ring home, as the ring branch picks it on a cold fleet.
      const home = placeRequest(policy(), preq(chat('call 0', { prompt_cache_key: key })), cold, new LocalState(CONFIG))
        .replica!.id;
      // Two routers, each with its own (empty) local state, place the key's calls alike, despite the queues.
      for (let call = 0; call < 4; call++) {
        const a = placeRequest(
          policy(),
          preq(chat(`call ${call}`, { prompt_cache_key: key })),
          view,
          new LocalState(CONFIG),
        );
        const b = placeRequest(policy(), preq(chat(`call ${call}`), { keyHeader: key }), view, new LocalState(CONFIG));
        expect(a).toMatchObject({ branch: 'warm', replica: { id: home } });
        expect(b.replica?.id).toBe(home);
      }
    }
  });

  it("a keyed new task (less than half its prompt warm anywhere) goes to its key's ring home, not to the shared prompt's holders", () => {
    const sysChain = chainOf(chat(''), 13);
    const loads = [40_000, 30_000, 5_000, 20_000, 35_000, 25_000];
    // The shared system prompt is warm on r0–r2 only.
    const view = makeView(
      ids(6).map((id, i) =>
        makeState(id, {
          load: { inflightTokens: loads[i]! },
          ...(i < 3 ? { digest: { from: -1, added: sysChain, size: sysChain.length } } : {}),
        }),
      ),
    );
    const cold = makeView(ids(6).map((id) => makeState(id)));
    const homes = new Set<string>();
    for (const key of ['task-1', 'task-2', 'task-3', 'task-4', 'task-5', 'task-6']) {
      const body = chat(`a long new task for ${key} `.repeat(300), { prompt_cache_key: key });
      const home = placeRequest(policy(), preq(body), cold, new LocalState(CONFIG)).replica!.id;
      homes.add(home);
      // Any router, whatever it sent lately, computes the same home from the key alone.
      expect(placeRequest(policy(), preq(body), view, new LocalState(CONFIG))).toMatchObject({
        branch: 'ring',
        replica: { id: home },
      });
    }
    expect(homes.size).toBeGreaterThan(1);
  });

  it('warm: depth beats a shorter queue (locality keeps prefill capacity)', () => {
    const body = chat('history '.repeat(200));
    const chain = chainOf(body);
    const view = makeView([
      makeState('deep', { load: { prefillTokens: 3_000 }, digest: { from: -1, added: chain, size: chain.length } }),
      makeState('shallow', { digest: { from: -1, added: chain.slice(0, 13), size: 13 } }),
    ]);
    expect(placeRequest(policy(), preq(body), view, new LocalState(CONFIG))).toMatchObject({
      branch: 'warm',
      replica: { id: 'deep' },
    });
  });

  it('warm-over-bound: a deeper replica a little over the bound still wins when its prefill is cheaper', () => {
    // A long conversation lives on "home"; home is busy (over c × mean) but not past 2c: re-prefilling
    // the whole history on a shallower replica would cost more than home's queue.
    const body = chat('a long conversation turn '.repeat(400), { max_tokens: 16 });
    const chain = chainOf(body);
    const sys = chain.slice(0, 13);
    const others = ids(4).map((id) =>
      makeState(id, { load: { inflightTokens: 20_000 }, digest: { from: -1, added: sys, size: sys.length } }),
    );
    const home = makeState('home', {
      load: { inflightTokens: 50_000, prefillTokens: 500 },
      digest: { from: -1, added: chain, size: chain.length },
    });
    expect(placeRequest(policy(), preq(body), makeView([home, ...others]), new LocalState(CONFIG))).toMatchObject({
      branch: 'warm-over-bound',
      replica: { id: 'home' },
    });
    // Far past the hard bound, the shallower replica takes it.
    const swamped = makeState('home', {
      load: { inflightTokens: 400_000, prefillTokens: 500 },
      digest: { from: -1, added: chain, size: chain.length },
    });
    expect(
      placeRequest(policy(), preq(body), makeView([swamped, ...others]), new LocalState(CONFIG)).replica?.id,
    ).not.toBe('home');
    // With the hard bound lifted (hardBound), the cost alone decides: home's short queue keeps it.
    const uncapped = createWarmpathPolicy(warmpathOptions(routerConfig({ hardBound: 1e9 })));
    expect(placeRequest(uncapped, preq(body), makeView([swamped, ...others]), new LocalState(CONFIG))).toMatchObject({
      branch: 'warm-over-bound',
      replica: { id: 'home' },
    });
  });

  it('warm-over-bound counts what a shallower pick re-prefills twice: once for the request, once for the fleet', () => {
    // home's queue is longer than the whole history the shallower replicas lack (a fan-out's first call
    // still prefilling the shared prefix), but shorter than twice it: home keeps the request.
    const body = chat('a long conversation turn '.repeat(400), { max_tokens: 16 });
    const chain = chainOf(body);
    const sys = chain.slice(0, 13);
    const info = preq(body).info;
    const lack = info.promptTokens - Math.floor((13 * CONFIG.chunkChars) / CONFIG.charsPerToken);
    const others = ids(4).map((id) =>
      makeState(id, { load: { inflightTokens: 20_000 }, digest: { from: -1, added: sys, size: sys.length } }),
    );
    const home = (queue: number) =>
      makeState('home', {
        load: { inflightTokens: 50_000, prefillTokens: queue },
        digest: { from: -1, added: chain, size: chain.length },
      });
    const place = (queue: number) =>
      placeRequest(policy(), preq(body), makeView([home(queue), ...others]), new LocalState(CONFIG));
    expect(place(Math.round(1.5 * lack))).toMatchObject({ branch: 'warm-over-bound', replica: { id: 'home' } });
    expect(place(Math.round(2.5 * lack)).replica?.id).not.toBe('home');
  });

  it('a request with a routing key has the looser bound (keyLoadFactor 3, others loadFactor 1.75): it asks for affinity', () => {
    const place = (req: ReturnType<typeof preq>, busy?: string) =>
      placeRequest(
        policy(),
        req,
        makeView(
          ids(4).map((id) =>
            makeState(id, { load: { inflightTokens: id === busy ? 60_000 : busy === undefined ? 0 : 20_000 } }),
          ),
        ),
        new LocalState(CONFIG),
      );
    // The home carries 2× the fleet mean: over 1.75, within 3.
    const keyless = preq(chat('a cold prompt'));
    const home = place(keyless).replica!.id;
    const spilled = place(keyless, home);
    expect(spilled.branch).toBe('spill');
    expect(spilled.replica!.id).not.toBe(home);
    const keyed = preq(chat('a cold prompt', { prompt_cache_key: 'k' }));
    const keyHome = place(keyed).replica!.id;
    expect(place(keyed, keyHome)).toMatchObject({ branch: 'ring', replica: { id: keyHome } });
  });

  it('spill: over the bound, the key grows onto the next replicas in ring order, deterministically', () => {
    const states = ids(4).map((id) => makeState(id));
    const req = preq(chat('x'));
    const home = placeRequest(policy(), req, makeView(states), new LocalState(CONFIG)).replica!.id;
    const loaded = makeView(
      ids(4).map((id) => makeState(id, { load: { inflightTokens: id === home ? 50_000 : 1_000 } })),
    );
    const a = placeRequest(policy(), req, loaded, new LocalState(CONFIG));
    const b = placeRequest(policy(), req, loaded, new LocalState(CONFIG));
    expect(a.branch).toBe('spill');
    expect(a.replica!.id).not.toBe(home);
    expect(b.replica!.id).toBe(a.replica!.id);
  });

  it('two choices on the ring: a cold prompt takes the next ring member when the home has the longer prefill queue', () => {
    const req = preq(chat('a cold prompt'));
    const home = placeRequest(policy(), req, makeView(ids(5).map((id) => makeState(id))), new LocalState(CONFIG))
      .replica!.id;
    const busy = makeView(ids(5).map((id) => makeState(id, { load: { prefillTokens: id === home ? 6_000 : 0 } })));
    const a = placeRequest(policy(), req, busy, new LocalState(CONFIG));
    expect(a.branch).toBe('spill-two-choices');
    expect(a.replica!.id).not.toBe(home);
    // Deterministic: every router picks the same second member.
    expect(placeRequest(policy(), req, busy, new LocalState(CONFIG)).replica!.id).toBe(a.replica!.id);
    // A keyed new task compares the same two members of its key's ring: the same view, the same pick.
    const keyed = preq(chat('a cold prompt', { prompt_cache_key: 'k' }));
    const keyHome = placeRequest(policy(), keyed, makeView(ids(5).map((id) => makeState(id))), new LocalState(CONFIG))
      .replica!.id;
    const keyBusy = makeView(
      ids(5).map((id) => makeState(id, { load: { prefillTokens: id === keyHome ? 6_000 : 0 } })),
    );
    const k = placeRequest(policy(), keyed, keyBusy, new LocalState(CONFIG));
    expect(k.branch).toBe('spill-two-choices');
    expect(k.replica!.id).not.toBe(keyHome);
    expect(placeRequest(policy(), keyed, keyBusy, new LocalState(CONFIG)).replica!.id).toBe(k.replica!.id);
    // The key decides, not the prompt: another prompt with the same key goes to the same replica.
    expect(
      placeRequest(
        policy(),
        preq(chat('another cold prompt', { prompt_cache_key: 'k' })),
        keyBusy,
        new LocalState(CONFIG),
      ).replica!.id,
    ).toBe(k.replica!.id);
    // Equal queues: the key's home.
    expect(
      placeRequest(policy(), keyed, makeView(ids(5).map((id) => makeState(id))), new LocalState(CONFIG)),
    ).toMatchObject({ branch: 'ring', replica: { id: keyHome } });
  });

  it('spillChoices: a cold prompt compares the first d admissible ring members and takes the shortest published queue', () => {
    const req = preq(chat('a cold prompt'));
    const n = 8;
    // The ring order of this prompt's key: each replica in turn made the only admissible one.
    const order: string[] = [];
    for (let k = 0; k < n; k++) {
      const full = makeView(
        ids(n).map((id) => makeState(id, { load: order.includes(id) ? { inflightTokens: 10_000_000 } : {} })),
      );
      order.push(placeRequest(policy(), req, full, new LocalState(CONFIG)).replica!.id);
    }
    // Queues fall along the ring: 6k, 5k, 4k, 3k, … tokens.
    const queued = makeView(
      ids(n).map((id) => makeState(id, { load: { prefillTokens: 6_000 - 1_000 * order.indexOf(id) } })),
    );
    // The choices alone (spill-least-queued, which would go on along the ring to any shorter queue, off).
    const choices = (d: number) =>
      createWarmpathPolicy(warmpathOptions(routerConfig({ spillChoices: d, placementOff: ['spill-least-queued'] })));
    const two = placeRequest(choices(2), req, queued, new LocalState(CONFIG));
    expect(two).toMatchObject({ branch: 'spill-two-choices', replica: { id: order[1] } });
    const four = placeRequest(choices(4), req, queued, new LocalState(CONFIG));
    expect(four).toMatchObject({ branch: 'spill-two-choices', replica: { id: order[3] } });
    // Equal queues: the ring home keeps it, however many are compared.
    const even = makeView(ids(n).map((id) => makeState(id, { load: { prefillTokens: 1_000 } })));
    expect(
      placeRequest(
        createWarmpathPolicy(warmpathOptions(routerConfig({ spillChoices: 4 }))),
        req,
        even,
        new LocalState(CONFIG),
      ),
    ).toMatchObject({ branch: 'ring', replica: { id: order[0] } });
  });

  it('balance: a prefix warm on several replicas, all over their share, warms an idle replica too', () => {
    const sysChain = chainOf(chat(''), 13);
    const warm = (id: string) =>
      makeState(id, { load: { inflightTokens: 40_000 }, digest: { from: -1, added: sysChain, size: sysChain.length } });
    const view = makeView([...ids(7).map(warm), makeState('idle')]);
    expect(placeRequest(policy(), preq(chat('a new session')), view, new LocalState(CONFIG))).toMatchObject({
      branch: 'balance',
      replica: { id: 'idle' },
    });
    // Only a nearly idle replica warms it: at about half its share (20k against a mean of 37.5k), it does not.
    const half = makeView([...ids(7).map(warm), makeState('idle', { load: { inflightTokens: 20_000 } })]);
    expect(placeRequest(policy(), preq(chat('a new session')), half, new LocalState(CONFIG)).branch).toBe('warm');
    // A routing key asks for affinity: it stays on a warm replica.
    expect(
      placeRequest(policy(), preq(chat('a new session', { prompt_cache_key: 's1' })), view, new LocalState(CONFIG))
        .branch,
    ).toBe('warm');
    // A history warm on one replica only (a session's home) stays home.
    const body = chat('a long conversation turn '.repeat(100));
    const chain = chainOf(body);
    const home = makeState('home', {
      load: { inflightTokens: 40_000 },
      digest: { from: -1, added: chain, size: chain.length },
    });
    expect(
      placeRequest(
        policy(),
        preq(body),
        makeView([home, ...ids(6).map(warm), makeState('idle')]),
        new LocalState(CONFIG),
      ),
    ).toMatchObject({ branch: 'warm', replica: { id: 'home' } });
    // Balanced load: the warm replicas keep it.
    const even = makeView([...ids(7).map(warm), makeState('idle', { load: { inflightTokens: 36_000 } })]);
    expect(placeRequest(policy(), preq(chat('a new session')), even, new LocalState(CONFIG)).branch).toBe('warm');
  });

  it('balance with several routers: requests sharing a prefix spread over the first idle replicas in ring order, alike on every router', () => {
    const sysChain = chainOf(chat(''), 13);
    const warm = (id: string) =>
      makeState(id, { load: { inflightTokens: 30_000 }, digest: { from: -1, added: sysChain, size: sysChain.length } });
    const view = makeView([...ids(10).map(warm), ...['i0', 'i1', 'i2', 'i3'].map((id) => makeState(id))]);
    const local = new LocalState(CONFIG);
    const alone = new Set<string>();
    const spread = new Set<string>();
    for (let k = 0; k < 40; k++) {
      const req = preq(chat(`session ${k}`));
      const t = buildCandidates(req, view, local)!;
      const w = scanWarmth(req, t, view, local);
      const one = policy().select(req, t, w);
      const many = policy().select(req, { ...t, routers: 8 }, w);
      expect([one.branch, many.branch]).toEqual(['balance', 'balance']);
      alone.add(one.replica!.id);
      spread.add(many.replica!.id);
      // Another router, another policy instance: the same request gets the same target.
      expect(policy().select(req, { ...t, routers: 8 }, w).replica!.id).toBe(many.replica!.id);
    }
    // One router sees its own work at once: the ring's first idle replica. Eight would herd there: they spread.
    expect(alone.size).toBe(1);
    expect(spread.size).toBeGreaterThanOrEqual(3);
    expect([...spread].every((id) => id.startsWith('i'))).toBe(true);
  });

  it('least-loaded: when every replica is over the bound, the least loaded with headroom', () => {
    // A request bigger than the fleet's whole slack makes every replica fail the bound.
    const view = makeView([
      makeState('a', { load: { inflightTokens: 90_000 }, capacity: { kvTokens: 1_000_000 } }),
      makeState('b', { load: { inflightTokens: 70_000 }, capacity: { kvTokens: 1_000_000 } }),
      makeState('c', { load: { inflightTokens: 80_000 }, capacity: { kvTokens: 1_000_000 } }),
    ]);
    const body = chat('y', { max_tokens: 400_000 });
    expect(placeRequest(policy(), preq(body), view, new LocalState(CONFIG))).toMatchObject({
      branch: 'least-loaded',
      replica: { id: 'b' },
    });
  });

  it('saturated: no replica has KV headroom', () => {
    const view = makeView(
      ids(3).map((id) => makeState(id, { capacity: { kvTokens: 10_000 }, load: { kvUsedTokens: 9_990 } })),
    );
    expect(placeRequest(policy(), preq(chat('z', { max_tokens: 100 })), view, new LocalState(CONFIG))).toEqual({
      replica: undefined,
      branch: 'saturated',
    });
  });

  it("counts this router's own work sent since the last report", () => {
    const view = makeView(ids(3).map((id) => makeState(id)));
    const local = new LocalState(CONFIG);
    const p = policy();
    const req = preq(chat('q', { max_tokens: 2_000 }), { now: Date.now() + 10 });
    const home = placeRequest(p, req, view, local).replica!;
    for (let i = 0; i < 4; i++) local.dispatch(home.id, 2_000, req.now);
    const next = placeRequest(p, req, view, local);
    expect(next.branch).toBe('spill');
    expect(next.replica!.id).not.toBe(home.id);
  });

  it('estimates how many routers share the traffic from the in-flight requests replicas publish', () => {
    const t0 = Date.now() - 60_000;
    const local = new LocalState(CONFIG);
    const table = (inflight: number, now: number) =>
      buildCandidates(
        preq(chat('q'), { now }),
        makeView(ids(4).map((id) => makeState(id, { load: { inflight } }))),
        local,
      )!;
    // Nothing of its own in flight: it assumes it is alone.
    expect(table(5, t0 + 60_000).routers).toBe(1);
    // 2 of its requests in r0's and r1's reports (4 of 20 published): 5 routers' worth, with no config.
    for (const id of ['r0', 'r1']) for (let k = 0; k < 2; k++) local.dispatch(id, 100, t0);
    expect(table(5, t0 + 70_000).routers).toBeCloseTo(5, 1);
    // One burst of published work moves the estimate a little (averaged over ~2 s), then it follows.
    const burst = table(25, t0 + 70_100).routers;
    expect(burst).toBeGreaterThan(5);
    expect(burst).toBeLessThan(10);
    expect(table(25, t0 + 90_000).routers).toBeCloseTo(25, 1);
    // Alone, its own requests are all a replica has: 1.
    expect(table(1, t0 + 110_000).routers).toBeCloseTo(1, 2);
    expect(local.routers).toBeCloseTo(1, 2);
  });

  it('optimistic overlay: a burst with a new shared prefix sticks to the first choice before gossip confirms', () => {
    const sys = 'A brand-new shared system prompt. '.repeat(100);
    const view = makeView(ids(8).map((id) => makeState(id)));
    const local = new LocalState(CONFIG);
    const p = policy();
    const now = Date.now();
    const first = placeRequest(p, preq(chat('u0', { prompt_cache_key: 'k0' }, sys), { now }), view, local);
    const firstReq: PlacementRequest = preq(chat('u0', { prompt_cache_key: 'k0' }, sys), { now });
    notifyDispatch(p, firstReq, first.replica!, local);
    // Different routing keys would scatter on the ring; the overlay keeps them warm on the first replica.
    for (let i = 1; i < 6; i++) {
      const r = placeRequest(p, preq(chat(`u${i}`, { prompt_cache_key: `k${i}` }, sys), { now: now + i }), view, local);
      expect(r).toMatchObject({ branch: 'warm', replica: { id: first.replica!.id } });
    }
    // After the overlay expires, routing keys spread again.
    const later = placeRequest(
      p,
      preq(chat('u9', { prompt_cache_key: 'k9' }, sys), { now: now + 60_000 }),
      view,
      local,
    );
    expect(later.branch).not.toBe('warm');
  });

  it('excluded and ejected replicas are skipped (retry path)', () => {
    const view = makeView(ids(3).map((id) => makeState(id)));
    const req = preq(chat('q'));
    const home = placeRequest(policy(), req, view, new LocalState(CONFIG)).replica!.id;
    const retry = placeRequest(policy(), { ...req, exclude: new Set([home]) }, view, new LocalState(CONFIG));
    expect(retry.replica!.id).not.toBe(home);
    const local = new LocalState(CONFIG);
    local.eject(home, req.now + 5_000);
    expect(placeRequest(policy(), req, view, local).replica!.id).not.toBe(home);
  });

  describe('adapters', () => {
    const lora = (id: string, hot: string[], slots = 2) =>
      makeState(id, { adapters: ['a1', 'a2', 'a3'], hotAdapters: hot, capacity: { adapterSlots: slots } });

    it('a cold prefix goes to a replica with the adapter hot before a free slot, in the adapter ring order', () => {
      const ring = (view: ReturnType<typeof makeView>) =>
        placeRequest(policy(), preq(chat('q', { model: 'a2' }), { view }), view, new LocalState(CONFIG));
      const home = ring(makeView([lora('r0', []), lora('r1', []), lora('r2', [])])).replica!.id;
      expect(ring(makeView([lora('r0', []), lora('r1', []), lora('r2', [])]))).toMatchObject({
        branch: 'adapter-home',
        replica: { id: home },
      });
      // The adapter hot on a replica past its ring home, which still has a free slot: the hot one takes it.
      const hot = ['r0', 'r1', 'r2'].find((id) => id !== home)!;
      const view = makeView(['r0', 'r1', 'r2'].map((id) => lora(id, id === hot ? ['a2'] : [])));
      expect(ring(view)).toMatchObject({ branch: 'adapter-spill', replica: { id: hot } });
    });

    it('a warm prefix keeps an adapter request where the adapter is not hot; among equally warm replicas, the hot one wins', () => {
      const body = chat('q '.repeat(400), { model: 'a2' });
      const chain = preq(body, { view: makeView([lora('r0', ['a2'])]) }).info.hashes;
      const digest = { from: -1, added: chain, size: chain.length };
      const state = (id: string, hot: string[], warm: boolean) =>
        makeState(id, {
          adapters: ['a1', 'a2', 'a3'],
          hotAdapters: hot,
          capacity: { adapterSlots: 2 },
          ...(warm ? { digest } : {}),
        });
      const cold = makeView([state('warm', ['a1'], true), state('hot', ['a2'], false), state('r2', [], false)]);
      expect(placeRequest(policy(), preq(body, { view: cold }), cold, new LocalState(CONFIG))).toMatchObject({
        branch: 'warm',
        replica: { id: 'warm' },
      });
      const tied = makeView([state('warm', ['a1'], true), state('warm-hot', ['a2'], true), state('r2', [], false)]);
      expect(placeRequest(policy(), preq(body, { view: tied }), tied, new LocalState(CONFIG))).toMatchObject({
        branch: 'warm',
        replica: { id: 'warm-hot' },
      });
    });

    it('sends cold loads of one adapter to its ring home, whatever the prompt', () => {
      const view = makeView([lora('r0', []), lora('r1', []), lora('r2', []), lora('r3', [])]);
      const picks = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const p = placeRequest(
          policy(),
          preq(chat(`prompt ${i}`, { model: 'a3' }), { view }),
          view,
          new LocalState(CONFIG),
        );
        expect(p.branch).toBe('adapter-home');
        picks.add(p.replica!.id);
      }
      expect(picks.size).toBe(1);
    });

    it('a free slot beats evicting: walks past full replicas', () => {
      const home = placeRequest(
        policy(),
        preq(chat('q', { model: 'a3' }), { view: makeView([lora('r0', []), lora('r1', []), lora('r2', [])]) }),
        makeView([lora('r0', []), lora('r1', []), lora('r2', [])]),
        new LocalState(CONFIG),
      ).replica!.id;
      const view = makeView(['r0', 'r1', 'r2'].map((id) => (id === home ? lora(id, ['a1', 'a2'], 2) : lora(id, []))));
      const p = placeRequest(policy(), preq(chat('q', { model: 'a3' }), { view }), view, new LocalState(CONFIG));
      expect(p.branch).toBe('adapter-spill');
      expect(p.replica!.id).not.toBe(home);
    });
  });

  it('embeddings go to the least-loaded replica offering the endpoint', () => {
    const view = makeView([
      makeState('e1', { endpoints: ['embedding'], load: { inflightTokens: 100 } }),
      makeState('e2', { endpoints: ['embedding'], load: { inflightTokens: 10 } }),
      makeState('c', { load: { inflightTokens: 0 } }),
    ]);
    expect(
      placeRequest(policy(), preq({ model: 'm', input: 'x' }, { kind: 'embedding' }), view, new LocalState(CONFIG)),
    ).toMatchObject({ branch: 'embedding-least-loaded', replica: { id: 'e2' } });
  });
});
