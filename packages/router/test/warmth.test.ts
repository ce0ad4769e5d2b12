/**
 * One warmth scan, several holder sources: the digest holder index (through
 * FleetView.scanWarmth), the optimistic overlay (through
 * LocalState.scanOverlay) and a plain list give the same answer for the same
 * holders — the longest prefix of the chain each slot holds in full.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WarmthScan, type HolderSource } from '../src/fleet/warmth.ts';
import { LocalState } from '../src/core/local.ts';
import { CONFIG, makeState, makeView } from './helpers.ts';

const hash = (i: number): bigint => (BigInt(i + 1) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;

/** holders[i] = the slots holding chunk i. */
let listed: number[][] = [];
const listSource: HolderSource<number[][]> = {
  size: 1,
  find(holders, i) {
    listed = holders;
    return holders[i] === undefined || holders[i].length === 0 ? -1 : i;
  },
  same: () => false,
  offerHolders(i, _i, _now, scan) {
    for (const s of listed[i]!) scan.offer(s, i);
  },
};

/** Reference: the first chunk slot s does not hold. */
function expected(held: boolean[][], s: number): number {
  const d = held[s]!.indexOf(false);
  return d < 0 ? held[s]!.length : d;
}

/** held[s][i]: slot s holds chunk i of `chain` (replica `r{s}` gets slot s in a fresh view). */
function sources(chain: BigUint64Array, held: boolean[][]) {
  const view = makeView(
    held.map((row, s) => {
      const added = chain.filter((_, i) => row[i]!);
      return makeState(`r${s}`, { digest: { from: -1, added, size: added.length } });
    }),
  );
  const local = new LocalState(CONFIG);
  held.forEach((row, s) => row.forEach((h, i) => h && local.overlayAdd(chain.subarray(i, i + 1), s, 0)));
  const list = Array.from(chain, (_, i) => held.flatMap((row, s) => (row[i]! ? [s] : [])));
  return { view, local, list };
}

describe('warmth scan', () => {
  it('gives the digest index, the overlay and a plain list the same chained depths', () => {
    const shape = fc
      .integer({ min: 1, max: 10 })
      .chain((n) => fc.array(fc.array(fc.boolean(), { minLength: n, maxLength: n }), { minLength: 1, maxLength: 6 }));
    fc.assert(
      fc.property(shape, fc.integer({ min: 0, max: 10 }), (held, offset) => {
        const chain = BigUint64Array.from(held[0]!, (_, i) => hash(i + offset * 100));
        const { view, local, list } = sources(chain, held);
        const scan = new WarmthScan();
        for (let s = 0; s < held.length; s++) scan.grow(s);
        // A scan of another chain first: each scan must start from zero.
        const other = BigUint64Array.from(chain).reverse();
        view.scanWarmth(other);
        local.scanOverlay(other, 1);
        scan.scan([...list].reverse(), list.length, listSource, 1);

        view.scanWarmth(chain);
        local.scanOverlay(chain, 1);
        scan.scan(list, list.length, listSource, 1);
        for (let s = 0; s < held.length; s++) {
          const want = expected(held, s);
          expect(view.depthOf(view.replicas.get(`r${s}`)!.slot)).toBe(want);
          expect(local.overlayDepthOf(s)).toBe(want);
          expect(scan.depthOf(s)).toBe(want);
        }
        const warm = held.flatMap((_, s) => (expected(held, s) > 0 ? [s] : []));
        expect(view.warmSlots).toEqual(warm);
        expect(local.overlaySlots).toEqual(warm);
        expect(scan.slots).toEqual(warm);
      }),
    );
  });

  it('stops at a hole even if deeper chunks are held, and skips expired overlay holders', () => {
    const chain = BigUint64Array.from([0, 1, 2, 3], hash);
    const { view, local } = sources(chain, [
      [true, true, false, true],
      [true, true, true, true],
    ]);
    view.scanWarmth(chain);
    expect([view.depthOf(0), view.depthOf(1)]).toEqual([2, 4]);
    // Slot 0 re-dispatched the whole chain later: its overlay outlives slot 1's.
    local.overlayAdd(chain, 0, 1_000);
    local.scanOverlay(chain, CONFIG.overlayTtlMs);
    expect(local.overlaySlots).toEqual([0]);
    expect([local.overlayDepthOf(0), local.overlayDepthOf(1)]).toEqual([4, 0]);
    local.prune(CONFIG.overlayTtlMs + 1_000);
    expect(local.overlaySize).toBe(0);
  });

  it('prunes each overlay holder when it comes due, and keeps what was sent again', () => {
    const ttl = CONFIG.overlayTtlMs;
    const a = BigUint64Array.from([10, 11, 12, 13], hash);
    const b = BigUint64Array.from([20, 21], hash);
    const local = new LocalState(CONFIG);
    local.overlayAdd(a, 0, 0);
    local.overlayAdd(b, 1, 2_000);
    // The first half of a is sent again: its first two chunks live on, the last two expire at ttl.
    local.overlayAdd(a.subarray(0, 2), 0, 3_000);
    expect(local.overlaySize).toBe(6);
    local.prune(ttl - 1);
    expect(local.overlaySize).toBe(6);
    local.prune(ttl);
    expect(local.overlaySize).toBe(4);
    local.scanOverlay(a, ttl);
    expect(local.overlayDepthOf(0)).toBe(2);
    local.prune(ttl + 2_000);
    expect(local.overlaySize).toBe(2);
    // A freed entry is reused by a new hash: pruning the old entry's due time later must not drop the new holder.
    local.overlayAdd(BigUint64Array.from([30], hash), 2, ttl + 2_500);
    local.prune(ttl + 3_000);
    expect(local.overlaySize).toBe(1);
    local.scanOverlay(BigUint64Array.from([30], hash), ttl + 3_000);
    expect(local.overlayDepthOf(2)).toBe(1);
    local.prune(2 * ttl + 2_500);
    expect(local.overlaySize).toBe(0);
  });

  it('skips a run of chunks only while their holders are the same, expiries included', () => {
    const chain = BigUint64Array.from([0, 1, 2, 3, 4, 5], hash);
    // Slots 0 and 1 hold the whole chain, slot 2 its first four chunks: runs [0–3] and [4–5].
    const { view } = sources(chain, [Array(6).fill(true), Array(6).fill(true), [true, true, true, true, false, false]]);
    view.scanWarmth(chain);
    expect([0, 1, 2].map((s) => view.depthOf(s))).toEqual([6, 6, 4]);
    // Slot 0 got the first three chunks again later: they expire after the other three.
    const local = new LocalState(CONFIG);
    local.overlayAdd(chain, 0, 0);
    local.overlayAdd(chain.subarray(0, 3), 0, 1_000);
    local.scanOverlay(chain, CONFIG.overlayTtlMs - 1);
    expect(local.overlayDepthOf(0)).toBe(6);
    local.scanOverlay(chain, CONFIG.overlayTtlMs + 500);
    expect(local.overlayDepthOf(0)).toBe(3);
  });
});
