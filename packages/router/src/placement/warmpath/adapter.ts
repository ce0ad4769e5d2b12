/**
 * The cold path of an adapter request. A LoRA load costs about 200 ms and may
 * wait for a slot to drain, so a cold prefix of an adapter request walks the
 * adapter's own ring (keyed by model + adapter) and takes the first replica
 * within the bound with the highest adapter tier: the adapter hot, else a free
 * slot, else one that evicts the least recently used adapter. Every router
 * sends one adapter's cold loads along the same ring, so adapters do not
 * thrash across the fleet. Rank 0 in the ring → adapter-home, later →
 * adapter-spill.
 *
 * A warm prefix never comes here: the warm step already prefers, among
 * equally deep replicas, the one with the adapter hot (tier tie-break), and
 * agents publish the adapters their engine keeps loaded, so a warm prefix and
 * a hot adapter are usually on the same replica.
 * Complexity: up to three ring walks, O(log P) + the steps to the first accepted.
 */
import { hashString } from '@warmpath/shared/wire';
import { firstInRing } from '../candidates.ts';
import type { Placement } from '../types.ts';
import { type Ctx, pick } from './context.ts';
import { ringOrSpill } from './ring-or-spill.ts';
import { TIER_EVICT, TIER_FREE, TIER_HOT } from './tier.ts';

/** A cold prefix of an adapter request: the adapter's ring, hot before a free slot before an eviction. */
export function adapterCold(ctx: Ctx): Placement | undefined {
  const info = ctx.req.info;
  if (!ctx.on('adapter-home')) return ringOrSpill(ctx);
  const key = hashString(`adapter\u0000${info.model}\u0000${info.adapter}`);
  for (const tier of [TIER_HOT, TIER_FREE, TIER_EVICT]) {
    const found = firstInRing(ctx.t, key, (i) => ctx.tier(i) >= tier && ctx.ok(i));
    if (found !== undefined) return pick(ctx, found.i, found.rank === 0 ? 'adapter-home' : 'adapter-spill');
  }
  return undefined;
}
