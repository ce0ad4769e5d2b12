/**
 * Consistent-hash ring with bounded loads (Mirrokni, Thorup, Zadimoghaddam,
 * SODA 2018), weighted by capacity.
 *
 * Steps: each member owns round(vnodes × weight) points at xxh32(id#i); a key
 * lands on the first point clockwise; `walk` yields distinct members in ring
 * order from there (the key's preference list). The bounded-load rule
 * (`withinBound`) admits a member only if, counted in units of this request,
 * its load after adding it stays within ceil(c × (total + 1) × share), share =
 * weight / Σ weight (1/n when weights are equal), or its load is under a floor.
 * Complexity: build O(P log P) for P points; lookup O(log P) binary search; a
 * walk visits points until every member is seen (O(P) worst, O(n log n)
 * expected for n members).
 * Trade-off: vnodes buy smoother shares and ~1/n movement on membership change
 * at the cost of memory (P × 4 bytes + P member indices); 64 per unit of weight
 * keeps 1,000 replicas under 1 MB.
 *
 * Identical membership (ids and weights) gives an identical ring in any
 * process: ids are sorted before points are placed and ties break by id.
 */
import { hashString32 } from './prefix.ts';

export interface RingMember {
  id: string;
  /** Relative capacity; 1 is one unit of `vnodes` points. */
  weight: number;
}

export const DEFAULT_VNODES = 64;

export class HashRing {
  readonly members: readonly RingMember[];
  readonly totalWeight: number;
  readonly #points: Uint32Array;
  readonly #owners: Uint32Array;

  constructor(members: readonly RingMember[], vnodes = DEFAULT_VNODES) {
    const sorted = [...members].filter((m) => m.weight > 0).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.members = sorted;
    this.totalWeight = sorted.reduce((s, m) => s + m.weight, 0);
    const pts: Array<[number, number]> = [];
    sorted.forEach((m, idx) => {
      const count = Math.max(1, Math.round(vnodes * m.weight));
      for (let i = 0; i < count; i++) pts.push([hashString32(`${m.id}#${i}`), idx]);
    });
    pts.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    this.#points = Uint32Array.from(pts, (p) => p[0]);
    this.#owners = Uint32Array.from(pts, (p) => p[1]);
  }

  get size(): number {
    return this.members.length;
  }

  /** Index of the first point at or after `pos` (wrapping). */
  #start(pos: number): number {
    const pts = this.#points;
    let lo = 0;
    let hi = pts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pts[mid]! < pos) lo = mid + 1;
      else hi = mid;
    }
    return lo === pts.length ? 0 : lo;
  }

  /** The key's home member (first clockwise), or undefined on an empty ring. */
  home(key: number | bigint): RingMember | undefined {
    if (this.#points.length === 0) return undefined;
    return this.members[this.#owners[this.#start(keyPosition(key))]!];
  }

  /** Distinct members in ring order from the key's position: its preference list. */
  *walk(key: number | bigint): Generator<RingMember> {
    const next = this.cursor(key);
    for (let m = next(); m >= 0; m = next()) yield this.members[m]!;
  }

  /**
   * The key's preference list as indices into `members`, one per call, -1
   * after the last: `walk` without a generator or a member object per step,
   * for hot paths that map members to their own arrays.
   */
  cursor(key: number | bigint): () => number {
    const n = this.#points.length;
    const owners = this.#owners;
    const seen = new Uint8Array(this.members.length);
    let left = n === 0 ? 0 : this.members.length;
    let i = n === 0 ? 0 : this.#start(keyPosition(key));
    let steps = 0;
    return () => {
      while (steps < n && left > 0) {
        const owner = owners[i]!;
        steps++;
        i = i + 1 === n ? 0 : i + 1;
        if (seen[owner] === 0) {
          seen[owner] = 1;
          left--;
          return owner;
        }
      }
      return -1;
    };
  }
}

/** Folds a 64-bit key to a 32-bit ring position (xor of halves keeps all bits). */
export function keyPosition(key: number | bigint): number {
  if (typeof key === 'number') return key >>> 0;
  return (Number(key & 0xffffffffn) ^ Number((key >> 32n) & 0xffffffffn)) >>> 0;
}

/** One member's side of the bounded-load rule; all loads in one unit (tokens or requests). */
export interface BoundInput {
  /** The member's load before this request. */
  readonly load: number;
  /** The member's relative capacity (> 0). */
  readonly weight: number;
  /** Σ load over the members that could take the request. */
  readonly totalLoad: number;
  /** Σ weight over the same members. */
  readonly totalWeight: number;
  /** This request's work: the bound is counted in multiples of it (1 for request counts). */
  readonly cost: number;
  /** c: a member may carry up to c × its share of the fleet's work. */
  readonly factor: number;
  /** Per unit of weight, in the load's unit: below boundFloor(cost, floor) × weight a member is never full; 0 = no floor. */
  readonly floor?: number;
  /** Compare with c × share itself rather than its ceiling (KubeAI's inequality); default false. */
  readonly exact?: boolean;
}

/**
 * The floor of the bounded-load rule per unit of weight: max(floor, min(2 × cost,
 * 32 × floor)). Two requests' worth of work never makes a member "full", and
 * the floor grows with the request up to 32 × floor, so a long prompt does
 * not spill off its warm replica merely for being long (docs/DESIGN-RATIONALE.md,
 * "4. Placement").
 */
export function boundFloor(cost: number, floor: number): number {
  return Math.max(floor, Math.min(2 * cost, 32 * floor));
}

/** The floor half of the rule: is the member's load under boundFloor(cost, floor) × weight? Never with floor 0. */
export function underFloor(b: Pick<BoundInput, 'load' | 'weight' | 'cost' | 'floor'>): boolean {
  const floor = b.floor ?? 0;
  return floor > 0 && b.load <= boundFloor(b.cost, floor) * b.weight;
}

/**
 * The bounded-load rule, in one place (Mirrokni et al.; HAProxy's
 * hash-balance-factor): may a member take a request of `cost`? Yes when its
 * load is under the floor × weight, or when, counted in units of the request,
 * load + 1 ≤ ceil(c × (total + 1) × share), share = weight / Σ weight. The
 * ceiling in request units admits at least one request of this size, as the
 * count-based rule does; `exact` drops it (KubeAI's variant).
 */
export function withinBound(b: BoundInput): boolean {
  if (underFloor(b)) return true;
  const bound = b.factor * (b.totalLoad / b.cost + 1) * (b.weight / b.totalWeight);
  return b.load / b.cost + 1 <= (b.exact === true ? bound : Math.ceil(bound));
}

/**
 * Consistent hashing with bounded loads: the first member in the key's
 * preference list that `withinBound` admits. Returns the member and its rank
 * in the walk (0 = the key's home), or undefined when every member is over.
 */
export function pickBounded(
  ring: HashRing,
  key: number | bigint,
  loadOf: (id: string) => number,
  cost: number,
  /** The bound's factor: each caller names its own (the router's is its loadFactor setting). */
  c: number,
  eligible: (m: RingMember) => boolean = () => true,
): { member: RingMember; rank: number } | undefined {
  let total = 0;
  let weight = 0;
  for (const m of ring.members) {
    if (!eligible(m)) continue;
    total += loadOf(m.id);
    weight += m.weight;
  }
  let rank = 0;
  for (const m of ring.walk(key)) {
    if (!eligible(m)) continue;
    if (withinBound({ load: loadOf(m.id), weight: m.weight, totalLoad: total, totalWeight: weight, cost, factor: c }))
      return { member: m, rank };
    rank++;
  }
  return undefined;
}
