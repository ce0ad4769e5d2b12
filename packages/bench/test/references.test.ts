import { describe, expect, it } from 'vitest';
import { PROFILES } from '@warmpath/sim';
import { aloneTtfts, boundTails, firstLoadTtfts, hitCeiling, ttftFloor, type PlanRequest } from '../src/references.ts';

const BS = 16;
/** A request of whole blocks (+1 token so every block can hit) named by block ids. */
const req = (at: number, ...blocks: number[]): PlanRequest => ({
  at,
  adapter: '',
  maxTokens: 8,
  promptTokens: blocks.length * BS + 1,
  blockHashes: BigUint64Array.from(blocks.map(BigInt)),
});

describe('hit-rate ceiling', () => {
  it('unlimited capacity hits every block seen before, as a prefix', () => {
    const c = hitCeiling([req(0, 1, 2, 3), req(1, 1, 2, 4), req(2, 9, 2, 3)], BS, Infinity);
    expect([...c.cachedTokens]).toEqual([0, 2 * BS, 0]); // the third shares block 2 but not its prefix
    expect(c.unlimited).toBeCloseTo(c.belady);
    expect([...c.seenTokens]).toEqual([...c.cachedTokens]);
  });

  it('keeps the block needed soonest (Belady), where LRU would have evicted it', () => {
    // Capacity 2: X, Y, Z, X. LRU evicts X when Z arrives; Belady evicts Y or Z (never used again).
    const c = hitCeiling([req(0, 10), req(1, 20), req(2, 30), req(3, 10)], BS, 2);
    expect([...c.cachedTokens]).toEqual([0, 0, 0, BS]);
    // With unlimited capacity every earlier block is there, request by request.
    expect([...c.seenTokens]).toEqual([0, 0, 0, BS]);
    expect(c.belady).toBeGreaterThan(0);
    expect(c.belady).toBeLessThanOrEqual(c.unlimited);
  });

  it('arrival order, not plan order, decides what is cached', () => {
    const c = hitCeiling([req(5, 1, 2), req(0, 1, 2)], BS, Infinity);
    expect([...c.cachedTokens]).toEqual([2 * BS, 0]);
  });

  it('a smaller cache never hits more', () => {
    const plan = Array.from({ length: 60 }, (_, i) => req(i, i % 7, (i * 3) % 11, i % 5));
    let prev = Infinity;
    for (const cap of [Infinity, 12, 6, 3, 1]) {
      const b = hitCeiling(plan, BS, cap).belady;
      expect(b).toBeLessThanOrEqual(prev + 1e-12);
      prev = b;
    }
  });
});

describe('TTFT floor', () => {
  it('a cached prefix makes the first token come sooner, on the real engine model', () => {
    const p = PROFILES['h100-llama3-8b'];
    const r = { ...req(0, ...Array.from({ length: 256 }, (_, i) => i + 1)) };
    const cold = ttftFloor([r], Int32Array.of(0), p, [], 0);
    const warm = ttftFloor([r], Int32Array.of(240 * BS), p, [], 0);
    expect(cold.p50).toBeGreaterThan(0);
    expect(warm.p50).toBeLessThan(cold.p50);
  });
});

describe('TTFT bound', () => {
  it('is the floor with every earlier block cached: never above it, request by request, and reuses what it can', () => {
    const p = PROFILES['h100-llama3-8b'];
    const doc = Array.from({ length: 256 }, (_, i) => i + 1);
    // Two 256-block documents, each sent twice, through a cache of 256 blocks: Belady keeps at most one whole,
    // while with unlimited capacity both repeats hit in full.
    const plan = [
      req(0, ...doc),
      req(1, ...doc.map((b) => b + 1000)),
      req(2, ...doc),
      req(3, ...doc.map((b) => b + 1000)),
    ];
    const c = hitCeiling(plan, p.blockSize, 256);
    expect(c.seenTokens.some((t, i) => t > c.cachedTokens[i]!)).toBe(true);
    const floor = aloneTtfts(plan, c.cachedTokens, p, [], 0);
    const bound = aloneTtfts(plan, c.seenTokens, p, [], 0, { ttfts: floor, cachedTokens: c.cachedTokens });
    bound.forEach((b, i) => expect(b).toBeLessThanOrEqual(floor[i]!));
    expect(bound.some((b, i) => b < floor[i]!)).toBe(true);
    // Where the hits agree the floor's figure is reused, not run again.
    const fake = floor.map((_, i) => 1e6 + i);
    const reused = aloneTtfts(plan, c.seenTokens, p, [], 0, { ttfts: fake, cachedTokens: c.cachedTokens });
    reused.forEach((t, i) => expect(t === fake[i]).toBe(c.seenTokens[i] === c.cachedTokens[i]));
  });

  it("counts each adapter's first load: the k-th slowest request waits at least the k-th largest least first load", () => {
    const p = PROFILES['h100-llama3-8b'];
    const lora = (at: number, adapter: string, ...blocks: number[]): PlanRequest => ({
      ...req(at, ...blocks),
      adapter,
    });
    const plan = [lora(0, 'a', 1, 2), lora(1, 'a', 1, 2), lora(2, 'b', 3, 4), lora(3, 'c', 5, 6)];
    const seen = hitCeiling(plan, p.blockSize, Infinity).seenTokens;
    const loads = firstLoadTtfts(plan, seen, p, ['a', 'b', 'c'], 4);
    expect(loads).toHaveLength(3); // one per adapter
    const warm = aloneTtfts(plan, seen, p, ['a', 'b', 'c'], 4);
    for (const t of loads) expect(t).toBeGreaterThanOrEqual(p.loraLoadMs + Math.min(...warm) - 1);
    // 100 requests at 10 ms and three adapters' first loads: p99 is the 2nd slowest, so a load; p50 is not.
    const b = boundTails(Array(100).fill(10), [200, 210, 220]);
    expect(b).toEqual({ p50: 10, p99: 210 });
    expect(boundTails(Array(100).fill(10), [])).toEqual({ p50: 10, p99: 10 });
  });
});
