/**
 * A step's input: the request, its mode, the candidate table, and the depth
 * each row matched — plain data, computed once per request — plus the pure
 * functions of (input, row) every step shares: the request's work there,
 * KV headroom, the load bound, admissibility, the queue limit of a pick
 * (docs/PLACEMENT.md, "The table" and "The bound").
 *
 * The depth array is the policy's own storage (one policy instance per
 * router), overwritten by its next request: an input is read only within
 * the select that made it.
 */
import { underFloor as floorRule, withinBound } from '@warmpath/shared/wire';
import type { CandidateTable, Warmth } from '../candidates.ts';
import type { Branch, Placement, PlacementRequest } from '../types.ts';
import type { Mode } from './mode.ts';
import { adapterTier } from './tier.ts';

export interface Input {
  readonly req: PlacementRequest;
  readonly mode: Mode;
  readonly t: CandidateTable;
  /**
   * Matched chain depth per row, in GPU-chunk equivalents: the chunks on its
   * GPU (digest or overlay), plus those only in its host memory × hostCredit,
   * at least the fleet's deepest match × peerCredit (docs/PLACEMENT.md,
   * "Tiers and peers"); max(digest, overlay) without either; all 0 for an
   * embedding.
   */
  readonly depth: readonly number[];
  /**
   * Per row, what its host-memory chunks cost, in chunks of prefill: (chunks
   * only in its host memory) × (1 − hostCredit), the part of the row's
   * lacking prefill (`lacking`) that is a reload; 0 where the peer credit
   * sets the depth. The engine reloads beside its steps (asynchronously), so
   * that part falls on the request alone (cost.ts).
   */
  readonly reload: readonly number[];
  /** The rows with depth > 0, in no particular order (every choice among them is a total order). */
  readonly warm: readonly number[];
}

/** A policy's reused storage for its inputs' arrays. */
export interface Scratch {
  readonly depth: number[];
  readonly reload: number[];
}

export function inputOf(req: PlacementRequest, mode: Mode, t: CandidateTable, warmth: Warmth, s: Scratch): Input {
  const depth = s.depth;
  depth.length = t.rows.length;
  depth.fill(0);
  const reload = s.reload;
  reload.length = t.rows.length;
  reload.fill(0);
  const warm: number[] = [];
  if (!mode.embedding) {
    let deepest = 0;
    for (const i of warmth.warm) {
      const o = mode.overlay ? warmth.overlay[i]! : 0;
      const all = Math.max(warmth.digest[i]!, o);
      // What this router just sent is on the GPU; the rest of the digest's match, in host memory, costs its reload.
      const gpu = Math.max(warmth.gpu?.[i] ?? all, o);
      depth[i] = gpu + (all - gpu) * mode.hostCredit;
      reload[i] = (all - gpu) * (1 - mode.hostCredit);
      if (depth[i]! > 0) warm.push(i);
      deepest = Math.max(deepest, all);
    }
    if (mode.peerCredit > 0 && deepest > 0) peerCredit(depth, reload, warm, deepest * mode.peerCredit);
  }
  return { req, mode, t, depth, reload, warm };
}

/** With KV sharing, every row can fetch the deepest match from its holder: worth at least `floor` chunks. */
function peerCredit(depth: number[], reload: number[], warm: number[], floor: number): void {
  for (let i = 0; i < depth.length; i++) {
    if (depth[i]! >= floor) continue;
    if (depth[i] === 0) warm.push(i);
    depth[i] = floor;
    reload[i] = 0;
  }
}

/** Tokens the request adds to row i: its uncached prompt there + maxTokens. */
export function work(x: Input, i: number): number {
  const info = x.req.info;
  return Math.max(0, info.promptTokens - Math.floor(x.depth[i]! * x.mode.tokensPerChunk)) + info.maxTokens;
}

/** Row i has the KV room for work(i). */
export function headroom(x: Input, i: number): boolean {
  return x.t.rows[i]!.kvFree >= work(x, i);
}

