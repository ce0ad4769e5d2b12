/**
 * Coalescing an agent's states (coalesce.ts): a composed delta does to any
 * digest what the deltas did in order, against a model of the receiver's
 * steps (router digest-sync.ts: removed, added, gpu, host where held); and
 * the composed state is the newer one with that delta, or nothing where the
 * rules say not to compose.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coalesceStates, composeDeltas, type HashDelta } from '../src/coalesce.ts';
import { decodeState, encodeState, encodeStateMap, type ReplicaState } from '../src/protocol.ts';
import { sampleState } from './sample-state.ts';

interface Digest {
  held: Set<bigint>;
  host: Set<bigint>;
}

/** The receiver's steps for one delta (digest-sync.ts #applyDelta, then tiers). */
function apply(d: Digest, delta: HashDelta): Digest {
  const held = new Set(d.held);
  const host = new Set(d.host);
  for (const h of delta.removed) (held.delete(h), host.delete(h));
  for (const h of delta.added) (held.add(h), host.delete(h));
  for (const h of delta.gpu ?? []) host.delete(h);
  for (const h of delta.host ?? []) if (held.has(h)) host.add(h);
  return { held, host };
}

const HASHES = 10;
const list = fc.uniqueArray(fc.integer({ min: 0, max: HASHES - 1 }), { maxLength: HASHES });
const big = (xs: number[]): BigUint64Array => BigUint64Array.from(xs.map((x) => BigInt(x) * 0x9e3779b97f4a7c15n));
const delta = fc
  .record({ added: list, removed: list, host: list, gpu: list })
  .map((d) => ({ added: big(d.added), removed: big(d.removed), host: big(d.host), gpu: big(d.gpu) }));
/** A digest: held hashes, some of them in host memory only (never a host hash that is not held). */
const digest = fc.array(fc.constantFrom(0, 1, 2), { minLength: HASHES, maxLength: HASHES }).map((standing) => ({
  held: new Set(big(standing.flatMap((s, i) => (s > 0 ? [i] : [])))),
  host: new Set(big(standing.flatMap((s, i) => (s === 2 ? [i] : [])))),
}));

describe('composeDeltas', () => {
  it('applying the composed delta to any digest equals applying the deltas in order', () => {
    fc.assert(
      fc.property(digest, fc.array(delta, { minLength: 2, maxLength: 5 }), (start, deltas) => {
        let composed: HashDelta = deltas[0]!;
        for (const d of deltas.slice(1)) composed = composeDeltas(composed, d)!;
        const inOrder = deltas.reduce(apply, start);
        expect(apply(start, composed)).toEqual(inOrder);
      }),
      { numRuns: 2_000 },
    );
  });

  it('the model tells a wrong composition: unions of the lists lose a hash added, then removed', () => {
    const [x] = big([1]);
    const a = { added: BigUint64Array.of(x!), removed: new BigUint64Array(0) };
    const b = { added: new BigUint64Array(0), removed: BigUint64Array.of(x!) };
    const start = { held: new Set<bigint>(), host: new Set<bigint>() };
    const union = { added: a.added, removed: b.removed }; // removed first, then added: x ends held
    expect(apply(start, union)).not.toEqual(apply(apply(start, a), b));
    const c = composeDeltas(a, b)!;
    expect([...c.added, ...c.removed]).toEqual([x]); // named removed only: a no-op where x was never held
    expect(c.removed).toEqual(BigUint64Array.of(x!));
  });
});

const FULL = 1;
const state = (seq: number, from: number, over: Partial<ReplicaState> = {}): ReplicaState =>
  sampleState({
    seq,
    sentAt: 1_700_000_000_000 + seq * 100,
    load: { ...sampleState().load, running: seq },
    digest: { from, size: 3, added: big([seq]), removed: big([seq - 1]) },
    ...over,
  });
const compact = (seq: number, from: number, over: Partial<ReplicaState> = {}): ReplicaState =>
  state(seq, from, { staticSeq: FULL, ...over });

describe('coalesceStates', () => {
  it('is the newer state with the composed delta, following what the older one followed', () => {
    const older = state(8, 7);
    const newer = state(9, 8, { status: 'draining', hotAdapters: ['sql-lora'] });
    const out = decodeState(coalesceStates(encodeState(older), encodeState(newer))!);
    expect(out.ok).toBe(true);
    const s = out.ok ? out.value : undefined;
    const d = composeDeltas(older.digest, newer.digest)!;
    expect(s).toEqual({ ...newer, digest: { ...newer.digest, from: 7, added: d.added, removed: d.removed } });
    expect(s!.digest.added).toEqual(big([9])); // 8 added, then removed by 9
    expect(s!.digest.removed).toEqual(big([7, 8]));
  });

  it("carries the older state's static fields when the newer left them out; both left out, the earlier staticSeq", () => {
    const older = state(8, 7, { models: ['m-only-here'] });
    const newer = compact(9, 8, { models: ['m-only-here'] });
    const out = coalesceStates(encodeState(older), encodeState(newer))!;
    expect(out.byteLength).toBeGreaterThan(encodeState(newer).byteLength);
    const s = decodeState(out); // no base given: it decodes only if it is whole
    expect(s.ok && s.value.models).toEqual(['m-only-here']);
    expect(s.ok && s.value.seq).toBe(9);
    // Both compact: the result still leaves them out, asking for the earlier of the two.
    const both = coalesceStates(encodeState(compact(8, 7, { staticSeq: 2 })), encodeState(compact(9, 8)))!;
    expect(decodeState(both).ok).toBe(false);
    const base = (seq: number) => () => state(seq, seq - 1);
    expect(decodeState(both, base(1)).ok).toBe(true);
    expect(decodeState(both, base(0)).ok).toBe(false);
  });

  it('does not compose another boot, a gap, a self-contained digest, another replica or the map form', () => {
    const older = encodeState(state(8, 7));
    const no = (newer: ReplicaState, o = older) => expect(coalesceStates(o, encodeState(newer))).toBeUndefined();
    no(state(9, 8, { boot: 'b2' }));
    no(state(9, 8, { bootAt: 1 }));
    no(state(10, 9)); // a gap: 9 never came here
    no(state(9, 8, { replica: 'r2' }));
    no(state(9, -1));
    no(state(9, 8), encodeState(state(8, -1)));
    expect(coalesceStates(encodeStateMap(state(8, 7)), encodeState(state(9, 8)))).toBeUndefined();
    expect(coalesceStates(new TextEncoder().encode('s1'), new TextEncoder().encode('s2'))).toBeUndefined();
    expect(coalesceStates(older, encodeState(state(9, 8)))).toBeDefined();
  });
});
