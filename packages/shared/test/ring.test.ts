import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundFloor, HashRing, pickBounded, withinBound } from '../src/ring.ts';

const members = (n: number, prefix = 'r') => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, weight: 1 }));
const order = (ring: HashRing, key: number) => [...ring.walk(key)].map((m) => m.id);

describe('HashRing', () => {
  it('gives the same order for the same membership, whatever the input order', () => {
    const a = new HashRing(members(20));
    const b = new HashRing([...members(20)].reverse());
    for (let k = 0; k < 200; k++) expect(order(a, k * 7919)).toEqual(order(b, k * 7919));
  });

  it('walks every member exactly once', () => {
    const ring = new HashRing(members(37));
    const walked = order(ring, 12345);
    expect(walked).toHaveLength(37);
    expect(new Set(walked).size).toBe(37);
  });

  it('cursor yields the walk as member indices, then -1; an empty ring yields -1 at once', () => {
    const ring = new HashRing(members(23));
    const next = ring.cursor(98765);
    const ids: string[] = [];
    for (let m = next(); m >= 0; m = next()) ids.push(ring.members[m]!.id);
    expect(ids).toEqual(order(ring, 98765));
    expect(next()).toBe(-1);
    expect(new HashRing([]).cursor(1)()).toBe(-1);
  });

  it('moves about 1/n of keys when a member joins or leaves', () => {
    const n = 20;
    const before = new HashRing(members(n));
    const joined = new HashRing([...members(n), { id: 'new', weight: 1 }]);
    const left = new HashRing(members(n).filter((m) => m.id !== 'r3'));
    const keys = 20_000;
    let movedJoin = 0;
    let movedLeave = 0;
    for (let k = 0; k < keys; k++) {
      const key = Math.imul(k, 2654435761) >>> 0;
      const home = before.home(key)!.id;
      const j = joined.home(key)!.id;
      if (j !== home) {
        movedJoin++;
        expect(j).toBe('new'); // keys only move to the newcomer
      }
      if (left.home(key)!.id !== home) {
        movedLeave++;
        expect(home).toBe('r3'); // only the leaver's keys move
      }
    }
    expect(movedJoin / keys).toBeGreaterThan(0.5 / (n + 1));
    expect(movedJoin / keys).toBeLessThan(2 / (n + 1));
    expect(movedLeave / keys).toBeGreaterThan(0.5 / n);
    expect(movedLeave / keys).toBeLessThan(2 / n);
  });

  it('spreads keys by weight', () => {
    const ring = new HashRing([{ id: 'big', weight: 3 }, ...members(3)]);
    const counts = new Map<string, number>();
    for (let k = 0; k < 30_000; k++) {
      const id = ring.home(Math.imul(k, 2654435761) >>> 0)!.id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    const big = counts.get('big')! / 30_000;
    expect(big).toBeGreaterThan(0.35);
    expect(big).toBeLessThan(0.65);
  });

  it('handles an empty ring', () => {
    const ring = new HashRing([]);
    expect(ring.home(1)).toBeUndefined();
    expect(order(ring, 1)).toEqual([]);
    expect(pickBounded(ring, 1, () => 0, 1, 1.25)).toBeUndefined();
  });
});

describe('bounded loads', () => {
  const member = { weight: 1, totalWeight: 4, factor: 1.25 };

  it('withinBound is ceil(c × (total + cost) × share)', () => {
    // 4 members, total 8 requests, c 1.25: bound = ceil(1.25 × 9 / 4) = 3.
    expect(withinBound({ ...member, load: 2, totalLoad: 8, cost: 1 })).toBe(true);
    expect(withinBound({ ...member, load: 3, totalLoad: 8, cost: 1 })).toBe(false);
    // Counted in units of the request's work: the same fleet in tokens of 1,000-token requests.
    expect(withinBound({ ...member, load: 2_000, totalLoad: 8_000, cost: 1_000 })).toBe(true);
    expect(withinBound({ ...member, load: 3_000, totalLoad: 8_000, cost: 1_000 })).toBe(false);
  });

  it('exact compares with c × (total + cost) × share itself, without the ceiling (KubeAI)', () => {
    // bound = 1.25 × 9 / 4 = 2.81: load 2 → 3 > 2.81.
    expect(withinBound({ ...member, load: 1, totalLoad: 8, cost: 1, exact: true })).toBe(true);
    expect(withinBound({ ...member, load: 2, totalLoad: 8, cost: 1, exact: true })).toBe(false);
    expect(withinBound({ ...member, load: 2, totalLoad: 8, cost: 1 })).toBe(true);
  });

  it('the floor: under max(floor, min(2 × cost, 32 × floor)) × weight a member is always within', () => {
    expect(boundFloor(1_000, 2_048)).toBe(2_048);
    expect(boundFloor(5_000, 2_048)).toBe(10_000);
    expect(boundFloor(1_000_000, 2_048)).toBe(32 * 2_048);
    // Far over the share (the rest of the fleet is idle), yet under the floor: within.
    const over = { weight: 1, totalWeight: 4, factor: 1.25, totalLoad: 9_000, cost: 1_000 };
    expect(withinBound({ ...over, load: 9_000 })).toBe(false);
    expect(withinBound({ ...over, load: 9_000, floor: 2_048 })).toBe(false);
    expect(withinBound({ ...over, load: 9_000, floor: 9_000 })).toBe(true);
    // The floor scales with weight and with the request: two requests' worth is never full.
    expect(withinBound({ ...over, load: 9_000, floor: 4_500 })).toBe(false);
    expect(withinBound({ ...over, load: 9_000, weight: 2, totalWeight: 5, floor: 4_500 })).toBe(true);
    expect(withinBound({ ...over, load: 9_000, cost: 4_500, floor: 300 })).toBe(true); // 2 × 4,500 ≤ 32 × 300
    expect(withinBound({ ...over, load: 9_001, cost: 4_500, floor: 300 })).toBe(false);
    expect(withinBound({ ...over, load: 9_000, cost: 4_500, floor: 200 })).toBe(false); // capped at 32 × 200
  });

  it('property: the pick stays within the bound and is the first admitted member in walk order', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.nat(50), { minLength: 30, maxLength: 30 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.double({ min: 1, max: 3, noNaN: true }),
        (n, loads, key, c) => {
          const ring = new HashRing(members(n));
          const load = (id: string) => loads[Number(id.slice(1))]!;
          const total = ring.members.reduce((s, m) => s + load(m.id), 0);
          const pick = pickBounded(ring, key, load, 1, c);
          // With c ≥ 1 and unit cost some member is always at or below average.
          expect(pick).toBeDefined();
          const bound = Math.ceil((c * (total + 1)) / n);
          expect(load(pick!.member.id) + 1).toBeLessThanOrEqual(bound);
          const walked = order(ring, key);
          const firstOk = walked.find((id) => load(id) + 1 <= bound);
          expect(pick!.member.id).toBe(firstOk);
          expect(walked.indexOf(pick!.member.id)).toBe(pick!.rank);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: routing a stream of keys never lets any member exceed the bound', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 12 }),
        fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 50, maxLength: 300 }),
        (n, keys) => {
          const ring = new HashRing(members(n));
          const loads = new Map<string, number>();
          let total = 0;
          for (const k of keys) {
            // a skewed key stream: few distinct keys
            const pick = pickBounded(ring, k, (id) => loads.get(id) ?? 0, 1, 1.25)!;
            loads.set(pick.member.id, (loads.get(pick.member.id) ?? 0) + 1);
            total++;
            for (const v of loads.values()) expect(v).toBeLessThanOrEqual(Math.ceil((1.25 * total) / n));
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('respects an eligibility filter', () => {
    const ring = new HashRing(members(5));
    const pick = pickBounded(
      ring,
      42,
      () => 0,
      1,
      1.25,
      (m) => m.id === 'r2',
    );
    expect(pick?.member.id).toBe('r2');
    expect(pick?.rank).toBe(0);
  });
});
