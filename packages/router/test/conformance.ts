/**
 * One conformance suite for every policy (hono's common.case.test.ts habit):
 * whatever a policy does, it must only ever pick an eligible replica and name
 * one of its branches. The router runs it over the product's policies
 * (conformance.test.ts); the benchmark runs it over its emulations of peer
 * routers (packages/bench/test/peers/), through `@warmpath/router/testing`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eligible } from '../src/placement/eligible.ts';
import { LocalState } from '../src/core/local.ts';
import { notifyComplete, notifyDispatch, placeRequest } from '../src/placement/place.ts';
import { buildCandidates, scanWarmth } from '../src/placement/candidates.ts';
import { BRANCHES, type PlacementRequest, type Policy } from '../src/placement/types.ts';
import { CONFIG, chainOf, chat, makeState, makeView, preq } from './helpers.ts';

export interface ConformanceOptions {
  /** The branches the policy may name besides the router's own (BRANCHES): an emulation's. */
  readonly branches?: readonly string[];
  /** The policy gives the same answer for the same (request, view, local). */
  readonly deterministic: boolean;
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/**
 * Freezes a value and everything reachable from it; Maps and Sets throw on
 * writes too. Typed arrays cannot be frozen (the chain hashes, digest tables)
 * and are left as they are; an object already frozen is taken as done.
 */
function deepFreeze<T>(value: T, seen = new WeakSet<object>()): T {
  if (
    typeof value !== 'object' ||
    value === null ||
    ArrayBuffer.isView(value) ||
    seen.has(value) ||
    Object.isFrozen(value)
  )
    return value;
  seen.add(value);
  const readOnly = () => {
    throw new TypeError('write to a frozen input');
  };
  if (value instanceof Map || value instanceof Set) {
    for (const m of ['set', 'add', 'delete', 'clear'] as const)
      if (m in value) Object.defineProperty(value, m, { value: readOnly });
    for (const [k, v] of value instanceof Map ? value : new Map([...value].map((x) => [x, x]))) {
      deepFreeze(k, seen);
      deepFreeze(v, seen);
    }
  }
  for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<string | symbol, unknown>)[key], seen);
  return Object.freeze(value);
}

const fleet = () => {
  const now = Date.now();
  return makeView([
    makeState('ok1'),
    makeState('ok2', { load: { inflightTokens: 500 } }),
    makeState('ok3', { capacity: { weight: 2 } }),
    makeState('drain', { status: 'draining' }),
    makeState('down', { status: 'down' }),
    makeState('stale', { sentAt: now - 60_000 }),
    makeState('other-model', { models: ['x'] }),
    makeState('odd-chunks', { chunkChars: 64 }),
    makeState('no-chat', { endpoints: ['embedding'] }),
    makeState('zero-weight', { capacity: { weight: 0 } }),
  ]);
};

