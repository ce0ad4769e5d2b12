/**
 * Ring or spill: a cold prefix (no adapter) goes to the first replica within
 * the bound with headroom in the key's ring order — `ring` if it is the key's
 * home among the candidates, else `spill` (deterministic, so a hot key grows
 * onto a stable set of replicas).
 *
 * Two choices on the ring: without a routing key, the next admissible member
 * takes the prompt when its published prefill queue is shorter
 * (`spill-two-choices`; a request with a routing key keeps to its home).
 * The router's `spillChoices` widens the comparison to the first d
 * admissible members (the shortest published queue wins, ties to the earlier
 * in ring order): 4 cut longctx's TTFT p99 by 4–25% on every held-out run,
 * but on the tuning seeds it cost the trace up to 0.5 points of hit rate at
 * one router, and seed's p99 at one router rose 7% over 20 further seeds,
 * so 2 stays the default (docs/ABLATION.md).
 * Locality holds — the prefix lands on one of two stable replicas and the
 * digests find it — and a long prompt no longer waits behind another on a
 * busy home (Mooncake trace, DES: TTFT p99 2,313 → 2,083 ms). Published
 * numbers only, so every router decides alike: with this router's own recent
 * work added, 4 routers split prefixes between the two and lost 2.7% of the
 * hit rate of 1 router (38.7 → 37.7%).
 * Complexity: two ring walks, O(log P) + the steps to the first spillChoices admissible.
 */
import { firstInRing } from '../candidates.ts';
import type { Placement } from '../types.ts';
import { type Ctx, pick } from './context.ts';

export function ringOrSpill(ctx: Ctx): Placement | undefined {
  const t = ctx.t;
  // With spill switched off only the key's home among the candidates may take it.
  const hit = ctx.on('spill') ? firstInRing(t, ctx.req.key, ctx.ok) : firstInRing(t, ctx.req.key, () => true);
  if (hit === undefined || !ctx.ok(hit.i)) return undefined;
  if (ctx.req.info.routingKey === undefined && ctx.on('spill-two-choices')) {
    const published = (i: number): number => t.rows[i]!.replica.state.load.prefillTokens / t.rows[i]!.weight;
    let best = hit.i;
    let compared = 1;
    firstInRing(t, ctx.req.key, (i) => {
      if (i === hit.i || !ctx.ok(i)) return false;
      if (published(i) < published(best)) best = i;
      return ++compared >= ctx.spillChoices;
    });
    if (best !== hit.i) return pick(ctx, best, 'spill-two-choices');
  }
  return pick(ctx, hit.i, hit.rank === 0 ? 'ring' : 'spill');
}
