/** Adapter tiers: what placing an adapter request on a replica costs in adapter loads. */
import type { Replica } from '../../fleet/view.ts';

export const TIER_EVICT = 0;
export const TIER_FREE = 1;
export const TIER_HOT = 2;

/** Loading the adapter on r: hot (nothing to load), a free slot, or evicting another; TIER_HOT without an adapter. */
export function adapterTier(r: Readonly<Replica>, adapter: string): number {
  if (adapter === '') return TIER_HOT;
  const s = r.state;
  if (s.hotAdapters.includes(adapter)) return TIER_HOT;
  return s.hotAdapters.length < s.capacity.adapterSlots ? TIER_FREE : TIER_EVICT;
}
