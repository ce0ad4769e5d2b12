/**
 * Retry with two warm choices and a cold one: a request a replica refused
 * (or failed) is placed again, and with several routers sharing the clients
 * the refusal usually means they herd. Every router's view missed the same
 * work (the others' since the replica's last report), so the next best in
 * one router's view is the next best in all of them, and the retries herd
 * there too: 1,000 replicas, 10 routers, the first second and a half of a
 * cold start, 62–68% of first attempts and 72% of second attempts were
 * refused (docs/SCALE.md).
 *
 * Steps: with N > 1 routers and a replica already tried, sample admissible
 * rows (within the bound, with KV headroom) with the request's own draw mixed
 * with the attempt number — two different warm ones and a random cold one
 * (matched depth 0) when at least two warm ones are admissible and some row
 * is cold, else the one warm row against a random row, else two random rows
 * — and take the one whose cost is lowest ("retry-two-choices"). The cost
 * is pickCost (queue plus twice what it lacks), and on a warm row also what
 * the refusal found queued beyond the pick's queue limit
 * (PlacementRequest.missed): the herd that filled the refused replica is on
 * the prefix's other holders too, which the view misses alike, and not on a
 * random cold row. Different requests draw different rows, so a herd's
 * retries spread; the choice keeps them off busy rows.
 * Complexity: O(warm rows) for the admissible warm ones + a few draws (at
 * most 4 per row when almost no row is admissible, or cold).
 * Trade-off: a retry gives up the deterministic best for a sampled one; it
 * only runs after a refusal, which one router alone almost never sees (1 in
 * 4,905 requests on 10 replicas), so one router places as before. The cold
 * choice and the missed work: 1,000 replicas, seeds 1–3, TTFT p99 at 10
 * routers 513–522 → 456–459 ms (two warm rows alone), at 100 routers (seed
 * 1) 637 → 426 ms. The third row must be cold: on 10 replicas a random row
 * is mostly warm, and three warm choices herd more than two (docs/SCALE.md).
 */
import { mulberry32 } from '@warmpath/shared/runtime';
import type { Placement } from '../types.ts';
import { pickCost } from './balance.ts';
import { type Ctx, pick } from './context.ts';

/** Draws before giving up on finding an admissible (or admissible cold) row, per row. */
const DRAWS_PER_ROW = 4;

export function retryTwoChoices(ctx: Ctx): Placement | undefined {
  const exclude = ctx.req.exclude;
  if (exclude === undefined || exclude.size === 0 || Math.round(ctx.t.routers) < 2) return undefined;
  // 32-bit draws seeded by the request's own draw and the attempt number (exact: mulberry32 returns u / 2^32).
  const random = mulberry32((ctx.draw ^ Math.imul(exclude.size, 0x9e3779b1)) >>> 0);
  const next = (): number => random() * 2 ** 32;
  const warm = ctx.warm.filter((i) => ctx.ok(i));
  const n = ctx.t.rows.length;
  const randomRow = (cold = false): number => {
    for (let k = 0; k < DRAWS_PER_ROW * n; k++) {
      const i = next() % n;
      if (ctx.ok(i) && (!cold || ctx.depth[i] === 0)) return i;
    }
    return -1;
  };
  let a: number;
  let b: number;
  if (warm.length >= 2) {
    // Two different warm rows.
    const ia = next() % warm.length;
    a = warm[ia]!;
    b = warm[(ia + 1 + (next() % (warm.length - 1))) % warm.length]!;
  } else {
    a = warm.length === 1 ? warm[0]! : randomRow();
    b = randomRow();
  }
  if (a < 0 || b < 0) return a >= 0 || b >= 0 ? pick(ctx, Math.max(a, b), 'retry-two-choices') : undefined;
  const missed = ctx.req.missed ?? 0;
  const cost = (i: number): number => pickCost(ctx, i) + (ctx.depth[i]! > 0 ? missed : 0);
  let best = cost(b) < cost(a) ? b : a;
  if (warm.length >= 2 && ctx.warm.length < n) {
    // The cold choice: a random cold row, against the warm rows' missed work.
    const c = randomRow(true);
    if (c >= 0 && cost(c) < cost(best)) best = c;
  }
  return pick(ctx, best, 'retry-two-choices');
}
