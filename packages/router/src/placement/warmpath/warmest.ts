/**
 * Warmest: the deepest warm row within the bound, and within HARD_BOUND ×
 * the bound, with their ties broken.
 *
 * Steps: among rows with a matched depth > 0 and KV headroom, the deepest;
 * ties → higher adapter tier (hot > free slot > evict), then the shortest
 * prefill queue per weight (published prefillTokens + this router's
 * work since), then the lower id — so a prefix warm everywhere (a common
 * system prompt) spreads, and every router breaks ties alike. With an
 * explicit routing key, `keyTieBreak` then re-breaks the tie (below).
 * Depth beats queue: measured, trading locality for a shorter queue loses
 * more cache hits (and so prefill capacity) than it saves.
 * Complexity: O(rows), one scan for both choices; keyTieBreak adds O(rows)
 * or one ring walk.
 */
import { firstInRing } from '../candidates.ts';
import { type Ctx, loadPerWeight } from './context.ts';

/** The warmest row found: its index, depth and adapter tier. */
export interface Choice {
  readonly i: number;
  readonly depth: number;
  readonly tier: number;
}

/** Is row i preferred over row j of the same depth: tier, then queue per weight, then id. */
function preferred(ctx: Ctx, i: number, j: number): boolean {
  if (ctx.tier(i) !== ctx.tier(j)) return ctx.tier(i) > ctx.tier(j);
  const a = ctx.t.rows[i]!;
  const b = ctx.t.rows[j]!;
  const qa = a.queue / a.weight;
  const qb = b.queue / b.weight;
  return qa < qb || (qa === qb && a.replica.id < b.replica.id);
}

function better(ctx: Ctx, i: number, d: number, best: Choice | undefined): boolean {
  return best === undefined || d > best.depth || (d === best.depth && preferred(ctx, i, best.i));
}

/**
 * One scan, two choices: the warmest row within the bound (`within`) and
 * within HARD_BOUND × the bound (`hard`), both with headroom. The bound is
 * monotone in c, so every `within` candidate is a `hard` one, and a row
 * shallower than the `within` choice can win neither.
 */
export function warmest(ctx: Ctx): { within: Choice | undefined; hard: Choice | undefined } {
  let within: Choice | undefined;
  let hard: Choice | undefined;
  for (let i = 0; i < ctx.t.rows.length; i++) {
    const d = ctx.depth[i]!;
    if (d === 0 || (within !== undefined && d < within.depth) || !ctx.hardOk(i)) continue;
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
 * others' work. When less than half the prompt is warm anywhere, the key's own
 * history is on no replica yet (a new task behind a shared system prompt): its
 * long prefill goes to the least-loaded tied row, which stalls the fewest
 * running sessions, and the key's later calls follow it by depth (fanout, DES,
 * seeds 1–3: TTFT p50 89/98/104 → 85/90/90 ms).
 */
export function keyTieBreak(ctx: Ctx, choice: Choice | undefined, admit: (i: number) => boolean): number {
  if (choice === undefined) return -1;
  const info = ctx.req.info;
  if (info.routingKey === undefined || !ctx.on('key-tie-break')) return choice.i;
  const tied = (i: number): boolean => ctx.depth[i] === choice.depth && ctx.tier(i) === choice.tier && admit(i);
  if (choice.depth * ctx.tokensPerChunk < 0.5 * info.promptTokens) {
    let best = choice.i;
    for (let i = 0; i < ctx.t.rows.length; i++) if (tied(i) && loadPerWeight(ctx, i) < loadPerWeight(ctx, best)) best = i;
    return best;
  }
  return firstInRing(ctx.t, ctx.req.key, tied)?.i ?? choice.i;
}
