import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CacheModel } from '../src/cache-model.ts';

const chain = (...xs: number[]): BigUint64Array => BigUint64Array.from(xs.map(BigInt));

/** What a router does with the model's next delta: apply it to its copy, or replace the copy on a full one. */
function applyDelta(mirror: Set<bigint>, c: CacheModel): void {
  const d = c.takeDelta(1e6);
  if (d.full) {
    mirror.clear();
    for (const h of c.published()) mirror.add(h);
  } else {
    for (const h of d.removed) mirror.delete(h);
    for (const h of d.added) mirror.add(h);
  }
}

describe('CacheModel', () => {
  it('says how long the chunk it last evicted had gone unused', () => {
    const c = new CacheModel({ capacity: 4 });
    c.record(chain(1, 2), 0);
    c.record(chain(3, 4), 1_000);
    expect(c.evictionAgeMs).toBeUndefined(); // not full yet
    c.record(chain(1, 2), 2_000); // used again: 3 and 4 are now the oldest
    c.record(chain(5, 6), 5_000);
    expect(c.has(3n) || c.has(4n)).toBe(false);
    expect(c.evictionAgeMs).toBe(4_000);
    c.record(chain(7), 5_500); // evicts 2: a chain is touched tail first, so at 2 s it was used just before 1
    expect(c.evictionAgeMs).toBe(3_500);
    c.reset();
    expect(c.evictionAgeMs).toBeUndefined();
  });
  it('keeps its touch-time log bounded, so an old chunk in a cache that never fills reads younger, never older', () => {
    const c = new CacheModel({ capacity: 100 });
    c.record(chain(1), 0);
    // 70,000 requests for the same chunk: the cache holds 2 chunks, and the log one entry per request.
    for (let t = 1; t <= 70_000; t++) c.record(chain(2), t);
    // Fill it: chunk 1 (last used at 0) is evicted at 100 s.
    c.record(
      BigUint64Array.from({ length: 99 }, (_, i) => BigInt(1_000 + i)),
      100_000,
    );
    expect(c.has(1n)).toBe(false);
    expect(c.evictionAgeMs).toBeLessThan(100_000);
    expect(c.evictionAgeMs).toBeGreaterThanOrEqual(100_000 - 70_000);
  });
  it('evicts tails before shared heads', () => {
    const c = new CacheModel({ capacity: 4 });
    c.record(chain(1, 2, 3));
    c.record(chain(1, 4, 5));
    expect(c.size).toBe(4);
    expect(c.has(1n)).toBe(true);
    expect(c.predict(chain(1, 4, 5))).toBe(3);
    expect(c.predict(chain(1, 2, 3))).toBe(2);
    expect(c.has(3n)).toBe(false);
  });
  it('feedback with fewer cached tokens drops everything older than the miss', () => {
    const c = new CacheModel({ capacity: 100 });
    c.record(chain(10, 11));
    c.record(chain(20, 21));
    c.record(chain(1, 2, 3));
    const predicted = c.predict(chain(1, 2, 3));
    const missStamp = c.stampOf(2n);
    c.record(chain(1, 2, 3));
    c.feedback(predicted, 1, missStamp);
    expect(c.has(10n)).toBe(false);
    expect(c.has(20n)).toBe(false);
    expect(c.predict(chain(1, 2, 3))).toBe(3);
    expect(c.capacity).toBeLessThan(100);
  });
  it('deltas applied in order rebuild the published set exactly', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 8 }), { maxLength: 80 }),
        fc.integer({ min: 1, max: 40 }),
        (reqs, cap) => {
          const c = new CacheModel({ capacity: cap });
          const mirror = new Set<bigint>();
          let i = 0;
          for (const r of reqs) {
            c.record(chain(...r));
            if (++i % 3 === 0) {
              applyDelta(mirror, c);
              expect([...mirror].sort()).toEqual([...c.hashes()].sort());
            }
            if (i % 17 === 0) c.reset();
            expect(new Set(c.published()).size).toBe(c.published().length);
          }
        },
      ),
    );
  });
  it('a capped digest is the K most recently used chunks: deltas rebuild it exactly, it is prefix-closed, and prediction still uses the whole model', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.integer({ min: 0, max: 5 }), fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 6 })),
          { maxLength: 80 },
        ),
        fc.integer({ min: 4, max: 40 }),
        fc.integer({ min: 1, max: 30 }),
        (reqs, cap, limit) => {
          const c = new CacheModel({ capacity: cap, published: limit });
          const mirror = new Set<bigint>();
          let i = 0;
          for (const [head, tail] of reqs) {
            // Chains share heads, as conversations behind a few system prompts do: chunk k names its whole prefix.
            const hashes = [head + 1000, ...tail].map((_, k, xs) =>
              BigInt(
                xs
                  .slice(0, k + 1)
                  .join('.')
                  .split('')
                  .reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 2 ** 40, 7),
              ),
            );
            const predicted = c.predict(BigUint64Array.from(hashes));
            c.record(BigUint64Array.from(hashes));
            if (++i % 5 === 0 && predicted > 1) c.feedback(predicted, 1, c.stampOf(hashes[1]!));
            if (i % 3 !== 0) continue;
            applyDelta(mirror, c);
            const all = [...c.hashes()];
            const newest = all.slice(Math.max(0, all.length - limit));
            expect([...mirror].sort()).toEqual(newest.sort());
            expect(c.publishedSize).toBe(mirror.size);
          }
        },
      ),
    );
  });
  it('a capped digest never shows a chunk without the chunks before it', () => {
    const c = new CacheModel({ capacity: 100, published: 5 });
    c.record(chain(1, 2, 3, 4));
    c.record(chain(9, 8, 7));
    c.takeDelta(1e6);
    const published = new Set(c.published());
    expect(published).toEqual(new Set([9n, 8n, 7n, 1n, 2n]));
    expect(c.predict(chain(1, 2, 3, 4))).toBe(4);
  });
  it('an oversized delta becomes a snapshot marker', () => {
    const c = new CacheModel({ capacity: 1000 });
    c.takeDelta(10);
    c.record(BigUint64Array.from({ length: 50 }, (_, i) => BigInt(i + 1)));
    const d = c.takeDelta(10);
    expect(d.full).toBe(true);
    expect(d.added.length).toBe(0);
  });
});