/** Prefill row i lacks of the prompt, tokens (unfloored chunks: the cost's term). */
export function lacking(x: Input, i: number): number {
  return Math.max(0, x.req.info.promptTokens - x.depth[i]! * x.mode.tokensPerChunk);
}

/** Of `lacking(x, i)`, the tokens' worth of prefill time row i spends reloading from host memory. */
export function reloading(x: Input, i: number): number {
  return Math.min(lacking(x, i), x.reload[i]! * x.mode.tokensPerChunk);
}

/** Row i is under the bound's floor, counting the other routers' work since its report: not busy at all. */
export function underFloor(x: Input, i: number): boolean {
  const r = x.t.rows[i]!;
  const m = x.mode;
  // share and expect estimate the same work (the other routers' since the report): the larger counts.
  return floorRule({
    load: r.load + Math.max(m.others * r.added, r.expected),
    weight: r.weight,
    cost: m.unit,
    floor: m.floor,
  });
}

/** Within `factor` (default c) × its share of the fleet's work, in units of this request's work, or under the floor. */
export function within(x: Input, i: number, factor = x.mode.c): boolean {
  const r = x.t.rows[i]!;
  const t = x.t;
  return (
    underFloor(x, i) ||
    withinBound({
      load: r.load,
      weight: r.weight,
      totalLoad: t.totalLoad,
      totalWeight: t.totalWeight,
      cost: x.mode.unit,
      factor,
    })
  );
}

/** Admissible: within the bound, with headroom. */
export function admissible(x: Input, i: number): boolean {
  return within(x, i) && headroom(x, i);
}

/** Within the wider bound warm-over-bound may reach (mode.hardC), with headroom. */
export function hardAdmissible(x: Input, i: number): boolean {
  return headroom(x, i) && within(x, i, x.mode.hardC);
}

export function tier(x: Input, i: number): number {
  return adapterTier(x.t.rows[i]!.replica, x.req.info.adapter);
}

/** Row i's work per unit of weight, tokens. */
export function loadPerWeight(x: Input, i: number): number {
  const r = x.t.rows[i]!;
  return r.load / r.weight;
}

/** Matched depth of the deepest row other than i with KV headroom, chunks (0 when none). */
export function altDepth(x: Input, i: number): number {
  let top = -1;
  let second = 0;
  for (const j of x.warm) {
    if (!headroom(x, j)) continue;
    if (top < 0 || x.depth[j]! > x.depth[top]!) {
      if (top >= 0) second = x.depth[top]!;
      top = j;
    } else if (x.depth[j]! > second) second = x.depth[j]!;
  }
  return i === top ? second : top >= 0 ? x.depth[top]! : 0;
}

/** The tie-break that decided a pick (docs/PLACEMENT.md, "Reading the header"). */
export type By = 'depth' | 'adapter' | 'ring' | 'slice' | 'queue' | 'id' | 'cost' | 'share' | 'load' | 'only';

/**
 * The placement on row i. Its queue limit (mode.queueLimit) is the prefill
 * expected queued there — its queue plus this request's work — plus what
 * the replica saves the request over the best other one (its extra depth):
 * past it, another replica serves the request sooner and the agent refuses
 * it (docs/PLACEMENT.md, "The queue limit").
 */
export function pick(x: Input, i: number, branch: Branch, by: By): Placement {
  const w = work(x, i);
  const replica = x.t.rows[i]!.replica;
  if (!x.mode.queueLimit) return { replica, branch, work: w, by };
  const saved = Math.max(0, x.depth[i]! - altDepth(x, i)) * x.mode.tokensPerChunk;
  return { replica, branch, work: w, queueLimit: Math.ceil(x.t.rows[i]!.queue + w + saved), by };
}

/** Does any of the first n rows pass `ok`? Stops at the first. */
export function someRow(n: number, ok: (i: number) => boolean): boolean {
  for (let i = 0; i < n; i++) if (ok(i)) return true;
  return false;
}
