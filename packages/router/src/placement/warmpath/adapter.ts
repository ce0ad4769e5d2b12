/**
 * The cold path of an adapter request (mode.adapterRing). A LoRA load costs
 * about as much as a long prefill and may wait for a slot to drain, so a
 * cold prefix of an adapter request walks the adapter's own ring (keyed by
 * model + adapter) and takes the first admissible replica of the highest
 * adapter tier: the adapter hot, else a free slot, else one that evicts the
 * least recently used adapter. Every router sends one adapter's cold loads
 * along the same ring, so adapters do not thrash across the fleet. Rank 0 in
 * the ring → adapter-home, later → adapter-spill (docs/PLACEMENT.md, "Cold").
 * Complexity: up to three ring walks, O(log P) + the steps to the first accepted.
 */
import { hashString } from '@warmpath/shared/wire';
import { firstInRing } from '../candidates.ts';
import type { Placement } from '../types.ts';
import { admissible, type Input, pick, tier } from './input.ts';
import { TIER_EVICT, TIER_FREE, TIER_HOT } from './tier.ts';

export function adapterCold(x: Input): Placement | undefined {
  const info = x.req.info;
  const key = hashString(`adapter\u0000${info.model}\u0000${info.adapter}`);
  for (const want of [TIER_HOT, TIER_FREE, TIER_EVICT]) {
    const found = firstInRing(x.t, key, (i) => tier(x, i) >= want && admissible(x, i));
    if (found !== undefined) return pick(x, found.i, found.rank === 0 ? 'adapter-home' : 'adapter-spill', 'adapter');
  }
  return undefined;
}
