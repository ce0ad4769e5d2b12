/**
 * Warmpath placement: cache-aware consistent hashing with bounded loads, in
 * work units (tokens), as a table of steps (docs/PLACEMENT.md).
 *
 * select: compute the request's mode once (mode.ts: every switch and every
 * routing-key rule decided there), the depth each row matched (input.ts),
 * then run STEPS in order; the first step that places the request decides.
 * A step switched off (the router's `placementOff`) is skipped here, and
 * nowhere else.
 *
 * | step         | places                                | branches |
 * | embedding    | an embedding: least-loaded            | embedding-least-loaded |
 * | retry        | a refused request, N > 1 routers      | retry-two-choices |
 * | warm         | the cheapest warm row within the bound | warm, warm-over-bound, balance |
 * | cold         | the key's (or adapter's) ring         | ring, spill, spill-two-choices, adapter-home, adapter-spill |
 * | least-loaded | every row over the bound              | least-loaded, saturated |
 *
 * Complexity: O(candidates) for the depth and the scans + a few ring walks
 * that stop at the first admissible member; the table and warmth cost
 * O(candidates + matched depth + holders) before select.
 * Trade-off: the bound caps any replica at c × its share of the fleet's
 * work, giving up some cache hits to keep tail latency (docs/PLACEMENT.md,
 * "The bound").
 */
import type { CandidateTable, Warmth } from '../candidates.ts';
import type { Placement, PlacementRequest, Policy, WarmpathOptions } from '../types.ts';
import { adapterCold } from './adapter.ts';
import { decidedBy } from './cost.ts';
import { balanceTarget, overBound, sharedTarget } from './balance.ts';
import { admissible, hardAdmissible, type Input, inputOf, pick, type Scratch } from './input.ts';
import { leastLoaded } from './least-loaded.ts';
import { modeOf, switchesOf } from './mode.ts';
import { retryTwoChoices } from './retry.ts';
import { ringOrSpill } from './ring-or-spill.ts';
import type { SwitchableStep } from './steps.ts';
import { tieBreak, warmest } from './warmest.ts';

export { adapterTier } from './tier.ts';
export { SWITCHABLE_STEPS, SWITCHABLE_STEP_NAMES, type SwitchableStep } from './steps.ts';

/** One step: its name (reported as the placement's `step`), the switch that skips it, and its rule. */
export interface Step {
  readonly name: string;
  readonly switch?: SwitchableStep;
  run(x: Input): Placement | undefined;
}

/**
 * Warm: the cheapest admissible warm row (warmest.ts), unless a deeper one
 * just over the bound is cheaper in tokens (warm-over-bound), another is
 * cheaper once a peer's prefix is priced (sharedTarget, KV sharing only),
 * or the prefix should warm one more replica (balance).
 */
function warmStep(x: Input): Placement | undefined {
  const choices = warmest(x);
  const warm = tieBreak(x, choices.within, admissible);
  if (x.mode.hardC > 0) {
    const over = overBound(x, warm?.i ?? -1, tieBreak(x, choices.hard, hardAdmissible)?.i ?? -1);
    if (over >= 0) return pick(x, over, 'warm-over-bound', 'cost');
  }
  if (warm === undefined) return undefined;
  const shared = sharedTarget(x, warm.i);
  if (shared >= 0) return pick(x, shared, 'warm', 'cost');
  const target = x.mode.balance ? balanceTarget(x, warm.i) : -1;
  if (target >= 0) return pick(x, target, 'balance', 'share');
  return pick(x, warm.i, 'warm', warm.by ?? decidedBy(x, warm.i, x.warm, (j) => admissible(x, j)));
}

/** The steps, in order (docs/PLACEMENT.md has one section per step). */
export const STEPS: readonly Step[] = [
  { name: 'embedding', run: (x) => (x.mode.embedding ? leastLoaded(x, 'embedding-least-loaded') : undefined) },
  { name: 'retry', switch: 'retry-two-choices', run: retryTwoChoices },
  { name: 'warm', switch: 'warm', run: warmStep },
  { name: 'cold', run: (x) => (x.mode.adapterRing ? adapterCold(x) : ringOrSpill(x)) },
  { name: 'least-loaded', run: (x) => leastLoaded(x, 'least-loaded') },
];

export function createWarmpathPolicy(opts: WarmpathOptions): Policy {
  const on = switchesOf(opts);
  const steps = STEPS.filter((s) => s.switch === undefined || on[s.switch]);
  const scratch: Scratch = { depth: [], reload: [] };
  return {
    name: 'warmpath',
    expectsOthers: on.expect,
    select(req: PlacementRequest, t: CandidateTable, warmth: Warmth): Placement {
      const x = inputOf(req, modeOf(req, t, on, opts), t, warmth, scratch);
      for (const step of steps) {
        const p = step.run(x);
        if (p !== undefined) return p.replica === undefined ? p : { ...p, step: step.name };
      }
      throw new Error('unreachable: least-loaded always places');
    },
    onDispatch(req, replica, local) {
      // The optimistic overlay: later requests see this prefix warm here before gossip confirms it.
      if (!on.overlay || req.endpoint === 'embedding' || req.info.hashes.length === 0) return;
      local.overlayAdd(req.info.hashes, replica.slot, req.now);
    },
  };
}
