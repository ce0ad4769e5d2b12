/**
 * Warmest: the deepest warm row within the bound, and within hardBound ×
 * the bound, with their ties broken.
 *
 * Steps: among rows with a matched depth > 0 and KV headroom, the deepest;
 * ties → higher adapter tier (hot > free slot > evict), then the shortest
 * prefill queue per weight (published prefillTokens + this router's
 * work since), with the work the replica's recent clients will likely send
 * over the next few seconds on top (`ahead`, step `horizon`), then the
 * lower id — so a prefix warm everywhere (a common system prompt)
 * spreads, and every router breaks ties alike; with several routers and no
 * routing key, within the request's own slice (`slice`). With an explicit
 * routing key, `keyTieBreak` then re-breaks the tie (below).
 * Depth beats queue: measured, trading locality for a shorter queue loses
 * more cache hits (and so prefill capacity) than it saves.
 * Complexity: O(rows), one scan for both choices; keyTieBreak adds O(rows)
 * or one ring walk.
 */
import { mix32 } from '@warmpath/shared/runtime';
import { type Candidate, firstInRing } from '../candidates.ts';
import type { Ctx } from './context.ts';

/** The warmest row found: its index, depth and adapter tier. */
export interface Choice {
  readonly i: number;
  readonly depth: number;
  readonly tier: number;
}

/** Row r's prefill queue plus the work its recent clients will likely send over the horizon (0 s with `horizon` off), tokens. */
function ahead(ctx: Ctx, r: Candidate): number {
  return r.queue + ctx.horizonS * r.recent;
}

/** Is row i preferred over row j of the same depth: tier, then `ahead` per weight, then id. */
function preferred(ctx: Ctx, i: number, j: number): boolean {
  if (ctx.tier(i) !== ctx.tier(j)) return ctx.tier(i) > ctx.tier(j);
  const a = ctx.t.rows[i]!;
  const b = ctx.t.rows[j]!;
  const qa = ahead(ctx, a) / a.weight;
  const qb = ahead(ctx, b) / b.weight;
  return qa < qb || (qa === qb && a.replica.id < b.replica.id);
}

function better(ctx: Ctx, i: number, d: number, best: Choice | undefined): boolean {
  return best === undefined || d > best.depth || (d === best.depth && preferred(ctx, i, best.i));
}

/**
 * One scan, two choices: the warmest row within the bound (`within`) and
 * within hardBound × the bound (`hard`), both with headroom. The bound is
 * monotone in c, so every `within` candidate is a `hard` one, and a row
 * shallower than the `within` choice can win neither.
 */
export function warmest(ctx: Ctx): { within: Choice | undefined; hard: Choice | undefined } {
  let within: Choice | undefined;
  let hard: Choice | undefined;
  for (const i of ctx.warm) {
    const d = ctx.depth[i]!;
    if ((within !== undefined && d < within.depth) || !ctx.hardOk(i)) continue;
    if (better(ctx, i, d, hard)) hard = { i, depth: d, tier: ctx.tier(i) };
    if (ctx.within(i) && better(ctx, i, d, within)) within = { i, depth: d, tier: ctx.tier(i) };
  }
  return { within, hard };
}

/**
 * The choice's row after the routing-key tie-break, or -1 for none. An
 * explicit routing key (a fan-out's calls, a session) breaks ties by the key's
 * ring order instead of the queue: every router then sends the key's
 * simultaneous calls to the same replica, before any of them can see the
 * others' work.
 *
 * When less than half the prompt is warm anywhere, the key's own history is
 * on no replica yet (a new task behind a shared system prompt): -1, so the
 * key's ring decides (the cold step, bounded by keyLoadFactor: whichever
 * of its first two admissible members has less prefill queued) and not the
 * holders of the shared prefix. Every router computes the same two members
 * from the key, so a new task's parallel calls gather on one replica even
 * before any router can see where the first one went, unless the routers'
 * views of the two differ (ring-or-spill.ts). Sent to the
 * least-loaded holder instead, each router chose by its own view of the
 * loads, which the task's first calls were changing: with 4 routers 136 of
 * 295 new tasks split over 2–4 replicas in their first 80 ms (fanout, seed
 * 1), the hit rate fell from 95.1% at one router to 93.7%, and the shared
 * prefix drew new tasks onto its few holders (docs/ABLATION.md).
 */
export function keyTieBreak(ctx: Ctx, choice: Choice | undefined, admit: (i: number) => boolean): number {
  if (choice === undefined) return -1;
  const info = ctx.req.info;
  if (info.routingKey === undefined) return ctx.on('slice') ? sliceTieBreak(ctx, choice, admit) : choice.i;
  if (!ctx.on('key-tie-break')) return choice.i;
  if (choice.depth * ctx.tokensPerChunk < 0.5 * info.promptTokens) return -1;
  const tied = (i: number): boolean => ctx.depth[i] === choice.depth && ctx.tier(i) === choice.tier && admit(i);
  return firstInRing(ctx.t, ctx.req.key, tied)?.i ?? choice.i;
}

/**
 * Fewest candidates per slice. Measured (DES, seed scenario on 10 replicas,
 * 4 routers, seeds 1–3 and 101–104): with 1/N of 10 replicas (2 or 3), p99
 * rose 40–60 ms against no slice; with at least 4, it did not.
 */
const MIN_SLICE = 4;

/**
 * The tie among equally warm rows for a request without a routing key, when
 * N > 1 routers share the clients (step `slice`). Every router sees the same
 * published queues between two reports; ranked over all rows, each one sent
 * its next request to the same shortest queue (ten routers, ten requests at
 * once on one replica). So only the rows in this request's slice compete:
 * about 1/N of them (never fewer than MIN_SLICE candidates' worth), drawn
 * from a hash of the request and the replica id — the same on every router,
 * different for different prompts. Among them: the shortest prefill queue
 * per weight, counting this router's work since each report once per router
 * (as `share` does), with the recent clients' work on top (`ahead`); equal
 * queues by the request's own rank of the rows. When no tied row falls
 * in the slice, the tie stands as one router breaks it. With one router
 * the tie is unchanged.
 * Complexity: O(rows), one hash per row.
 */
function sliceTieBreak(ctx: Ctx, choice: Choice, admit: (i: number) => boolean): number {
  const n = Math.max(1, Math.min(Math.round(ctx.t.routers), Math.floor(ctx.t.rows.length / MIN_SLICE)));
  if (n === 1) return choice.i;
  let best = -1;
  let bestQueue = Infinity;
  let bestRank = 0;
  for (const i of ctx.warm) {
    if (ctx.depth[i] !== choice.depth) continue;
    const r = ctx.t.rows[i]!;
    const rank = mix32(ctx.draw ^ r.replica.idHash);
    if (ctx.tier(i) !== choice.tier || rank % n !== 0 || !admit(i)) continue;
    const q = (ahead(ctx, r) + ctx.others * r.added) / r.weight;
    // Equal queues (idle replicas) go by the request's own rank of them, not by id: different requests, different replicas.
    if (q < bestQueue || (q === bestQueue && rank < bestRank)) {
      bestQueue = q;
      bestRank = rank;
      best = i;
    }
  }
  return best >= 0 ? best : choice.i;
}
