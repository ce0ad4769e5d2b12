/**
 * Least-loaded: the lowest load per weight among rows with KV headroom; ties
 * → the higher adapter tier, then group order. The last resort when every
 * replica is over the bound, and the whole policy for embeddings (no prefix
 * to reuse). No row with headroom → saturated (the router queues, then 429).
 * Complexity: O(rows).
 */
import { SATURATED, type Branch, type Placement } from '../types.ts';
import { type Ctx, loadPerWeight, pick } from './context.ts';

export function leastLoaded(ctx: Ctx, branch: Branch): Placement {
  let best = -1;
  let bestLoad = Infinity;
  let bestTier = -1;
  for (let i = 0; i < ctx.t.rows.length; i++) {
    if (!ctx.headroom(i)) continue;
    const l = loadPerWeight(ctx, i);
    if (l > bestLoad) continue;
    if (l < bestLoad || ctx.tier(i) > bestTier) {
      best = i;
      bestLoad = l;
      bestTier = ctx.tier(i);
    }
  }
  return best < 0 ? SATURATED : pick(ctx, best, branch);
}
