/**
 * What every warmpath step derives from (request, candidate table, warmth)
 * before choosing: the depth each row matched, its adapter tier, and the
 * request's bound — all computed once per request, read by pure steps.
 *
 * The bound is counted in units of this request's work u = promptTokens +
 * maxTokens (withinBound in the shared ring module, floor included): a
 * replica with little work is never "full", and the floor grows with the
 * request. Headroom: KV free (after this router's own recent work) ≥ the
 * uncached prompt + maxTokens.
 *
 * The floor is shared (step `share`): a replica under it is "not busy at
 * all" to every router at once, so between two of its reports each router
 * counts its own work sent there since the last one ×N (N = the routers the
 * fleet's traffic suggests, CandidateTable.routers) and together they fill
 * about one floor, not N. Only the floor: counted against the bound as well,
 * the estimate's noise (a router sends a replica 0 or 1 requests between
 * reports) cost the fanout scenario 1.5–2.3 points of hit rate on 10
 * replicas, for a p99 1.7× lower at 1,000 (docs/SCALE.md).
 *
 * The other routers' work since a report is also expected from the replica's
 * side (step `expect`, Candidate.expected): its published arrival rate × the
 * report's age × (1 − 1/N). It counts against the floor (the larger of it
 * and `share`'s estimate, which estimate the same work) and in the prefill
 * queue (the tie-breaks, warm-over-bound's cost, the queue limit), not
 * against the bound: counted there too, 100 routers on 1,000 replicas gained
 * less (p50 170 against 118 ms), and 10 replicas at 4 and 16 routers lost
 * more hit rate (longctx −0.9 points against −0.4; docs/SCALE.md).
 *
 * Every pick carries a queue limit (step `queue-limit`): the prefill this
 * router expects queued on the replica — its published queue plus this
 * router's work since, plus this request's work — and the prefill the
 * replica saves the request over the best other replica (its extra matched
 * depth). The agent refuses the request when more is queued than that
 * (reason `stale`): other routers chose the same replica since its last
 * report, and another replica now serves the request sooner. It says how
 * much is queued, and until the replica's next report this router's view
 * holds that figure (LocalState.noteQueued), so its later requests avoid the
 * replica too (10 routers on 1,000 replicas: TTFT p50 169 → 140 ms). The core sends
 * no limit on a request's last attempt, and a request with an explicit
 * routing key gets none (it asks for affinity: limited, a fan-out's calls
 * left their warm replica, fanout hit rate −1 to −1.5 points at 4 and 16
 * routers, DES seeds 1–3).
 */
import { mix32 } from '@warmpath/shared/runtime';
import { type RequestInfo, underFloor, withinBound } from '@warmpath/shared/wire';
import type { CandidateTable, Warmth } from '../candidates.ts';
import type { Branch, Placement, PlacementRequest, WarmpathOptions } from '../types.ts';
import type { SwitchableStep } from './steps.ts';
import { adapterTier } from './tier.ts';

/**
 * How far over the load bound (× c) a deeper warm replica may still be
 * chosen (warm-over-bound), by default (the router's `hardBound`). Without
 * this cap, the cost alone decides: the trace gains 0.2–1.1 points of hit
 * rate and 1–4% of TTFT p50, but the seed scenario's p99 at one router rises
 * 16% (20 seeds never tuned on; docs/ABLATION.md, "The trace's hit-rate gap").
 */
export const DEFAULT_HARD_BOUND = 2;

/** How many admissible replicas in ring order a cold prompt compares, by default (the router's `spillChoices`; docs/ABLATION.md). */
export const DEFAULT_SPILL_CHOICES = 2;

