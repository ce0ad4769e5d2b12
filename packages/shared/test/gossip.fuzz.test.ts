/**
 * The gossip decoder against its committed seed corpus
 * (fixtures/gossip-corpus: messages as agents publish them, and some broken on
 * purpose) and against mutations of it (fixed seed): byte flips, cuts,
 * insertions and splices of two entries. Properties: decodeState never
 * throws and answers ok or one of DROP_REASONS; what it accepts is within
 * LIMITS and survives re-encoding unchanged.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FUZZ_SEED } from '@warmpath/testkit/fuzz';
import { decodeState, DROP_REASONS, encodeState, LIMITS, type ReplicaState } from '../src/protocol.ts';

const DIR = new URL('./fixtures/gossip-corpus/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('corpus.json', DIR), 'utf8')) as Array<{
  file: string;
  expect: string;
  note: string;
}>;
const corpus = manifest.map((e) => ({ ...e, bytes: new Uint8Array(readFileSync(new URL(e.file, DIR))) }));

/** Decoded state within every limit the decoder promises. */
function withinLimits(s: ReplicaState): void {
  for (const str of [s.fleet, s.replica, s.boot, ...s.models, ...s.adapters, ...s.hotAdapters])
    expect(str.length).toBeLessThanOrEqual(LIMITS.stringChars);
  for (const url of [s.url, s.admin]) expect(url.length).toBeLessThanOrEqual(LIMITS.urlChars);
  for (const n of [
    s.bootAt,
    s.seq,
    s.sentAt,
    s.chunkChars,
    ...Object.values(s.capacity),
    ...Object.values(s.load),
    s.digest.size,
    s.digest.from,
  ]) {
    expect(Number.isFinite(n)).toBe(true);
    expect(n).toBeGreaterThanOrEqual(-1);
  }
  expect(s.digest.added.length + s.digest.removed.length).toBeLessThanOrEqual(LIMITS.deltaHashes);
}

/** What the decoder says: 'ok' or its reason. Checks the properties on the way. */
function verdict(bytes: Uint8Array): string {
  const d = decodeState(bytes);
  if (!d.ok) {
    expect(DROP_REASONS).toContain(d.reason);
    return d.reason;
  }
  withinLimits(d.value);
  const again = decodeState(encodeState(d.value));
  expect(again.ok && again.value).toEqual(d.value);
  return 'ok';
}

const entry = fc.constantFrom(...corpus.map((e) => e.bytes));
const mutation = fc.oneof(
  // Overwrite up to 8 bytes.
  fc.tuple(entry, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 8 })).map(([b, flips]) => {
    const out = Uint8Array.from(b);
    for (const [i, v] of flips) out[i % out.length] = v;
    return out;
  }),
  // Cut at any point.
  fc.tuple(entry, fc.nat()).map(([b, n]) => b.subarray(0, n % (b.length + 1))),
  // Insert a few random bytes.
  fc.tuple(entry, fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 16 })).map(([b, at, ins]) => {
    const i = at % (b.length + 1);
    return Uint8Array.from([...b.subarray(0, i), ...ins, ...b.subarray(i)]);
  }),
  // Splice the head of one entry onto the tail of another.
  fc
    .tuple(entry, entry, fc.nat(), fc.nat())
    .map(([a, b, i, j]) => Uint8Array.from([...a.subarray(0, i % (a.length + 1)), ...b.subarray(j % (b.length + 1))])),
);

describe('gossip decoder fuzz', () => {
  it('the seed corpus decodes as committed (a wire-format change shows up here)', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(10);
    for (const e of corpus) expect({ file: e.file, got: verdict(e.bytes) }).toEqual({ file: e.file, got: e.expect });
  });

  it('3,000 mutations of the corpus: ok within limits and re-encodable, or a drop reason; never a throw', () => {
    const seen = new Map<string, number>();
    fc.assert(
      fc.property(mutation, (bytes) => {
        const v = verdict(bytes);
        seen.set(v, (seen.get(v) ?? 0) + 1);
      }),
      { seed: FUZZ_SEED, numRuns: 3_000 },
    );
    // The mutations reach both sides of the decoder.
    for (const v of ['ok', 'malformed', 'invalid']) expect(seen.get(v) ?? 0).toBeGreaterThan(10);
  });
});
