/**
 * Adapter steps. A LoRA load costs about 200 ms and may wait for a slot to
 * drain, so an adapter request goes where the adapter is hot when it can, and
 * a cold load goes to the adapter's own ring home — every router sends one
 * adapter's cold loads to the same replica, so adapters do not thrash.
 *
 * - adapter-hot override: the warm pick lacks the adapter; the first replica
 *   in the key's ring order with it hot, up to HARD_BOUND × c, takes it.
 * - adapter-hot: no warm prefix; the first replica in the key's ring order
 *   with the adapter hot, within the bound.
 * - adapter home / spill: the adapter's ring (keyed by model + adapter):
 *   first with a free slot within the bound, else the first within the bound
 *   (it evicts one); rank 0 → adapter-home, later → adapter-spill.
 * Complexity: a ring walk each, O(log P) + the steps to the first accepted.
 * Trade-off: a short warm prefix is given up for a hot adapter; the bound
 * still caps how much one hot replica takes.
 */
import { hashString } from '@warmpath/shared/wire';
import { firstInRing } from '../candidates.ts';
import type { Placement } from '../types.ts';
import { type Ctx, pick } from './context.ts';
import { ringOrSpill } from './ring-or-spill.ts';
import { TIER_FREE, TIER_HOT } from './tier.ts';

/**
 * An adapter loaded elsewhere beats a warm prefix where it is not: a hot
 * replica up to HARD_BOUND × c over the bound takes it (lora, DES, seeds 1–3:
 * TTFT p99 357/462/254 → 247/322/249 ms, adapter loads 152/141/167 →
 * 155/128/141). Returns the row, or -1.
 */
export function adapterHotOverride(ctx: Ctx, warm: number): number {
  if (ctx.req.info.adapter === '' || ctx.tier(warm) === TIER_HOT) return -1;
  return firstInRing(ctx.t, ctx.req.key, (i) => ctx.tier(i) === TIER_HOT && ctx.hardOk(i))?.i ?? -1;
}

/** A cold prefix of an adapter request: adapter-hot, else the adapter's ring home or spill. */
export function adapterCold(ctx: Ctx): Placement | undefined {
  const info = ctx.req.info;
  const hot = ctx.on('adapter-hot') ? firstInRing(ctx.t, ctx.req.key, (i) => ctx.tier(i) === TIER_HOT && ctx.ok(i)) : undefined;
  if (hot !== undefined) return pick(ctx, hot.i, 'adapter-hot');
  if (!ctx.on('adapter-home')) return ringOrSpill(ctx);
  const key = hashString(`adapter\u0000${info.model}\u0000${info.adapter}`);
  const any = firstInRing(ctx.t, key, (i) => ctx.tier(i) >= TIER_FREE && ctx.ok(i)) ?? firstInRing(ctx.t, key, ctx.ok);
  if (any === undefined) return undefined;
  return pick(ctx, any.i, any.rank === 0 ? 'adapter-home' : 'adapter-spill');
}
