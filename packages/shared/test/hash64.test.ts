import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Hash64Table } from '../src/hash64.ts';

/** Keys from a small space (so operations collide and chains wrap around a small table), the key 0 among them. */
const key = fc
  .tuple(fc.integer({ min: 0, max: 40 }), fc.constantFrom(0, 1, 0xffffffff))
  .map(([a, b]) => [a === 40 ? 0xfffffff0 : a, b] as const);
const op = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key, value: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }),
  fc.record({ kind: fc.constant('delete' as const), key }),
  fc.record({ kind: fc.constant('setValueAt' as const), key, value: fc.integer({ min: -5, max: 5 }) }),
);

describe('Hash64Table', () => {
  for (const values of [true, false]) {
    it(`behaves as a Map under any sequence of sets and deletes (${values ? 'with values' : 'a set'}), the key 0 included`, () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
          const t = new Hash64Table(16, values);
          const m = new Map<string, number>();
          for (const o of ops) {
            const [lo, hi] = o.key;
            const k = `${lo}/${hi}`;
            if (o.kind === 'set') {
              expect(t.set(lo, hi, o.value)).toBe(!m.has(k));
              m.set(k, values ? o.value : 0);
            } else if (o.kind === 'delete') {
              expect(t.delete(lo, hi)).toBe(m.delete(k));
            } else {
              const pos = t.find(lo, hi);
              expect(pos >= 0).toBe(m.has(k));
              if (pos >= 0) {
                t.setValueAt(pos, o.value);
                m.set(k, values ? o.value : 0);
              }
            }
            expect(t.size).toBe(m.size);
          }
          for (const [k, v] of m) {
            const [lo, hi] = k.split('/').map(Number) as [number, number];
            expect(t.valueAt(t.find(lo, hi))).toBe(v);
          }
          const seen = new Map<string, number>();
          t.forEach((lo, hi, v) => seen.set(`${lo}/${hi}`, v));
          expect(seen).toEqual(m);
        }),
        { numRuns: 300 },
      );
    });
  }

  it('grows past its first capacity and keeps every key; clear empties it and returns it to its first capacity', () => {
    const t = new Hash64Table(16);
    const small = t.bytes;
    for (let i = 1; i <= 10_000; i++) t.set((i * 2654435761) >>> 0, i, -i);
    expect(t.size).toBe(10_000);
    for (let i = 1; i <= 10_000; i++) expect(t.valueAt(t.find((i * 2654435761) >>> 0, i))).toBe(-i);
    expect(t.bytes).toBeGreaterThanOrEqual(10_000 * 12);
    t.clear();
    expect(t.size).toBe(0);
    expect(t.find(2654435761, 1)).toBe(-1);
    expect(t.bytes).toBe(small);
    let seen = 0;
    t.forEach(() => seen++);
    expect(seen).toBe(0);
    // Usable again, and grows again.
    t.set(0, 0, 7);
    for (let i = 1; i <= 100; i++) t.set(i, i, i);
    expect(t.size).toBe(101);
    expect(t.valueAt(t.find(0, 0))).toBe(7);
    expect(t.valueAt(t.find(100, 100))).toBe(100);
  });
});
