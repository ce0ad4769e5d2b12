/**
 * The ITL budget of local prefills on decode replicas (docs/DISAGGREGATION.md,
 * "Prefilling on the decode pool by load"): a per-router account of the
 * inter-token gaps it may stall.
 *
 * Rule: a prompt chunk in a decode replica's step stretches that step for
 * every stream running there; a chunk of an engine's full token budget
 * stretches it past any inter-token-latency objective. The goodput SLO bounds
 * ITL p99, so at most 1% of all gaps may be slow; the router spends a share
 * of them (`pdStallShare`) on prefills moved off a loaded prefill pool.
 *
 * Steps:
 *  1. Every decode leg this router places earns share × its output tokens
 *     (the gaps it will produce).
 *  2. A local prefill of `lacks` tokens on a replica running `n` streams
 *     costs n × ⌈lacks / chunk⌉ gaps (each step holding a chunk of it is slow
 *     for every stream there); it runs only when the account covers it.
 *  3. The account decays with a time constant (TAU_MS): credit left from
 *     a quiet spell cannot release a burst of stalls later.
 * Invariant: the gaps this router's local prefills stall stay within about
 * `share` of the gaps its decode legs produce over the last TAU_MS.
 * Complexity: O(1) per call.
 * Trade-off: the cost counts every stream on the replica as stalled for every
 * step of the chunk, an upper bound (a step with a short chunk may stay
 * within the objective); and each router keeps its own account of its own
 * requests, so N routers spend N shares of N routers' gaps: no coordination.
 */
import type { LocalState } from '../core/local.ts';
import type { Replica } from '../fleet/view.ts';

/** The account's time constant, ms: about one long decode leg. */
export const TAU_MS = 10_000;

export class StallBudget {
  #credit = 0;
  #at = Number.NEGATIVE_INFINITY;

  #decay(now: number): void {
    if (now > this.#at) {
      this.#credit *= Number.isFinite(this.#at) ? Math.exp(-(now - this.#at) / TAU_MS) : 0;
      this.#at = now;
    }
  }

  /** Gaps this router may still stall. */
  credit(now: number): number {
    this.#decay(now);
    return this.#credit;
  }

  /** Step 1: a decode leg of `outputTokens` placed, earning `share` of its gaps. */
  earn(now: number, outputTokens: number, share: number): void {
    this.#decay(now);
    this.#credit += outputTokens * share;
  }

  /** Step 2: spends `gaps` if the account covers them. */
  spend(now: number, gaps: number): boolean {
    this.#decay(now);
    if (gaps > this.#credit) return false;
    this.#credit -= gaps;
    return true;
  }
}

/** The gaps a local prefill of `lacks` tokens stalls on a replica running `streams` (step 2). */
export function stallCost(lacks: number, streams: number, chunkTokens: number): number {
  return streams * Math.ceil(lacks / Math.max(1, chunkTokens));
}

const budgets = new WeakMap<LocalState, StallBudget>();

/** The router's account (one per LocalState, as the candidate store). */
export function stallsOf(local: LocalState): StallBudget {
  let b = budgets.get(local);
  if (b === undefined) {
    b = new StallBudget();
    budgets.set(local, b);
  }
  return b;
}

/** A replica's prefill queue in this router's view: published, plus what this router sent there since. */
const queueOf = (local: LocalState, r: Replica): number => r.state.load.prefillTokens + local.figures(r).added;

/**
 * pair.ts, step 4 by load: does `decode` prefill a prompt it lacks `lacks`
 * tokens of? When the prefill replica's queue is longer than its own (the
 * first token comes sooner there) and the account covers the stall (step 2).
 */
export function byLoad(
  local: LocalState,
  now: number,
  prefill: Replica,
  decode: Replica,
  lacks: number,
  s: { readonly pdStallShare: number; readonly pdChunkTokens: number },
): boolean {
  if (s.pdStallShare <= 0 || queueOf(local, prefill) <= queueOf(local, decode)) return false;
  return stallsOf(local).spend(now, stallCost(lacks, decode.state.load.running, s.pdChunkTokens));
}
