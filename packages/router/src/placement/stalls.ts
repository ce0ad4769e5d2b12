/**
 * The ITL budget of local prefills on decode replicas (docs/DISAGGREGATION.md,
 * "Prefilling on the decode pool by load"): a per-router account of the
 * inter-token gaps its prompts may stall there.
 *
 * Rule: a prompt chunk in a decode replica's step stretches that step for
 * every stream running there; a chunk of an engine's full token budget
 * (`pdChunkTokens`) stretches it past any inter-token objective. The goodput
 * SLO bounds ITL p99: at most 1% of all gaps may be slow. The router lets
 * its local prefills stall at most a share (`pdStallShare`) of the gaps its
 * decode legs produce, and spends what its other local prefills leave on
 * prompts moved off a loaded prefill pool.
 *
 * Steps:
 *  1. Every decode leg this router places earns share × its output tokens
 *     (the gaps it will produce).
 *  2. A prompt the threshold prefills on its decode replica (short, or
 *     mostly held there) is charged n × lacks / chunk (n: the streams
 *     running there; the part of a full chunk its tokens take), whatever
 *     the account holds: it runs there anyway.
 *  3. A prompt over the threshold runs there by load only when the account
 *     covers n × ⌈lacks / chunk⌉ (each step holding a chunk of it stalls
 *     every stream there), and is then debited so much.
 *  4. The account decays with a time constant (TAU_MS): credit left from a
 *     quiet spell cannot release a burst of stalls later.
 *  5. With an ITL target (`pdItlTargetMs`), no prompt goes there by load
 *     while the replica's published ITL p99 (load.itlP99Ms, measured by its
 *     agent) is above it; a replica that publishes none is left to the
 *     account.
 * Invariant: the stalls this router's local prefills cause, so counted, stay
 * within about `share` of the gaps its decode legs produced over the last
 * TAU_MS (a negative account allows none).
 * Complexity: O(1) per call.
 * Trade-off: the router sees no step time, so the cost is a model: every
 * stream on the replica stalled for every whole chunk (an upper bound for a
 * chunk that leaves a step within the objective), a threshold prompt for its
 * fraction of one. A workload whose decode steps already carry many short
 * prompts (chats prefilled there) leaves little to spend, which is the point:
 * its ITL tail is already near the objective. Each router keeps its own
 * account of its own requests, so N routers spend N shares of N routers'
 * gaps, with no coordination. The streams charged are those running at the
 * decision: a prompt that waits in the decode engine's queue stalls the
 * streams placed there meanwhile too, which is why the rule is off by
 * default (docs/DISAGGREGATION.md, "Prefilling on the decode pool by load").
 * The measured tail closes the door only after a replica's window passed
 * the target: it guards, it does not meter.
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

  /** Step 2: a stall the threshold chose, charged whatever the account holds (it may go below zero). */
  charge(now: number, gaps: number): true {
    this.#decay(now);
    this.#credit -= gaps;
    return true;
  }

  /** Step 3: spends `gaps` if the account covers them. */
  spend(now: number, gaps: number): boolean {
    this.#decay(now);
    if (gaps > this.#credit) return false;
    this.#credit -= gaps;
    return true;
  }
}

/** Step 3's cost: the gaps a local prefill of `lacks` tokens stalls on a replica running `streams`. */
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

/** Step 5: the replica's measured ITL tail (load.itlP99Ms) is past the target; unknown is not (the budget alone). */
export function overTarget(decode: Replica, targetMs: number): boolean {
  const tail = decode.state.load.itlP99Ms;
  return targetMs > 0 && tail !== undefined && tail > targetMs;
}

/**
 * pair.ts, step 4: a local prefill of `lacks` tokens on `decode`. One the
 * threshold sends there (`chosen`) is charged (step 2) and runs; one it does
 * not runs there by load when the prefill replica's queue is longer than the
 * decode replica's own (the first token comes sooner there) and the account
 * covers its stall (step 3).
 */
export function localPrefill(
  local: LocalState,
  now: number,
  prefill: Replica,
  decode: Replica,
  lacks: number,
  s: { readonly pdStallShare: number; readonly pdChunkTokens: number; readonly pdItlTargetMs: number },
  chosen: boolean,
): boolean {
  const streams = decode.state.load.running;
  if (chosen) return stallsOf(local).charge(now, (streams * lacks) / s.pdChunkTokens);
  if (s.pdStallShare <= 0 || queueOf(local, prefill) <= queueOf(local, decode)) return false;
  if (overTarget(decode, s.pdItlTargetMs)) return false;
  return stallsOf(local).spend(now, stallCost(lacks, streams, s.pdChunkTokens));
}
