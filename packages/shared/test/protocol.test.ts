import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Packr } from 'msgpackr';
import {
  decodeSnapshot,
  decodeState,
  encodeSnapshot,
  encodeState,
  encodeStateMap,
  LIMITS,
  packHashes,
  supersedes,
  unpackHashes,
} from '../src/protocol.ts';
import { sampleState } from './sample-state.ts';

describe('state message codec', () => {
  it('round-trips, including full-range u64 hashes', () => {
    const s = sampleState();
    const d = decodeState(encodeState(s));
    expect(d.ok).toBe(true);
    if (d.ok) expect(d.value).toEqual(s);
  });

  it('unpacks hashes little-endian from any view: a Buffer within a larger pool, an odd offset', () => {
    const hashes = [0n, 1n, 0x0123456789abcdefn, 0xffffffffffffffffn, 0x8000000000000001n];
    const packed = packHashes(hashes);
    const pool = Buffer.alloc(packed.byteLength + 11, 0xee);
    pool.set(packed, 3); // a Buffer's slice would share the pool: unpacking must copy only the hashes
    for (const view of [packed, pool.subarray(3, 3 + packed.byteLength)]) {
      const out = unpackHashes(view);
      expect(out).toBeInstanceOf(BigUint64Array);
      expect([...out]).toEqual(hashes);
    }
    expect([...unpackHashes(pool.subarray(3, 3 + packed.byteLength + 5))]).toEqual(hashes); // a trailing partial hash is dropped
  });

  it('carries the arrival and recent rates when sent, and decodes a message from an agent that sends none', () => {
    const s = sampleState({ load: { ...sampleState().load, arrivalTokensPerS: 52_000, recentTokensPerS: 31_000 } });
    const d = decodeState(encodeState(s));
    expect(d.ok && d.value.load.arrivalTokensPerS).toBe(52_000);
    expect(d.ok && d.value.load.recentTokensPerS).toBe(31_000);
    const old = decodeState(encodeState(sampleState()));
    expect(old.ok && 'arrivalTokensPerS' in old.value.load).toBe(false);
    expect(old.ok && 'recentTokensPerS' in old.value.load).toBe(false);
    for (const field of ['arrivalTokensPerS', 'recentTokensPerS']) {
      const bad = decodeState(encodeState(sampleState({ load: { ...sampleState().load, [field]: -1 } })));
      expect(bad.ok).toBe(false);
    }
  });

  it("carries the lower bands' requests in flight when sent (the shared reserve); none is absent; a fraction is invalid", () => {
    const s = sampleState({ load: { ...sampleState().load, lowerInflight: 3 } });
    const d = decodeState(encodeState(s));
    expect(d.ok && d.value.load.lowerInflight).toBe(3);
    const old = decodeState(encodeState(sampleState()));
    expect(old.ok && 'lowerInflight' in old.value.load).toBe(false);
    const bad = decodeState(encodeState(sampleState({ load: { ...sampleState().load, lowerInflight: 1.5 } })));
    expect(bad.ok).toBe(false);
  });

  it("carries the engine's measured ITL p99 when sent; none is absent; a negative one is invalid", () => {
    const s = sampleState({ load: { ...sampleState().load, itlP99Ms: 41.7 } });
    const d = decodeState(encodeState(s));
    expect(d.ok && d.value.load.itlP99Ms).toBe(41.7);
    const old = decodeState(encodeState(sampleState()));
    expect(old.ok && 'itlP99Ms' in old.value.load).toBe(false);
    const bad = decodeState(encodeState(sampleState({ load: { ...sampleState().load, itlP99Ms: -1 } })));
    expect(bad.ok).toBe(false);
  });

  it("carries a disaggregated replica's role, zone and KV bootstrap; an aggregated one sends none; a bad role is invalid", () => {
    const pd = sampleState({ role: 'prefill', zone: 'rack-7', kvBootstrap: '10.0.0.5:8998' });
    const got = decodeState(encodeState(pd));
    expect(got.ok && got.value).toMatchObject({ role: 'prefill', zone: 'rack-7', kvBootstrap: '10.0.0.5:8998' });
    const plain = decodeState(encodeState(sampleState()));
    expect(plain.ok && 'role' in plain.value).toBe(false);
    const bad = decodeState(encodeState(sampleState({ role: 'sideways' as 'both' })));
    expect(bad).toMatchObject({ ok: false, reason: 'invalid' });
  });

  it('keeps a 450k-token replica digest well under 100 KB', () => {
    // 450k tokens ≈ 1.8M chars ≈ 7,031 chunks of 256 chars.
    const added = BigUint64Array.from({ length: 7_031 }, (_, i) => (BigInt(i) * 0x9e3779b97f4a7c15n) % 2n ** 64n);
    const bytes = encodeState(
      sampleState({ digest: { from: -1, size: added.length, added, removed: new BigUint64Array(0) } }),
    );
    expect(bytes.byteLength).toBeLessThan(64 * 1024);
  });

  it('rejects with a reason, never throws', () => {
    const packr = new Packr({ useRecords: false });
    const cases: Array<[Uint8Array, string]> = [
      [new Uint8Array([0xc1]), 'malformed'],
      [packr.pack({ ...sampleState(), v: 2 }), 'version'],
      [packr.pack({ v: 1, fleet: 3 }), 'invalid'],
      [packr.pack({ ...encodeAsObject(), seq: -1 }), 'invalid'],
      [packr.pack({ ...encodeAsObject(), status: 'sleepy' }), 'invalid'],
      [packr.pack({ ...encodeAsObject(), models: Array(LIMITS.listItems + 1).fill('m') }), 'invalid'],
      [packr.pack({ ...encodeAsObject(), url: 'x'.repeat(LIMITS.urlChars + 1) }), 'invalid'],
      [packr.pack({ ...encodeAsObject(), load: { running: Number.NaN } }), 'invalid'],
      [new Uint8Array(LIMITS.messageBytes + 1), 'too_large'],
    ];
    for (const [bytes, reason] of cases) {
      const d = decodeState(bytes);
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.reason).toBe(reason);
    }
  });

  it('property: random bytes and random msgpack values never throw', () => {
    const packr = new Packr({ useRecords: false });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        const d = decodeState(bytes);
        expect(typeof d.ok).toBe('boolean');
        expect(typeof decodeSnapshot(bytes).ok).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.anything(), (value) => {
        let bytes: Uint8Array;
        try {
          bytes = packr.pack(value);
        } catch {
          return;
        }
        expect(decodeState(bytes).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
    // Mutations of a valid message: flip bytes.
    const good = encodeState(sampleState());
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(good.length - 1), fc.nat(255)), { minLength: 1, maxLength: 8 }), (flips) => {
        const b = Uint8Array.from(good);
        for (const [i, v] of flips) b[i] = v;
        const d = decodeState(b);
        expect(typeof d.ok).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
  });

  it('supersedes by (boot, seq)', () => {
    const cur = { boot: 'b1', bootAt: 100, seq: 5 };
    expect(supersedes({ boot: 'b1', bootAt: 100, seq: 6 }, cur)).toBe(true);
    expect(supersedes({ boot: 'b1', bootAt: 100, seq: 5 }, cur)).toBe(false);
    expect(supersedes({ boot: 'b1', bootAt: 100, seq: 4 }, cur)).toBe(false);
    expect(supersedes({ boot: 'b2', bootAt: 200, seq: 0 }, cur)).toBe(true); // restart
    expect(supersedes({ boot: 'b0', bootAt: 50, seq: 99 }, cur)).toBe(false); // straggler from an older boot
    expect(supersedes(cur, undefined)).toBe(true);
  });

  it('snapshot round-trips', () => {
    const s = {
      v: 1 as const,
      replica: 'r',
      boot: 'b',
      seq: 3,
      chunkChars: 256,
      hashes: BigUint64Array.from([5n, 6n]),
    };
    const d = decodeSnapshot(encodeSnapshot(s));
    expect(d.ok && d.value).toEqual(s);
    const tiered = { ...s, host: BigUint64Array.from([6n]) };
    const t = decodeSnapshot(encodeSnapshot(tiered));
    expect(t.ok && t.value).toEqual(tiered);
  });

  it('carries tier moves (host, gpu) when sent, counts them against the delta limit, and omits them when empty', () => {
    const digest = { ...sampleState().digest, host: BigUint64Array.from([1n]), gpu: BigUint64Array.from([9n]) };
    const d = decodeState(encodeState(sampleState({ digest })));
    expect(d.ok && d.value.digest).toEqual(digest);
    const empty = decodeState(encodeState(sampleState({ digest: { ...digest, host: new BigUint64Array(0) } })));
    expect(empty.ok && 'host' in empty.value.digest).toBe(false);
    const over = new BigUint64Array(LIMITS.deltaHashes);
    const big = decodeState(encodeState(sampleState({ digest: { ...digest, host: over } })));
    expect(big.ok).toBe(false);
  });
});

function encodeAsObject(): Record<string, unknown> {
  return new Packr({ useRecords: false }).unpack(encodeStateMap(sampleState())) as Record<string, unknown>;
}
