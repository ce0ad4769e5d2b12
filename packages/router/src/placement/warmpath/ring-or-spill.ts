/**
 * Ring or spill: a cold prefix (no adapter) goes to the first replica within
 * the bound with headroom in the key's ring order — `ring` if it is the key's
 * home among the candidates, else `spill` (deterministic, so a hot key grows
 * onto a stable set of replicas).
 *
 * Two choices on the ring: the next admissible member takes the prompt when
 * less work is ahead of it (`spill-two-choices`).
 * - Without a routing key, "ahead" is the published prefill queue alone,
 *   the same on every router until a report, so a new prefix sent by
 *   several routers lands on one replica: with this router's own recent
 *   work added, 4 routers split prefixes between the two and lost 2.7% of
 *   the hit rate of 1 router (38.7 → 37.7%). Locality holds — the prefix
 *   lands on one of two stable replicas and the digests find it — and a long
 *   prompt no longer waits behind another on a busy home (Mooncake trace,
 *   DES: TTFT p99 2,313 → 2,083 ms).
 * - With a routing key the prompt is a new task (less than half of it warm
 *   anywhere, warmest.ts), the first of a stream of calls that will follow
 *   it, and "ahead" is the prefill this router knows is queued: published,
 *   plus its own work since the report and what a refusal said is queued
 *   (not the other routers' expected work, a smooth estimate whose small
 *   leftovers would decide between two idle replicas; idle, the key's home
 *   wins the tie). Keyed prompts once kept to their key's home: a new task
 *   then queued its 3–5k-token first call behind another task's on a busy
 *   home while the next replica idled (fanout, DES, held-out seeds 101–104,
 *   1 / 4 / 16 routers: TTFT p99 ×0.75 / ×0.74 / ×0.77, p50 ×0.95–0.96,
 *   hit rate within ±0.04 points; behind a 500 ms gossip delay p99 ×0.85 /
 *   ×0.90 / ×1.01, and 4 and 16 routers split a new task's calls more
 *   often, −1.0 / −1.6 points of hit rate).
 *   Keyless prompts compared this way: the trace +0.1 to +0.2 points of hit
 *   rate, longctx's p50 ×1.02–1.03, seed's one-router p99 ×1.14, tuning
 *   seeds (docs/ABLATION.md, "A new task compares two ring members").
 * The router's `spillChoices` widens the comparison to the first d
 * admissible members (the least ahead wins, ties to the earlier in ring
 * order): 4 cut longctx's TTFT p99 by 4–25% on every held-out run, but on
 * the tuning seeds it cost the trace up to 0.5 points of hit rate at one
 * router, and seed's p99 at one router rose 7% over 20 further seeds, so 2
 * stays the default (docs/ABLATION.md).
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
  if (ctx.on('spill-two-choices')) {
    const keyed = ctx.req.info.routingKey !== undefined;
    const aheadOf = (i: number): number => {
      const r = t.rows[i]!;
      return (keyed ? r.queue - r.expected : r.replica.state.load.prefillTokens) / r.weight;
    };
    let best = hit.i;
    let compared = 1;
    firstInRing(t, ctx.req.key, (i) => {
      if (i === hit.i || !ctx.ok(i)) return false;
      if (aheadOf(i) < aheadOf(best)) best = i;
      return ++compared >= ctx.spillChoices;
    });
    if (best !== hit.i) return pick(ctx, best, 'spill-two-choices');
  }
  return pick(ctx, hit.i, hit.rank === 0 ? 'ring' : 'spill');
}
