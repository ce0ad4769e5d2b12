/**
 * Warmpath placement: cache-aware consistent hashing with bounded loads, in
 * work units (tokens). A pure composition of named steps over the candidate
 * table (docs/DESIGN-RATIONALE.md explains each choice); each step is a
 * function of (request, table, warmth, derived bound) in this folder.
 *
 * Steps (branch names in quotes):
 *  0. derive (context.ts): depth(r) = longest matched chain prefix in r's
 *     digest or in this router's optimistic overlay; the bound in units of
 *     this request's work u = promptTokens + maxTokens, floor included
 *     (withinBound); headroom: KV free ≥ uncached prompt + maxTokens.
 *     Embeddings have no prefix reuse: least-loaded directly
 *     ("embedding-least-loaded").
 *  0b. retry (retry.ts): with several routers, a request a replica refused
 *     goes to the cheapest of the admissible replicas it samples, two warm
 *     ones and a cold one when it can, the warm ones charged what the refusal
 *     found queued beyond the limit ("retry-two-choices"): the routers' next best is the same, so
 *     their retries would herd there too.
 *  1. warm (warmest.ts, balance.ts): the deepest match within the
 *     bound with headroom, ties broken by adapter tier, routing-key ring
 *     order (a keyed new task takes the cold step), prefill queue plus the
 *     work the replica's recent clients will likely send (`horizon`), id —
 *     without a routing key and with several routers, the queue within the
 *     request's own slice of the tied rows ("warm"); a deeper replica within
 *     hardBound × c whose cost is lower ("warm-over-bound"); a prefix
 *     warm on several replicas, the pick
 *     over its share → an under-loaded replica warms it too ("balance").
 *  2. cold (ring-or-spill.ts, adapter.ts): the key's ring home within the
 *     bound ("ring"), a later replica in ring order ("spill"), or the second
 *     with less prefill queued ("spill-two-choices": published; for a
 *     keyed new task, with this router's work since the report); with an
 *     adapter: the adapter's own ring, hot before a free slot before an
 *     eviction ("adapter-home" / "adapter-spill").
 *  3. least-loaded (least-loaded.ts): every replica over the bound → the
 *     lowest load per weight with headroom ("least-loaded"); none has
 *     headroom → "saturated".
 *  Every pick carries a queue limit for the agent (context.ts, `pick`).
 * Complexity: O(candidates) for the derived arrays and scans + a few ring
 * walks that stop at the first admissible member (O(log P) + a few steps
 * typically); the table and warmth cost O(candidates + matched depth +
 * holders) before select.
 * Ablation: the router's `placementOff` switches steps off one at a time
 * (steps.ts lists them and what each falls back to).
 * Trade-off: the bound caps any replica at c × its share of the fleet's work,
 * giving up some cache hits to keep tail latency; a larger c keeps more hits
 * on hot replicas. c = 1.75 (loadFactor) beat 1.25 on every scenario without
 * a routing key (DES, seeds 1–3, 1/4/16 routers: seed TTFT p50 −7 to −16 ms
 * and +1.0 to +1.4 points of hit rate, longctx +1.6 to +3.8 points, lora
 * about half the adapter loads). A request with a routing key asks for
 * cache affinity, and its c is 3 (keyLoadFactor): a new task goes to its
 * key's ring home or the next member when less prefill is queued there (not
 * to the least-loaded holder of a shared system
 * prompt, which each router judged by its own view), and its calls stay
 * there unless the key is hot. With 1.25 and the least-loaded holder, 4 and
 * 16 routers split new tasks (fanout, DES, held-out seeds 101–104: hit rate
 * 93.5–94.3% against 95.0–95.3% at one router); now 95.2–95.6% at 1, 4 and
 * 16 routers, TTFT p50 76–86 ms against 75–93 (docs/ABLATION.md). Keyless
 * requests have other spreaders (the queue tie-break,
 * slice, balance); keyed ones skip them. The floor (boundFloorTokens,
 * measured on the Mooncake trace: 15k-token prompts spilled off warm replicas
 * without it) keeps a replica with little work from ever counting as full.
 */
import type { CandidateTable, Warmth } from '../candidates.ts';
import type { Placement, PlacementRequest, Policy, WarmpathOptions } from '../types.ts';
import { adapterCold } from './adapter.ts';
import { balanceTarget, overBound } from './balance.ts';
import { type Ctx, derive, pick } from './context.ts';
import { leastLoaded } from './least-loaded.ts';
import { retryTwoChoices } from './retry.ts';
import { ringOrSpill } from './ring-or-spill.ts';
import { keyTieBreak, warmest } from './warmest.ts';

export { adapterTier } from './tier.ts';
export { SWITCHABLE_STEPS, SWITCHABLE_STEP_NAMES, type SwitchableStep } from './steps.ts';

/**
 * Step 1: a placement on a warm replica (or one that should warm the prefix),
 * if any is warm. A step switched off (placementOff) is skipped: the pick it
 * would have refined stands.
 */
function warmStep(ctx: Ctx): Placement | undefined {
  if (!ctx.on('warm')) return undefined;
  const choices = warmest(ctx);
  const warm = keyTieBreak(ctx, choices.within, ctx.ok);
  if (ctx.on('warm-over-bound')) {
    const over = overBound(ctx, warm, keyTieBreak(ctx, choices.hard, ctx.hardOk));
    if (over >= 0) return pick(ctx, over, 'warm-over-bound');
  }
  if (warm < 0) return undefined;
  const target = ctx.on('balance') ? balanceTarget(ctx, warm) : -1;
  return target >= 0 ? pick(ctx, target, 'balance') : pick(ctx, warm, 'warm');
}

export function createWarmpathPolicy(opts: WarmpathOptions): Policy {
  const off: ReadonlySet<string> = new Set(opts.placementOff ?? []);
  return {
    name: 'warmpath',
    expectsOthers: !off.has('expect'),
    select(req: PlacementRequest, t: CandidateTable, warmth: Warmth): Placement {
      const ctx = derive(req, t, warmth, opts, off);
      if (req.info.kind === 'embedding') return leastLoaded(ctx, 'embedding-least-loaded');
      const retry = ctx.on('retry-two-choices') ? retryTwoChoices(ctx) : undefined;
      if (retry !== undefined) return retry;
      const cold = (): Placement | undefined => (req.info.adapter === '' ? ringOrSpill(ctx) : adapterCold(ctx));
      return warmStep(ctx) ?? cold() ?? leastLoaded(ctx, 'least-loaded');
    },
    onDispatch(req, replica, local) {
      // The optimistic overlay: later requests see this prefix warm here before gossip confirms it.
      if (off.has('overlay') || req.endpoint === 'embedding' || req.info.hashes.length === 0) return;
      local.overlayAdd(req.info.hashes, replica.slot, req.now);
    },
  };
}
