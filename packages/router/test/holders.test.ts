import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { halves } from '@warmpath/shared/runtime';
import { HolderIndex } from '../src/fleet/holders.ts';

/** The u32 halves of one 64-bit hash. */
const lohi = (h: bigint): [number, number] => {
  const x = halves(BigUint64Array.of(h));
  return [x[0]!, x[1]!];
};
const hash = (i: number): bigint => (BigInt(i + 1) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;

describe('HolderIndex', () => {
  it('keeps one holder inline, turns a second into a list and back, and ignores repeats', () => {
    const idx = new HolderIndex();
    const [lo, hi] = lohi(hash(1));
    idx.add(lo, hi, 3);
    idx.add(lo, hi, 3);
    expect(idx.holders(lo, hi)).toEqual([3]);
    expect(idx.size).toBe(1);
    idx.add(lo, hi, 7);
    idx.add(lo, hi, 7);
    idx.add(lo, hi, 5);
    expect(idx.holders(lo, hi)).toEqual([3, 7, 5]);
    expect(idx.size).toBe(1);
    idx.remove(lo, hi, 9); // not a holder: no-op
    idx.remove(lo, hi, 3);
    expect(new Set(idx.holders(lo, hi))).toEqual(new Set([5, 7]));
    idx.remove(lo, hi, 7);
    expect(idx.holders(lo, hi)).toEqual([5]);
    idx.remove(lo, hi, 5);
    expect(idx.holders(lo, hi)).toEqual([]);
    expect(idx.size).toBe(0);
  });

  it('agrees with a map of sets under any sequence of adds and removes', () => {
    const op = fc.record({
      add: fc.boolean(),
      hash: fc.integer({ min: 0, max: 7 }),
      slot: fc.integer({ min: 0, max: 5 }),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const idx = new HolderIndex();
        const model = new Map<number, Set<number>>();
        for (const o of ops) {
          const [lo, hi] = lohi(hash(o.hash));
          const set = model.get(o.hash) ?? new Set<number>();
          if (o.add) {
            idx.add(lo, hi, o.slot);
            set.add(o.slot);
          } else {
            idx.remove(lo, hi, o.slot);
            set.delete(o.slot);
          }
          if (set.size > 0) model.set(o.hash, set);
          else model.delete(o.hash);
        }
        expect(idx.size).toBe(model.size);
        for (let h = 0; h < 8; h++) {
          const [lo, hi] = lohi(hash(h));
          const got = idx.holders(lo, hi);
          expect(got.length).toBe(new Set(got).size);
          expect(new Set(got)).toEqual(model.get(h) ?? new Set());
        }
        // `same` (the warmth scan's run test) holds exactly for hashes with equal holder sets.
        const chain = halves(BigUint64Array.from({ length: 8 }, (_, h) => hash(h)));
        for (let a = 0; a < 8; a++) {
          for (let b = 0; b < 8; b++) {
            const pa = idx.find(chain, a);
            const pb = idx.find(chain, b);
            if (pa < 0 || pb < 0) continue;
            const equal = [...model.get(a)!].sort().join() === [...model.get(b)!].sort().join();
            expect(idx.same(pa, pb)).toBe(equal);
          }
        }
      }),
    );
  });
});