describe('cache clear seen in prefix counters', async () => {
  const { AgentLedger } = await import('../src/ledger.ts');
  const { agentConfig } = await import('../src/config.ts');
  const { createMetrics } = await import('../src/metrics.ts');
  const { emptySnapshot } = await import('../src/engines/types.ts');
  const snap = (queries: number, hits: number) => ({ ...emptySnapshot(), prefixQueries: queries, prefixHits: hits });
  /** `admissions` admissions predicted `tokens` cached in all, from chunks finished requests recorded. */
  const predict = (core: InstanceType<typeof AgentLedger>, tokens: number, admissions = 2) => {
    core.settledPredictions.tokens += tokens;
    core.settledPredictions.admissions += admissions;
  };
  it('fires only when predicted hits went unmatched and no per-request feedback arrived', () => {
    const core = new AgentLedger(agentConfig(), createMetrics());
    expect(core.cacheClearedPerCounters(snap(0, 0))).toBe(false);
    predict(core, 2000);
    expect(core.cacheClearedPerCounters(snap(3000, 1900))).toBe(false); // hits matched
    predict(core, 2000);
    expect(core.cacheClearedPerCounters(snap(6000, 1900))).toBe(true); // zero new hits
    predict(core, 2000);
    core.feedbacks++;
    expect(core.cacheClearedPerCounters(snap(9000, 1900))).toBe(false); // feedback handles it
    predict(core, 2000);
    expect(core.cacheClearedPerCounters(snap(9500, 1900))).toBe(false); // engine has not processed them yet
  });

  it('one request whose prefix the engine evicted is no cache clear', () => {
    const core = new AgentLedger(agentConfig(), createMetrics());
    core.cacheClearedPerCounters(snap(0, 0));
    predict(core, 4000, 1);
    expect(core.cacheClearedPerCounters(snap(5000, 0))).toBe(false);
  });

  it('chunks recorded by a request still in flight do not count as predicted hits', async () => {
    const { describeRequest } = await import('@warmpath/shared/wire');
    const core = new AgentLedger(agentConfig({ kvCapacityTokens: 1_000_000 }), createMetrics());
    core.setSnapshot({ ...emptySnapshot(), running: 0 }, 0);
    const info = describeRequest({ model: 'm', prompt: 'shared prefix '.repeat(400) }, 'completion', {
      resolveModel: (m) => ({ model: m, adapter: '' }),
    });
    const first = core.admit(info);
    const second = core.admit(info); // a burst: the first is still prefilling the shared prefix
    expect('flight' in first && 'flight' in second).toBe(true);
    expect(core.settledPredictions).toEqual({ tokens: 0, admissions: 0 });
    if ('flight' in first) core.end(first.flight);
    if ('flight' in second) core.end(second.flight);
    core.admit(info); // both finished: the prefix is settled now
    expect(core.settledPredictions.admissions).toBe(1);
    expect(core.settledPredictions.tokens).toBeGreaterThan(1000);
  });
});
