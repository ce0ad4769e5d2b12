/**
 * The compact wire form (compact.ts): lossless against the map form, a
 * bounded size, the static fields left out and filled from the state a
 * receiver holds (or the message dropped as `no_base`), and fields it does
 * not know carried through.
 */
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { decodeState, encodeState, encodeStateMap, type ReplicaState } from '../src/protocol.ts';
import { sampleState as sample } from './sample-state.ts';

/** The shared sample with this file's digest (its size figures below are of this state). */
function sampleState(over: Partial<ReplicaState> = {}): ReplicaState {
  const digest = {
    from: 6,
    size: 3,
    added: BigUint64Array.from([1n, 2n ** 64n - 1n]),
    removed: BigUint64Array.from([9n]),
  };
  return sample({ digest, ...over });
}

/** A live agent's ids and URLs: a host:port replica id, a UUID boot, a Hugging Face model name. */
const live = (over: Partial<ReplicaState> = {}): ReplicaState =>
  sampleState({
    replica: 'gpu-host-0417.cluster.local:8080',
    boot: '6f1d3c2a-9b7e-4c1e-8f3a-2d5b6e7f8a9b',
    url: 'http://10.0.3.17:8080',
    admin: 'http://10.0.3.17:8081',
    endpoints: ['chat', 'completion', 'responses'],
    load: {
      running: 13,
      waiting: 2,
      kvUsedTokens: 212_000,
      inflight: 15,
      inflightTokens: 24_000,
      prefillTokens: 3_100,
      arrivalTokensPerS: 52_311,
      recentTokensPerS: 31_000,
      lowerInflight: 3,
      itlP99Ms: 41.7,
    },
    digest: { from: 6, size: 3_000, added: new BigUint64Array(0), removed: new BigUint64Array(0) },
    ...over,
  });
const held = (s: ReplicaState) => () => ({ ...s, seq: s.seq - 1 });

describe('compact state encoding', () => {
  it('round-trips every field, and the map form still decodes to the same state', () => {
    for (const s of [sampleState(), live(), live({ status: 'draining', hotAdapters: ['a', 'b'], endpoints: [] })]) {
      const c = decodeState(encodeState(s));
      const m = decodeState(encodeStateMap(s));
      expect(c.ok && c.value).toEqual(s);
      expect(m.ok && m.value).toEqual(s);
    }
  });

  it('round-trips a state with every optional field the protocol has, whole and with the static fields filled', () => {
    // Typed Required: a field protocol.ts adds and this state does not set fails the type check.
    const every: Required<Omit<ReplicaState, 'staticSeq' | 'load'>> & { load: Required<ReplicaState['load']> } = {
      ...(live() as ReplicaState & { load: Required<ReplicaState['load']> }),
      group: 'llama-8b',
      role: 'prefill',
      zone: 'rack-7',
      kvBootstrap: '10.0.3.17:8998',
      digest: {
        from: 6,
        size: 4,
        added: BigUint64Array.from([5n]),
        removed: BigUint64Array.from([6n]),
        host: BigUint64Array.from([7n, 8n]),
        gpu: BigUint64Array.from([2n ** 63n]),
      },
    };
    // Every key the protocol declares is set, so a field the compact form forgot fails here.
    const keys = Object.entries({ ...every, ...every.load }).filter(([, x]) => x === undefined);
    expect(keys).toEqual([]);
    const c = decodeState(encodeState(every));
    expect(c.ok && c.value).toEqual(every);
    const filled = decodeState(encodeState({ ...every, seq: 9, staticSeq: 6 }), held(every));
    expect(filled.ok && filled.value).toEqual({ ...every, seq: 9 });
    // A decode role travels as an index too; no optional field lands in the extra map.
    const raw = new Packr({ useRecords: false }).unpack(encodeState({ ...every, role: 'decode' })) as unknown[];
    expect(raw).toHaveLength(5);
  });

  it('a state without its digest fits in 250 bytes (under half the map form), 170 with the static fields left out', () => {
    const s = live();
    const compact = encodeState(s).byteLength;
    expect(compact).toBeLessThanOrEqual(250);
    expect(compact).toBeLessThan(encodeStateMap(s).byteLength / 2);
    expect(encodeState({ ...s, staticSeq: 3 }).byteLength).toBeLessThanOrEqual(170);
    // A digest hash costs its 8 bytes and nothing more.
    const added = BigUint64Array.from({ length: 100 }, (_, i) => BigInt(i) * 0x9e3779b97f4a7c15n);
    expect(encodeState({ ...s, digest: { ...s.digest, added } }).byteLength - compact).toBeLessThanOrEqual(802);
  });

  it('fills the static fields left out from the held state of that boot, at least as recent', () => {
    const s = live({ seq: 9, staticSeq: 4 });
    const bytes = encodeState(s);
    const { staticSeq: _, ...whole } = s;
    const held = live({ seq: 4 });
    const ok = decodeState(bytes, () => held);
    expect(ok.ok && ok.value).toEqual(whole);
    // Taken from the held state as they are (validated when it was)...
    expect(ok.ok && ok.value.models).toBe(held.models);
    // ...unless the message's extra map replaces one: that one is validated.
    const packr = new Packr({ useRecords: false });
    const raw = packr.unpack(bytes) as unknown[];
    const withExtra = (extra: object): Uint8Array =>
      packr.pack(raw.length === 6 ? [...raw.slice(0, 5), { ...(raw[5] as object), ...extra }] : [...raw, extra]);
    const bad = decodeState(withExtra({ url: 42 }), () => held);
    expect(!bad.ok && bad.reason).toBe('invalid');
    const moved = decodeState(withExtra({ url: 'http://10.0.0.9:8000' }), () => held);
    expect(moved.ok && moved.value.url).toBe('http://10.0.0.9:8000');
    for (const base of [undefined, { ...s, boot: 'another boot', seq: 8 }, { ...s, seq: 3 }]) {
      const d = decodeState(bytes, () => base);
      expect(!d.ok && d.reason).toBe('no_base');
    }
  });

  it('carries fields it does not know and figures it cannot place, so a newer agent loses nothing', () => {
    const s = { ...live(), tier: 'gold', sentAt: 1_700_000_000_500.25 } as ReplicaState;
    const raw = new Packr({ useRecords: false }).unpack(encodeState(s)) as unknown[];
    expect(raw.at(-1)).toMatchObject({ tier: 'gold', sentAt: 1_700_000_000_500.25 });
    const d = decodeState(encodeState({ ...s, engine: 'vllm' }), held(s));
    expect(d.ok && d.value.sentAt).toBe(1_700_000_000_500.25);
  });
});