/**
 * How far ahead equally warm replicas count the work their recent clients
 * send (step `horizon`), ms, by default (the router's `homeHorizonMs`). A tie
 * among equally warm replicas is a shared prefix (a system prompt) and most
 * often a new conversation choosing its home: its later turns follow it
 * there. The prefill queue shows only the work of this instant; a replica
 * whose conversations are between turns has an empty queue and a busy next
 * few seconds. Its published recent work rate (RECENT_TAU_MS) × 3 s is
 * added to the queue they are compared by. On 20 seeds never tuned on
 * (DES, 1/4/16 routers): seed's TTFT p99 ×0.96 / ×0.96 / ×0.99 and chat's
 * ×0.98 / ×0.97 / ×0.95, faster in 11–18 runs of 20; long prompts with
 * little reuse (longctx) ×1.00–1.02 on p99 and ×0.98–1.00 on p50
 * (docs/ABLATION.md).
 */
export const DEFAULT_HOME_HORIZON_MS = 3_000;

export interface Ctx {
  /** Is this step switched on (not in the router's placementOff)? */
  on(step: SwitchableStep): boolean;
  readonly req: PlacementRequest;
  readonly t: CandidateTable;
  /** Matched chain depth per row, chunks: max(digest, overlay); 0 for embeddings (no prefix reuse). */
  readonly depth: readonly number[];
  /** The rows with depth > 0, in no particular order (every choice among them is a total order): every scan for the warmest reads only these. */
  readonly warm: readonly number[];
  /** Adapter tier of row i (TIER_HOT when the request has no adapter). */
  tier(i: number): number;
  readonly tokensPerChunk: number;
  /** Bounded-load factor c. */
  readonly c: number;
  /** Row i is under the bound's floor for this request (counting the other routers' work: share, expect): not busy at all. */
  underFloor(i: number): boolean;
  /** Within c (or `factor`) × its share, in units of this request's work, or under the floor. */
  within(i: number, factor?: number): boolean;
  /** Tokens the request adds to row i: its uncached prompt there + maxTokens. */
  work(i: number): number;
  /** Row i has the KV room for work(i). */
  headroom(i: number): boolean;
  /** Within the bound, with headroom. */
  ok(i: number): boolean;
  /** Within hardBound × the bound, with headroom. */
  hardOk(i: number): boolean;
  /** Routers besides this one sharing the clients (round(CandidateTable.routers) - 1; 0 with `share` off). */
  readonly others: number;
  /** This request's own pseudo-random 32-bit draw: the same on every router, different for different prompts. */
  readonly draw: number;
  /** Matched depth of the deepest row other than i with KV headroom, chunks (0 when none). */
  altDepth(i: number): number;
  /** Admissible replicas in ring order a cold prompt without a routing key compares (spill-two-choices). */
  readonly spillChoices: number;
  /** Seconds of a row's recent work rate counted on top of its queue when equally warm rows are compared (0 with `horizon` off). */
  readonly horizonS: number;
}

/** Ctx.depth's storage, reused by every derive (each Ctx is read only within the select that made it). */
const DEPTH: number[] = [];

