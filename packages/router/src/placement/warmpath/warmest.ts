/**
 * Warmest: the cheapest warm row within the bound, and within the wider
 * bound of warm-over-bound (mode.hardC), by the cost's terms in order
 * (depth, adapter, queue, id: cost.ts), then the tie among equally warm rows
 * re-broken by the routing key's ring or the request's slice
 * (docs/PLACEMENT.md, "Warm").
 * Complexity: O(warm rows), one scan for both choices; a tie-break adds
 * O(warm rows) or one ring walk.
 */
import { mix32 } from '@warmpath/shared/runtime';
import { firstInRing } from '../candidates.ts';
import { ahead, cheaper } from './cost.ts';
import { type By, hardAdmissible, headroom, type Input, tier, within } from './input.ts';

/** The warmest row found: its index, depth and adapter tier. */
export interface Choice {
  readonly i: number;
  readonly depth: number;
  readonly tier: number;
}

/** A row chosen, and the tie-break that re-broke it (undefined: the cost's order decided; see cost.ts, decidedBy). */
export interface Chosen {
  readonly i: number;
  readonly by: By | undefined;
}

function better(x: Input, i: number, best: Choice | undefined): boolean {
  return best === undefined || cheaper(x, i, best.i) !== undefined;
}

/**
 * One scan, two choices: the cheapest warm row within the bound (`within`)
 * and within mode.hardC × the share (`hard`, none when hardC is 0), both
 * with headroom. The bound is monotone in the factor, so every `within`
 * candidate is a `hard` one, and a row shallower than the `within` choice
 * can win neither.
 */
export function warmest(x: Input): { within: Choice | undefined; hard: Choice | undefined } {
  let within_: Choice | undefined;
  let hard: Choice | undefined;
  const wide = x.mode.hardC > 0;
  for (const i of x.warm) {
    const d = x.depth[i]!;
    if (within_ !== undefined && d < within_.depth) continue;
    if (wide ? !hardAdmissible(x, i) : !headroom(x, i)) continue;
    if (wide && better(x, i, hard)) hard = { i, depth: d, tier: tier(x, i) };
    if (within(x, i) && better(x, i, within_)) within_ = { i, depth: d, tier: tier(x, i) };
  }
  return { within: within_, hard };
}

/**
 * The choice after the tie among equally warm rows is re-broken, or
 * undefined for none (docs/PLACEMENT.md, "Warm"):
 * - keyed (mode.keyRing): the key's ring order among the tied rows, so every
 *   router sends a key's simultaneous calls to one replica; when less than
 *   half the prompt is warm anywhere the key's history is on no replica yet
 *   (a new task behind a shared prefix): none, and the cold step places it
 *   on its key's ring;
 * - keyless with several routers (mode.slices > 1): the request's slice.
 */
export function tieBreak(
  x: Input,
  choice: Choice | undefined,
  admit: (x: Input, i: number) => boolean,
): Chosen | undefined {
  if (choice === undefined) return undefined;
  const m = x.mode;
  const info = x.req.info;
  if (m.keyRing) {
    if (choice.depth * m.tokensPerChunk < 0.5 * info.promptTokens) return undefined;
    const tied = (i: number): boolean => x.depth[i] === choice.depth && tier(x, i) === choice.tier && admit(x, i);
    const home = firstInRing(x.t, x.req.key, tied);
    if (home !== undefined) return { i: home.i, by: 'ring' };
  } else if (m.slices > 1) {
    const i = sliceTieBreak(x, choice, admit);
    if (i >= 0) return { i, by: 'slice' };
  }
  return { i: choice.i, by: undefined };
}

/**
 * The tie among equally warm rows for a keyless request when N > 1 routers
 * share the clients. Every router sees the same published queues between
 * two reports; ranked over all rows, each would send its next request to the
 * same shortest queue. So only the rows in this request's slice compete:
 * about 1/N of them, drawn from a hash of the request and the replica id —
 * the same on every router, different for different prompts. Among them:
 * the shortest queue per weight (`ahead`, with this router's work since
 * each report counted once per router), equal queues by the request's own
 * rank of the rows; -1 when no tied row falls in the slice.
 * Complexity: O(warm rows), one hash per row.
 */
function sliceTieBreak(x: Input, choice: Choice, admit: (x: Input, i: number) => boolean): number {
  const n = x.mode.slices;
  let best = -1;
  let bestQueue = Infinity;
  let bestRank = 0;
  for (const i of x.warm) {
    if (x.depth[i] !== choice.depth) continue;
    const r = x.t.rows[i]!;
    const rank = mix32(x.mode.draw ^ r.replica.idHash);
    if (tier(x, i) !== choice.tier || rank % n !== 0 || !admit(x, i)) continue;
    const q = (ahead(x, r) + x.mode.others * r.added) / r.weight;
    // Equal queues (idle replicas) go by the request's own rank of them, not by id: different requests, different replicas.
    if (q < bestQueue || (q === bestQueue && rank < bestRank)) {
      bestQueue = q;
      bestRank = rank;
      best = i;
    }
  }
  return best;
}
