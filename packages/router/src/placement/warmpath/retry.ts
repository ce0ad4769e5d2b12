/**
 * Retry with two warm choices and a cold one (step `retry`): with several
 * routers sharing the clients, a refusal usually means they herd. Every
 * router's view missed the same work (the others' since the replica's last
 * report), so the next best in one router's view is the next best in all of
 * them, and their retries would herd there too (docs/PLACEMENT.md, "Retry").
 *
 * Rule: with N > 1 routers and a replica already tried, sample admissible
 * rows with the request's own draw mixed with the attempt number — two
 * different warm ones and a random cold one (depth 0) when at least two
 * warm ones are admissible and some row is cold, else the one warm row
 * against a random row, else two random rows — and take the one of least
 * token cost (cost.ts), a warm row also charged what the refusal found
 * queued beyond the pick's limit (PlacementRequest.missed): the herd that
 * filled the refused replica is on the prefix's other holders too.
 * Different requests draw different rows, so a herd's retries spread.
 * Complexity: O(warm rows) + a few draws (at most 4 per row).
 */
import { mulberry32 } from '@warmpath/shared/runtime';
import type { Placement } from '../types.ts';
import { tokenCost } from './cost.ts';
import { admissible, type Input, pick } from './input.ts';

/** Draws before giving up on finding an admissible (or admissible cold) row, per row. */
const DRAWS_PER_ROW = 4;

export function retryTwoChoices(x: Input): Placement | undefined {
  const exclude = x.req.exclude;
  if (exclude === undefined || exclude.size === 0 || x.mode.routers < 2) return undefined;
  // 32-bit draws seeded by the request's own draw and the attempt number (exact: mulberry32 returns u / 2^32).
  const random = mulberry32((x.mode.draw ^ Math.imul(exclude.size, 0x9e3779b1)) >>> 0);
  const next = (): number => random() * 2 ** 32;
  const warm = x.warm.filter((i) => admissible(x, i));
  const n = x.t.rows.length;
  const randomRow = (cold = false): number => {
    for (let k = 0; k < DRAWS_PER_ROW * n; k++) {
      const i = next() % n;
      if (admissible(x, i) && (!cold || x.depth[i] === 0)) return i;
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
  if (a < 0 || b < 0) return a >= 0 || b >= 0 ? pick(x, Math.max(a, b), 'retry-two-choices', 'only') : undefined;
  const missed = x.req.missed ?? 0;
  const cost = (i: number): number => tokenCost(x, i, missed);
  let best = cost(b) < cost(a) ? b : a;
  if (warm.length >= 2 && x.warm.length < n) {
    // The cold choice: a random cold row, against the warm rows' missed work.
    const c = randomRow(true);
    if (c >= 0 && cost(c) < cost(best)) best = c;
  }
  return pick(x, best, 'retry-two-choices', 'cost');
}