/** `off`: the steps switched off (placementOff), as a set built once per policy. */
export function derive(
  req: PlacementRequest,
  t: CandidateTable,
  warmth: Warmth,
  opts: WarmpathOptions,
  off: ReadonlySet<string>,
): Ctx {
  const info = req.info;
  const rows = t.rows;
  // A routing key gathers its calls on one replica, and only the bound spreads a burst of them: its own, tighter c.
  const c = info.routingKey !== undefined ? opts.keyLoadFactor : opts.loadFactor;
  const on = (step: SwitchableStep): boolean => !off.has(step);
  const tokensPerChunk = opts.chunkChars / opts.charsPerToken;
  const unit = Math.max(1, info.promptTokens + info.maxTokens);
  // One array for every request (a Ctx lives only within its select, and selects do not nest): not 1,000 fresh slots a request.
  const depth = DEPTH;
  depth.length = rows.length;
  depth.fill(0);
  const warm: number[] = [];
  const overlay = on('overlay');
  if (info.kind !== 'embedding') {
    for (const i of warmth.warm) {
      depth[i] = Math.max(warmth.digest[i]!, overlay ? warmth.overlay[i]! : 0);
      if (depth[i]! > 0) warm.push(i);
    }
  }
  const floor = on('bound-floor') ? opts.boundFloorTokens : 0;
  const hardBound = opts.hardBound ?? DEFAULT_HARD_BOUND;
  // share: against the floor, this router's work since a report counts once per router sharing the clients (a whole number: one router is one).
  const others = on('share') ? Math.round(t.routers) - 1 : 0;
  const isUnderFloor = (i: number): boolean => {
    const r = rows[i]!;
    // share and expect estimate the same work (the other routers' since the report): the larger counts.
    return underFloor({ load: r.load + Math.max(others * r.added, r.expected), weight: r.weight, cost: unit, floor });
  };
  const within = (i: number, factor = c): boolean => {
    const r = rows[i]!;
    return (
      isUnderFloor(i) ||
      withinBound({
        load: r.load,
        weight: r.weight,
        totalLoad: t.totalLoad,
        totalWeight: t.totalWeight,
        cost: unit,
        factor,
      })
    );
  };
  const work = (i: number): number =>
    Math.max(0, info.promptTokens - Math.floor(depth[i]! * tokensPerChunk)) + info.maxTokens;
  const headroom = (i: number): boolean => rows[i]!.kvFree >= work(i);
  // The two deepest rows with headroom, for altDepth: one scan of the warm rows, on first use (a cold row adds depth 0).
  let top = -2;
  let second = 0;
  const altDepth = (i: number): number => {
    if (top === -2) {
      top = -1;
      for (const j of warm) {
        if (!headroom(j)) continue;
        if (top < 0 || depth[j]! > depth[top]!) {
          if (top >= 0) second = depth[top]!;
          top = j;
        } else if (depth[j]! > second) second = depth[j]!;
      }
    }
    return i === top ? second : top >= 0 ? depth[top]! : 0;
  };
  return {
    on,
    req,
    t,
    depth,
    warm,
    tier: (i) => adapterTier(rows[i]!.replica, info.adapter),
    tokensPerChunk,
    c,
    underFloor: isUnderFloor,
    within,
    work,
    headroom,
    ok: (i) => within(i) && headroom(i),
    hardOk: (i) => headroom(i) && within(i, c * hardBound),
    spillChoices: opts.spillChoices ?? DEFAULT_SPILL_CHOICES,
    horizonS: on('horizon') ? (opts.homeHorizonMs ?? DEFAULT_HOME_HORIZON_MS) / 1000 : 0,
    others,
    draw: drawOf(info),
    altDepth,
  };
}

/** A 32-bit draw from the request's last chain hash, its tail's hash and its length. */
function drawOf(info: RequestInfo): number {
  const h = info.hashes.length > 0 ? info.hashes[info.hashes.length - 1]! : 0n;
  return mix32(Number(h & 0xffffffffn) ^ Number(h >> 32n) ^ mix32(info.tailHash ^ info.promptChars));
}

/** Row i's work per unit of weight, tokens. */
export function loadPerWeight(ctx: Ctx, i: number): number {
  const r = ctx.t.rows[i]!;
  return r.load / r.weight;
}

export function pick(ctx: Ctx, i: number, branch: Branch): Placement {
  const work = ctx.work(i);
  // A request with an explicit routing key asks for affinity (a fan-out's calls): no limit moves it off its pick.
  if (!ctx.on('queue-limit') || ctx.req.info.routingKey !== undefined)
    return { replica: ctx.t.rows[i]!.replica, branch, work };
  const saved = Math.max(0, ctx.depth[i]! - ctx.altDepth(i)) * ctx.tokensPerChunk;
  return { replica: ctx.t.rows[i]!.replica, branch, work, queueLimit: Math.ceil(ctx.t.rows[i]!.queue + work + saved) };
}
