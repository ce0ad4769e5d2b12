/**
 * Balance and warm-over-bound: the two steps that may move a warm request off
 * the warmest replica within the bound.
 *
 * - overBound: a deeper warm replica just over the bound (within hardBound ×
 *   c) still wins when it is cheaper (pickCost: its prefill queue plus twice
 *   the little it lacks, against the same elsewhere); without it, a long
 *   conversation is re-prefilled on a shallower replica whenever its home is
 *   busy.
 * - balanceTarget: a prefix warm on several replicas (a system prompt) costs
 *   little to warm once more. When the pick is over its share of the fleet's
 *   work and some replica carries under a third of its share
 *   (BALANCE_UNDER), the first such replica in the key's ring order takes
 *   the request (with N routers, one of the first N, MAX_BALANCE_SPREAD),
 *   and the prefix's warm
 *   set grows; without it the bound (c × share) lets the holders absorb
 *   everything and a replica the prefix never reached idles (chat, 8
 *   replicas: one replica got no request at all; with it, TTFT p50 70 → 59
 *   ms, DES). A prefix warm on one replica only (a session's history) stays
 *   home: re-prefilling it elsewhere costs more than it saves; so does a
 *   request with an explicit routing key, which asks for affinity (fanout:
 *   balancing a fan-out's calls raised its p50 from 89 to 109 ms, DES).
 * Complexity: O(rows) + one ring walk each.
 */
import { firstInRing } from '../candidates.ts';
import { type Ctx, loadPerWeight } from './context.ts';

/**
 * What placing the request on row i costs, in prefill tokens: the request's
 * own wait (the queue, then the prompt it lacks there) plus the same lacking
 * prefill once more, for the fleet. Tokens a replica re-prefills are GPU time
 * every later request there waits behind, so a shallower pick must save the
 * request more queue than twice what it re-computes. Counted once (the
 * request's own TTFT alone), the calls of a fan-out left their warm replica
 * while the first call was still prefilling their shared prefix, and
 * re-prefilled it elsewhere (DES, seeds 1–3, 1/4/16 routers: fanout hit rate
 * +0.7 to +1.0 points and TTFT p50 down in 7 of 9 runs, longctx hit rate +0.4
 * to +2.2 points; the seed scenario's p99 rose in 6 of 9, docs/ABLATION.md).
 */
export function pickCost(ctx: Ctx, i: number): number {
  return ctx.t.rows[i]!.queue + 2 * Math.max(0, ctx.req.info.promptTokens - ctx.depth[i]! * ctx.tokensPerChunk);
}

/**
 * `deeper` (the warmest within hardBound × c) when it is deeper than `warm`
 * (the warmest within the bound) and its pickCost is no dearer than warm's —
 * or, with no warm row, than the key's ring home's (no adapter) — else -1.
 * A row deeper than `warm` is never within the bound, so this pick is always
 * over it.
 */
export function overBound(ctx: Ctx, warm: number, deeper: number): number {
  if (deeper < 0 || deeper === warm || ctx.depth[deeper]! <= (warm >= 0 ? ctx.depth[warm]! : 0)) return -1;
  const alt = warm >= 0 ? warm : ctx.req.info.adapter === '' ? (firstInRing(ctx.t, ctx.req.key, ctx.ok)?.i ?? -1) : -1;
  return alt < 0 || pickCost(ctx, deeper) <= pickCost(ctx, alt) ? deeper : -1;
}

/**
 * balance warms a prefix on a replica only while it carries under 1/3 of its
 * share of the fleet's work. The threshold was c (under share / c); with c at
 * 1.75 that sent a request to each replica as soon as it fell a little
 * under its share, and every such request missed: on 1,000 replicas, in a
 * 5-second start that is almost all first turns, the hit rate was 72.9%;
 * with 1/3 it is 75.4% at the same TTFT (seed 1, one router). On 8–10
 * replicas (DES, seeds 1–3, 1/4/16 routers): seed's hit rate +0.1 to +0.2
 * points with p50 within 2 ms, longctx's hit rate equal or up to +0.6,
 * every other scenario identical (docs/ABLATION.md).
 */
export const BALANCE_UNDER = 3;

/**
 * With N routers, balance's target is one of the first min(N, this) nearly
 * idle replicas in the key's ring order, drawn by the request's own draw
 * (ctx.draw: the same on every router, different for different prompts).
 * The first one alone is every router's target for every request sharing
 * the prefix, and each router learns that the others sent it work only at
 * its next report: on 1,000 replicas with 100 routers, they herded onto it
 * (seed 1: TTFT p50 / p99 335 / 1,105 ms; drawn among 4: 290 / 1,010; among
 * 16: 242 / 986; among 64: 240 / 986 ms and +0.5 points of hit rate; 10
 * routers 130 / 717 → 130 / 709 ms, +0.4 points). On 10 replicas with 4 and
 * 16 routers (seeds 1–3) it is neutral: seed's p99 −10 ms on average, the
 * rest within 4 ms (docs/SCALE.md). One router sees its own work at once
 * and keeps the ring's first.
 */
export const MAX_BALANCE_SPREAD = 64;

/** The row that should warm the prefix of the warm pick `w` instead, or -1. */
export function balanceTarget(ctx: Ctx, w: number): number {
  const t = ctx.t;
  const share = t.totalLoad / t.totalWeight;
  // Under the floor the pick is not busy at all; at or under its share it is not over-used.
  if (ctx.req.info.routingKey !== undefined || ctx.underFloor(w) || loadPerWeight(ctx, w) <= share) return -1;
  const d = ctx.depth[w]!;
  if (!heldTwice(ctx, d)) return -1;
  // Nearly idle: the miss of warming the prefix there is paid back by a short queue.
  const under = (i: number): boolean => t.rows[i]!.load * BALANCE_UNDER < share * t.rows[i]!.weight;
  // Most often no replica is that idle: say so in one pass over the rows rather than a walk of the whole ring.
  if (!someRow(t.rows.length, (i) => ctx.depth[i]! < d && under(i))) return -1;
  const target = (i: number): boolean => ctx.depth[i]! < d && under(i) && ctx.headroom(i) && ctx.tier(i) >= ctx.tier(w);
  // One of the first `spread` targets in ring order, by the request's own draw (one router: the first).
  const spread = ctx.on('balance-spread') ? Math.max(1, Math.min(MAX_BALANCE_SPREAD, Math.round(t.routers))) : 1;
  const found: number[] = [];
  firstInRing(t, ctx.req.key, (i) => {
    if (target(i)) found.push(i);
    return found.length >= spread;
  });
  return found.length === 0 ? -1 : found[ctx.draw % found.length]!;
}

function someRow(n: number, ok: (i: number) => boolean): boolean {
  for (let i = 0; i < n; i++) if (ok(i)) return true;
  return false;
}

/** Do at least two rows match `d` chunks or more (the prefix is warm on several replicas)? Stops at the second. */
function heldTwice(ctx: Ctx, d: number): boolean {
  let holders = 0;
  for (const i of ctx.warm) if (ctx.depth[i]! >= d && ++holders === 2) return true;
  return false;
}
