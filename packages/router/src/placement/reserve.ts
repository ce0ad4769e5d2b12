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
 */
import { hashString, type HashRing } from '@warmpath/shared/wire';

/** The side of the split a request is placed on: the reserved replicas, or the rest. */
export type ReserveSide = 'reserved' | 'rest';

/** A request's claim on the reserve (PlacementRequest.reserve): the share set apart and its side. */
export interface Reserve {
  /** Share of the group's replicas set apart for the interactive band, in (0, 1). */
  readonly share: number;
  readonly side: ReserveSide;
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
