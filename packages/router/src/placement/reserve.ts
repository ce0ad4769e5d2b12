/**
 * The interactive reserve (docs/TENANTS.md, "Interactive reserve"): which
 * replicas of a model group are set apart for the interactive band while
 * the split is in force (tenants/split.ts says when, and which side a
 * request is placed on).
 *
 * Rule: of the group's ring members (live, positive weight), the first
 * k = round(share × members) in the ring order of one fixed key, with
 * 1 ≤ k ≤ members − 1: both sides keep at least one replica, and a group of
 * one has no reserve. Every router holds the same ring, so every router
 * sets apart the same replicas with no message between them; a replica
 * joining or leaving moves at most the members next to it in that order
 * (consistent hashing), not the whole set.
 * Complexity: O(k) ring steps per (ring, share), cached until the ring is
 * rebuilt; O(1) per candidate after that.
 * Trade-off: whole replicas, not a share of each one's steps: an engine
 * runs every running request's chunk in each step whatever its band
 * (docs/TENANTS.md, "Engines that schedule by priority"), so only a replica
 * without lower-band prefill keeps an interactive request's steps short.
 * Between k and k + 1 replicas, the last reserved one may be shared: it
 * takes up to `lowerSlots` lower-band requests at once (sharedSlot,
 * sharedTakes), the one share of a replica its agent counts exactly.
 */
import { hashString, type HashRing } from '@warmpath/shared/wire';

/** The side of the split a request is placed on: the reserved replicas, or the rest. */
export type ReserveSide = 'reserved' | 'rest';

/** A request's claim on the reserve (PlacementRequest.reserve): the share set apart and its side. */
export interface Reserve {
  /** Share of the group's replicas set apart for the interactive band, in (0, 1). */
  readonly share: number;
  readonly side: ReserveSide;
  /** Lower-band requests the shared replica (the last reserved one) takes at once; absent: none (sharedSlot). */
  readonly lowerSlots?: number;
  /** This router's lower-band requests open on a replica (by id) and sent after `since` (ms): beyond its last report. */
  readonly ownLower?: (id: string, since: number) => number;
}

/** The fixed key whose ring order names the reserved replicas. */
const RESERVE_KEY = hashString('warmpath/reserve/interactive');

/** How many of n members the share sets apart: round(share × n), at least 1, at most n − 1; 0 below two members. */
export function reservedCount(share: number, n: number): number {
  if (n < 2 || !(share > 0)) return 0;
  return Math.min(n - 1, Math.max(1, Math.round(share * n)));
}

const cache = new WeakMap<HashRing, Map<number, ReadonlySet<number>>>();

/** The slots of the reserved replicas of a group (its ring and ring slots), or undefined when it has none. */
export function reservedSlots(ring: HashRing, ringSlots: Int32Array, share: number): ReadonlySet<number> | undefined {
  let byShare = cache.get(ring);
  if (byShare === undefined) cache.set(ring, (byShare = new Map()));
  let set = byShare.get(share);
  if (set === undefined) {
    const k = reservedCount(share, ring.members.length);
    const slots = new Set<number>();
    const next = ring.cursor(RESERVE_KEY);
    for (let m = next(); m >= 0 && slots.size < k; m = next()) slots.add(ringSlots[m]!);
    set = slots;
    byShare.set(share, set);
  }
  return set.size === 0 ? undefined : set;
}

/**
 * The shared replica of a reserve with lower-band slots: the last of the
 * reserved ones in the ring order (the first the reserve gives back as it
 * shrinks), or -1 when none. Whole replicas cannot size the reserve between
 * k and k + 1; a share of one replica's concurrent requests can, and those
 * are what its agent counts exactly and publishes (`lowerInflight`).
 */
export function sharedSlot(reserved: ReadonlySet<number>): number {
  let last = -1;
  for (const s of reserved) last = s;
  return last;
}

/**
 * Whether a lower-band request may be placed on the shared replica now:
 * fewer than `lowerSlots` lower-band requests in flight there (its agent's
 * last `lowerInflight` plus this router's own sent since that report, at
 * `reportAt`), and no prefill queued there as this router knows it
 * (`queued`: published, its own since, what a refusal said). Invariant: a
 * lower-band prefill never starts there on top of a known queued prefill
 * (in the reserve, an interactive one), whose steps it would share.
 */
export function sharedTakes(
  reserve: Reserve,
  lowerInflight: number,
  reportAt: number,
  queued: number,
  id: string,
): boolean {
  if (queued > 0 || reserve.lowerSlots === undefined) return false;
  return lowerInflight + (reserve.ownLower?.(id, reportAt) ?? 0) < reserve.lowerSlots;
}
