/**
 * One conformance suite for every policy in the registry (hono's
 * common.case.test.ts habit): whatever a policy does, it must only ever pick
 * an eligible replica and name its branch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eligible } from '../src/placement/eligible.ts';
import { LocalState } from '../src/placement/local.ts';
import { createPolicy, POLICIES } from '../src/placement/registry.ts';
import { BRANCHES, type Policy } from '../src/placement/types.ts';
import { CONFIG, chat, makeState, makeView, preq } from './helpers.ts';

const OPTS = { chunkChars: 256, charsPerToken: 4, loadFactor: 1.25 };
/** Deterministic policies give the same answer for the same (request, view, local). */
const DETERMINISTIC = new Set(['warmpath', 'round-robin', 'least-request', 'consistent-hash']);

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
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

for (const name of POLICIES.keys()) {
  describe(`policy conformance: ${name}`, () => {
    const make = (): Policy => createPolicy(name, { ...OPTS, random: seeded(7) });

    it('never picks an ineligible, excluded, not-ready, stale or foreign replica, and names a known branch', () => {
      const view = fleet();
      // Make 'stale' actually stale for the view's clock.
      view.apply(makeState('stale', { seq: 2, sentAt: Date.now() - 60_000 }), Date.now() - 60_000);
      view.sweep();
      const policy = make();
      const local = new LocalState(CONFIG);
      fc.assert(
        fc.property(fc.string({ maxLength: 600 }), fc.subarray(['ok1', 'ok2', 'ok3']), fc.option(fc.string({ minLength: 1, maxLength: 8 })), (text, excluded, key) => {
          const body = chat(text, key === null ? {} : { prompt_cache_key: key });
          const req = preq(body, { exclude: new Set(excluded) });
          const p = policy.place(req, view, local);
          expect(BRANCHES as readonly string[]).toContain(p.branch);
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
          policy.onDispatch?.(req, p.replica!, local);
          local.complete(t);
          policy.onComplete?.(req, p.replica!, { kind: 'ok' });
        }),
        { numRuns: 150 },
      );
    });

    it('answers no-replica for an unknown model, an empty fleet and a fleet with nobody ready', () => {
      const policy = make();
      const local = new LocalState(CONFIG);
      expect(policy.place(preq(chat('hi', { model: 'nope' })), fleet(), local)).toMatchObject({ replica: undefined, branch: 'no-replica' });
      expect(policy.place(preq(chat('hi')), makeView(), local)).toMatchObject({ replica: undefined, branch: 'no-replica' });
      const nobody = makeView([makeState('a', { status: 'draining' }), makeState('b', { status: 'down' })]);
      expect(policy.place(preq(chat('hi')), nobody, local)).toMatchObject({ replica: undefined, branch: 'no-replica' });
    });

    it('only picks replicas serving the adapter when one is asked for', () => {
      const view = makeView([makeState('base'), makeState('lora', { adapters: ['fin'], capacity: { adapterSlots: 2 } })]);
      const policy = make();
      for (let i = 0; i < 20; i++) {
        const p = policy.place(preq(chat(`q${i}`, { model: 'fin' }), { view }), view, new LocalState(CONFIG));
        expect(p.replica?.id).toBe('lora');
      }
    });

    it('only routes an endpoint to replicas that offer it', () => {
      const view = makeView([makeState('chat'), makeState('emb', { endpoints: ['embedding'] })]);
      const policy = make();
      const p = policy.place(preq({ model: 'm', input: 'hello' }, { kind: 'embedding' }), view, new LocalState(CONFIG));
      expect(p.replica?.id).toBe('emb');
    });

    it.runIf(DETERMINISTIC.has(name))('is deterministic given the same inputs', () => {
      const a = make();
      const b = make();
      const va = fleet();
      const vb = fleet();
      for (let i = 0; i < 50; i++) {
        const body = chat(`question ${i} `.repeat(i));
        const req = preq(body);
        expect(a.place(req, va, new LocalState(CONFIG)).replica?.id).toBe(b.place(req, vb, new LocalState(CONFIG)).replica?.id);
      }
    });
  });
}