/** Registers the suite for the policy `name`; `create` builds a fresh instance with the given random source. */
export function policyConformance(name: string, create: (random: () => number) => Policy, o: ConformanceOptions): void {
  const known: readonly string[] = [...BRANCHES, ...(o.branches ?? [])];
  describe(`policy conformance: ${name}`, () => {
    const make = (): Policy => create(seeded(7));

    it('never picks an ineligible, excluded, not-ready, stale or foreign replica, and names a known branch', () => {
      const view = fleet();
      // Make 'stale' actually stale for the view's clock.
      view.apply(makeState('stale', { seq: 2, sentAt: Date.now() - 60_000 }), Date.now() - 60_000);
      view.sweep();
      const policy = make();
      const local = new LocalState(CONFIG);
      fc.assert(
        fc.property(
          fc.string({ maxLength: 600 }),
          fc.subarray(['ok1', 'ok2', 'ok3']),
          fc.option(fc.string({ minLength: 1, maxLength: 8 })),
          fc.option(fc.string({ maxLength: 8 })),
          (text, excluded, key, session) => {
            const body = chat(text, key === null ? {} : { prompt_cache_key: key });
            const req = preq(body, {
              exclude: new Set(excluded),
              ...(session === null ? {} : { sessionHeader: session }),
            });
            const p = placeRequest(policy, req, view, local);
            expect(known).toContain(p.branch);
            if (excluded.length === 3) {
              expect(p.replica).toBeUndefined();
              expect(p.branch).toBe('no-replica');
              return;
            }
            expect(p.replica).toBeDefined();
            expect(['ok1', 'ok2', 'ok3']).toContain(p.replica!.id);
            expect(excluded).not.toContain(p.replica!.id);
            expect(eligible(p.replica!, req, view, local)).toBe(true);
            const t = local.dispatch(p.replica!.id, 10, req.now);
            notifyDispatch(policy, req, p.replica!, local);
            local.complete(t, req.now);
            notifyComplete(policy, req, p.replica!, { kind: 'ok' });
          },
        ),
        { numRuns: 150 },
      );
    });

    it('answers no-replica for an unknown model, an empty fleet and a fleet with nobody ready', () => {
      const policy = make();
      const local = new LocalState(CONFIG);
      expect(placeRequest(policy, preq(chat('hi', { model: 'nope' })), fleet(), local)).toMatchObject({
        replica: undefined,
        branch: 'no-replica',
      });
      expect(placeRequest(policy, preq(chat('hi')), makeView(), local)).toMatchObject({
        replica: undefined,
        branch: 'no-replica',
      });
      const nobody = makeView([makeState('a', { status: 'draining' }), makeState('b', { status: 'down' })]);
      expect(placeRequest(policy, preq(chat('hi')), nobody, local)).toMatchObject({
        replica: undefined,
        branch: 'no-replica',
      });
    });

    it('only picks replicas serving the adapter when one is asked for', () => {
      const view = makeView([
        makeState('base'),
        makeState('lora', { adapters: ['fin'], capacity: { adapterSlots: 2 } }),
      ]);
      const policy = make();
      for (let i = 0; i < 20; i++) {
        const p = placeRequest(policy, preq(chat(`q${i}`, { model: 'fin' }), { view }), view, new LocalState(CONFIG));
        expect(p.replica?.id).toBe('lora');
      }
    });

    it('only routes an endpoint to replicas that offer it', () => {
      const view = makeView([makeState('chat'), makeState('emb', { endpoints: ['embedding'] })]);
      const policy = make();
      const p = placeRequest(
        policy,
        preq({ model: 'm', input: 'hello' }, { kind: 'embedding' }),
        view,
        new LocalState(CONFIG),
      );
      expect(p.replica?.id).toBe('emb');
    });

    it.runIf(o.deterministic)('is deterministic given the same inputs', () => {
      const a = make();
      const b = make();
      const va = fleet();
      const vb = fleet();
      for (let i = 0; i < 50; i++) {
        const body = chat(`question ${i} `.repeat(i));
        const req = preq(body, i % 2 === 0 ? {} : { sessionHeader: `s${i % 7}` });
        expect(placeRequest(a, req, va, new LocalState(CONFIG)).replica?.id).toBe(
          placeRequest(b, req, vb, new LocalState(CONFIG)).replica?.id,
        );
      }
    });

    it('select is pure: the same deep-frozen request, table and warmth give the same answer twice', () => {
      const warmBody = chat('a conversation that is warm somewhere '.repeat(40));
      const chain = chainOf(warmBody);
      const lora = { adapters: ['fin'], hotAdapters: ['fin'], capacity: { adapterSlots: 2 } };
      const view = makeView([
        makeState('r0', {
          ...lora,
          load: { inflightTokens: 30_000, prefillTokens: 2_000 },
          digest: { from: -1, added: chain, size: chain.length },
        }),
        makeState('r1', { load: { inflightTokens: 500 }, digest: { from: -1, added: chain.slice(0, 13), size: 13 } }),
        makeState('r2', { capacity: { weight: 2 }, load: { waiting: 3, kvUsedTokens: 20_000 } }),
        makeState('r3', { ...lora, endpoints: ['chat', 'embedding'] }),
        makeState('r4', { load: { inflightTokens: 90_000 } }),
      ]);
      const local = new LocalState(CONFIG);
      const requests: PlacementRequest[] = [
        preq(warmBody),
        preq(chat('a cold prompt')),
        preq(chat('a keyed call', { prompt_cache_key: 'session-1' })),
        preq(chat('a session turn'), { sessionHeader: 'session-2' }),
        preq(chat('an adapter call', { model: 'fin' }), { view }),
        preq(chat('y', { max_tokens: 400_000 })),
        preq({ model: 'm', input: 'embed me' }, { kind: 'embedding' }),
      ];
      // Learn something first, as a running router would (trees, LRUs, counters, the overlay).
      const learner = create(() => 0.37);
      for (const req of requests.slice(0, 4)) {
        const p = placeRequest(learner, req, view, local);
        if (p.replica !== undefined) notifyDispatch(learner, req, p.replica, local);
      }
      for (const req of requests) {
        const built = buildCandidates(req, view, local)!;
        const scanned = scanWarmth(req, built, view, local);
        // A router reuses its table's storage for its next request: freeze copies (plain arrays, so that they freeze too).
        const table = { ...built, rows: built.rows.map((r) => ({ ...r })), rowOfSlot: Array.from(built.rowOfSlot) };
        const warmth = { digest: [...scanned.digest], overlay: [...scanned.overlay], warm: [...scanned.warm] };
        deepFreeze(req);
        deepFreeze(table);
        deepFreeze(warmth);
        const first = learner.select(req, table, warmth);
        const again = learner.select(req, table, warmth);
        expect(known).toContain(first.branch);
        expect(again).toStrictEqual(first);
      }
    });
  });
}
