/**
 * The rules that may move a warm request off the warmest row within the
 * bound (docs/PLACEMENT.md, "Warm"; sharedTarget: "Tiers and peers"):
 *
 * - overBound (warm-over-bound): a deeper warm row over the bound, within
 *   mode.hardC × its share, wins when its token cost (cost.ts) is no dearer
 *   than the pick's within the bound: a long conversation is not
 *   re-prefilled on a shallower replica whenever its home is a little busy.
 * - balanceTarget (balance): a prefix warm on several replicas (a system
 *   prompt) costs little to warm once more. When the pick is over its share
 *   of the fleet's work and some row carries under 1/BALANCE_UNDER of its
 *   share, one of the first such rows in the key's ring order takes the
 *   request, and the prefix's warm set grows. A prefix warm on one replica
 *   only (a session's history) stays home.
 * Complexity: O(rows) + one ring walk each.
 */
import { firstInRing } from '../candidates.ts';
import { sharedCost, tokenCost } from './cost.ts';
import { admissible, headroom, type Input, loadPerWeight, someRow, tier, underFloor } from './input.ts';

/**
 * `deeper` (the warmest within mode.hardC) when it is deeper than `warm`
 * (the warmest within the bound) and no dearer in tokens — or, with no warm
 * row, than the key's ring home's (no adapter) — else -1. A row deeper than
 * `warm` is never within the bound, so this pick is always over it.
 */
export function overBound(x: Input, warm: number, deeper: number): number {
  if (deeper < 0 || deeper === warm || x.depth[deeper]! <= (warm >= 0 ? x.depth[warm]! : 0)) return -1;
  const home = (): number =>
    x.req.info.adapter === '' ? (firstInRing(x.t, x.req.key, (i) => admissible(x, i))?.i ?? -1) : -1;
  const alt = warm >= 0 ? warm : home();
  return alt < 0 || tokenCost(x, deeper) <= tokenCost(x, alt) ? deeper : -1;
}

/**
 * With KV sharing priced (mode.peerCredit > 0), the admissible row cheapest
 * by `sharedCost` when it is cheaper than the warm pick `w`, else -1: a
 * long prompt whose holder is busy is fetched onto a quieter replica, while
 * a busy replica's many running sequences keep a short one home.
 * Complexity: O(warm rows), every row warm under the peer credit.
 */
export function sharedTarget(x: Input, w: number): number {
  if (x.mode.peerCredit <= 0) return -1;
  let best = w;
  let cost = sharedCost(x, w);
  for (const i of x.warm) {
    if (i === w || !admissible(x, i)) continue;
    const c = sharedCost(x, i);
    if (c < cost) {
      cost = c;
      best = i;
    }
  }
  return best === w ? -1 : best;
}

/** balance warms a prefix on a row only while it carries under 1/this of its share (docs/ABLATION.md). */
export const BALANCE_UNDER = 3;

/** The row that should warm the prefix of the warm pick `w` instead, or -1. */
export function balanceTarget(x: Input, w: number): number {
  const t = x.t;
  const share = t.totalLoad / t.totalWeight;
  // Under the floor the pick is not busy at all; at or under its share it is not over-used.
  if (underFloor(x, w) || loadPerWeight(x, w) <= share) return -1;
  const d = x.depth[w]!;
  if (!heldTwice(x, d)) return -1;
  // Nearly idle: the miss of warming the prefix there is paid back by a short queue.
  const under = (i: number): boolean => t.rows[i]!.load * BALANCE_UNDER < share * t.rows[i]!.weight;
  // Most often no row is that idle: say so in one pass over the rows rather than a walk of the whole ring.
  if (!someRow(t.rows.length, (i) => x.depth[i]! < d && under(i))) return -1;
  const target = (i: number): boolean => x.depth[i]! < d && under(i) && headroom(x, i) && tier(x, i) >= tier(x, w);
  const spread = x.mode.balanceSpread;
  const found: number[] = [];
  firstInRing(t, x.req.key, (i) => {
    if (target(i)) found.push(i);
    return found.length >= spread;
  });
  return found.length === 0 ? -1 : found[x.mode.draw % found.length]!;
}

/** Do at least two rows match `d` chunks or more (the prefix is warm on several replicas)? Stops at the second. */
function heldTwice(x: Input, d: number): boolean {
  let holders = 0;
  for (const i of x.warm) if (x.depth[i]! >= d && ++holders === 2) return true;
  return false;
}
