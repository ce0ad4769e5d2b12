/**
 * The cost of a row: what the request would wait for there before its first
 * token, in named terms (docs/PLACEMENT.md, "The cost").
 *
 * - depth: the prefix it holds (more is cheaper: less to prefill);
 * - adapter: the adapter load it needs (hot, a free slot, an eviction);
 * - queue: the prefill queued there, plus the work its recent clients will
 *   likely send over the horizon (mode.horizonS), per unit of weight;
 * - id: a total order, the same on every router;
 * - coldQueue: the queue a cold prompt compares ring members by.
 *
 * Warm rows compare these terms in this order (lexicographic: depth beats
 * queue, see docs/ABLATION.md). Where a shallower row competes with a
 * deeper one over the bound, or a retry compares sampled rows, the terms
 * are summed in tokens (`tokenCost`): the queue plus twice the prefill the
 * row lacks (the request's own wait, and the GPU time every later request
 * there waits behind). With KV sharing priced, any row can fetch the
 * deepest match, and admissible rows compare by `sharedCost` instead: the
 * same sum, the lacking prefill also held against every sequence running
 * there (docs/PLACEMENT.md, "Tiers and peers").
 */
import type { Candidate } from '../candidates.ts';
import { type By, type Input, lacking, reloading, tier } from './input.ts';

/** Row r's prefill queue plus the work its recent clients will likely send over the horizon, tokens. */
export function ahead(x: Input, r: Candidate): number {
  return r.queue + x.mode.horizonS * r.recent;
}

/**
 * The first term by which row i is cheaper than row j at the same depth
 * (adapter, queue, id), or undefined when j is cheaper or they are equal.
 */
export function cheaperAtDepth(x: Input, i: number, j: number): By | undefined {
  const ti = tier(x, i);
  const tj = tier(x, j);
  if (ti !== tj) return ti > tj ? 'adapter' : undefined;
  const a = x.t.rows[i]!;
  const b = x.t.rows[j]!;
  const qa = ahead(x, a) / a.weight;
  const qb = ahead(x, b) / b.weight;
  if (qa !== qb) return qa < qb ? 'queue' : undefined;
  return a.replica.id < b.replica.id ? 'id' : undefined;
}

/** The first term by which row i is cheaper than row j (depth first), or undefined. */
export function cheaper(x: Input, i: number, j: number): By | undefined {
  const di = x.depth[i]!;
  const dj = x.depth[j]!;
  if (di !== dj) return di > dj ? 'depth' : undefined;
  return cheaperAtDepth(x, i, j);
}

/** Rank of each term, for "the term that decided": the latest one on which the winner beat any other row. */
const RANK: Readonly<Record<'depth' | 'adapter' | 'queue' | 'id', number>> = { depth: 0, adapter: 1, queue: 2, id: 3 };

/**
 * The term that decided row w's win among `rows` passing `ok`: against the
 * runner-up (the row that ties w on the most terms), the first term that
 * differs; 'only' when no other row competed.
 */
export function decidedBy(x: Input, w: number, rows: readonly number[], ok: (i: number) => boolean): By {
  let by: By = 'only';
  let rank = -1;
  for (const j of rows) {
    if (j === w || !ok(j)) continue;
    const t = cheaper(x, w, j);
    if (t === undefined) continue;
    const r = RANK[t as keyof typeof RANK];
    if (r > rank) {
      rank = r;
      by = t;
    }
  }
  return by;
}

/**
 * The queue a cold prompt compares ring members by, per unit of weight
 * (mode.coldQueue): keyless, the published prefill queue alone, the same on
 * every router until a report, so a new prefix sent by several routers
 * lands on one replica; keyed, the prefill this router knows is queued
 * (published, its own work since, what a refusal said), not the other
 * routers' expected work, whose small leftovers would split a new task's
 * calls between two idle replicas.
 */
export function coldQueue(x: Input, i: number): number {
  const r = x.t.rows[i]!;
  return (x.mode.coldQueue === 'known' ? r.queue - r.expected : r.replica.state.load.prefillTokens) / r.weight;
}

/**
 * What taking a cold prompt off row i (its ring choice) can cost, tokens:
 * one later repeat of the prompt going to i and missing it — its prefill,
 * or with KV sharing its fetch from where the prompt went.
 */
export function repeatMiss(x: Input, i: number): number {
  return lacking(x, i) * (1 - x.mode.peerCredit);
}

/**
 * The cost in tokens: the queue plus twice the prefill the row lacks, a
 * host reload's part once (the engine reloads beside its steps, so no later
 * request waits behind it), + `missed` on a warm row, for a retry.
 */
export function tokenCost(x: Input, i: number, missed = 0): number {
  const reload = reloading(x, i);
  return x.t.rows[i]!.queue + 2 * (lacking(x, i) - reload) + reload + (x.depth[i]! > 0 ? missed : 0);
}

/**
 * Who waits for the prefill (or KV load) a row lacks, besides the sequences
 * running there: the request itself and the requests queued behind it, and
 * a margin for a fetched chunk being no hit of the engine's own tiers —
 * chosen on the tuning seeds, as the least that keeps the hit rate's goal
 * (docs/TIERS.md, "Where the edge goes").
 */
export const SHARED_WAITERS = 4;

/**
 * With KV sharing, the cost in tokens of row i: its queue plus the prefill
 * it lacks (a peer's chunk at its transfer) times the sequences that wait
 * for it — SHARED_WAITERS and every sequence the replica last reported
 * running, whose steps that prefill or fetch stretches — plus its host
 * chunks' reload once: the engine reloads beside its steps, so the request
 * alone waits for it (docs/PLACEMENT.md, "Tiers and peers").
 */
export function sharedCost(x: Input, i: number): number {
  const r = x.t.rows[i]!;
  const reload = reloading(x, i);
  return r.queue + (SHARED_WAITERS + r.replica.state.load.running) * (lacking(x, i) - reload) + reload;
}
