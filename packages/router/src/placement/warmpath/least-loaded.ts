/**
 * Least-loaded: the lowest load per weight among rows with KV headroom; ties
 * → the higher adapter tier, then group order. The last resort when every
 * replica is over the bound, and the whole policy for embeddings (no prefix
 * to reuse). No row with headroom → saturated (the router queues, then 429).
 * Complexity: O(rows).
 */
import { SATURATED, type Branch, type Placement } from '../types.ts';
import { headroom, type Input, loadPerWeight, pick, tier } from './input.ts';

export function leastLoaded(x: Input, branch: Branch): Placement {
  let best = -1;
  let bestLoad = Infinity;
  let bestTier = -1;
  for (let i = 0; i < x.t.rows.length; i++) {
    if (!headroom(x, i)) continue;
    const l = loadPerWeight(x, i);
    if (l > bestLoad) continue;
    if (l < bestLoad || tier(x, i) > bestTier) {
      best = i;
      bestLoad = l;
      bestTier = tier(x, i);
    }
  }
  return best < 0 ? SATURATED : pick(x, best, branch, 'load');
}
