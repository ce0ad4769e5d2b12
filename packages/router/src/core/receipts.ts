/**
 * Receipts: for every answered request, what the router predicted the
 * chosen replica's engine would find cached, against what the engine
 * reported (the agent's reading of usage.prompt_tokens_details.cached_tokens),
 * counted per replica.
 *
 * The prediction is the placement's own: the matched depth of the chosen
 * replica's row in the warmth scan (digest index and optimistic overlay,
 * whichever is deeper), in chunks, times the tokens a chunk holds, capped
 * at the prompt. A misroute is a request predicted to hit at least half its
 * prompt (MISROUTE_SHARE) whose engine found less than half cached: the
 * placement chose the replica for a hit it did not get. Each side is a share
 * of its own prompt count (the router's estimate, the engine's tokens), so a
 * tokenizer that counts differently from charsPerToken does not read as a
 * misroute.
 *
 * Steps per answer: judge (pure) → add to the replica's counts (answers
 * judged, expected hits, misroutes, Σ|expected − cached|).
 * Complexity: O(1) per answer; one entry per replica judged, dropped with
 * the replica when the fleet view forgets it (`retain`).
 * Trade-off: only answers whose engine reported cached tokens are judged;
 * an engine that reports none (TGI) has no receipts rather than false ones.
 */

import type { EngineUsage } from '@warmpath/shared/wire';
import { scannedDepth } from '../placement/candidates.ts';
import type { LocalState } from './local.ts';

type ChunkSettings = { readonly chunkChars: number; readonly charsPerToken: number };

/** A misroute: predicted to hit at least this share of the prompt, and the engine found less. */
export const MISROUTE_SHARE = 0.5;

/** One answer's receipt. */
export interface Receipt {
  /** Predicted cached tokens (x-warmpath-expected-cached-tokens). */
  readonly expected: number;
  /** The engine's cached tokens, as its agent read them. */
  readonly cached: number;
  /** The prediction was a hit of at least MISROUTE_SHARE of the prompt. */
  readonly expectedHit: boolean;
  /** … and the engine found less than that share cached. */
  readonly misroute: boolean;
}

/** A replica's receipts so far. */
export interface ReceiptCounts {
  /** Answers judged (the engine reported cached tokens). */
  judged: number;
  /** Of them, predicted hits (the misroute rate's denominator). */
  expectedHits: number;
  misroutes: number;
  /** Σ |expected − cached|, tokens. */
  errorTokens: number;
}

/** Predicted cached tokens for a matched depth of `depth` chunks of `chunkChars` characters. */
export function expectedTokens(depth: number, s: ChunkSettings, promptTokens: number): number {
  return Math.min(promptTokens, Math.floor((depth * s.chunkChars) / s.charsPerToken));
}

/** The prediction for `replica`, read right after placement from this router's warmth scan. */
export function predicted(
  local: LocalState,
  replica: { readonly slot: number },
  s: ChunkSettings,
  promptTokens: number,
): number {
  return expectedTokens(scannedDepth(local, replica), s, promptTokens);
}

/**
 * One answer judged: `expected` against the router's prompt estimate,
 * `cached` against the engine's prompt tokens (the estimate when it gave none).
 */
export function judge(expected: number, estimate: number, cached: number, prompt: number | undefined): Receipt {
  const expectedHit = estimate > 0 && expected >= MISROUTE_SHARE * estimate;
  const total = prompt !== undefined && prompt > 0 ? prompt : estimate;
  return { expected, cached, expectedHit, misroute: expectedHit && cached < MISROUTE_SHARE * total };
}

export class Receipts {
  readonly #by = new Map<string, ReceiptCounts>();

  /** Judges an answer of `replica` by its engine's usage and counts it; an answer without cached tokens is not judged. */
  note(replica: string, expected: number, estimate: number, usage: EngineUsage | undefined): void {
    if (usage?.cachedTokens !== undefined)
      this.add(replica, judge(expected, estimate, usage.cachedTokens, usage.promptTokens));
  }

  /** Counts one receipt for `replica`. */
  add(replica: string, r: Receipt): void {
    let c = this.#by.get(replica);
    if (c === undefined) this.#by.set(replica, (c = { judged: 0, expectedHits: 0, misroutes: 0, errorTokens: 0 }));
    c.judged++;
    c.errorTokens += Math.abs(r.expected - r.cached);
    if (r.expectedHit) c.expectedHits++;
    if (r.misroute) c.misroutes++;
  }

  /** The replicas judged so far and their counts (do not modify). */
  get byReplica(): ReadonlyMap<string, Readonly<ReceiptCounts>> {
    return this.#by;
  }

  /** The counts summed over every replica. */
  totals(): ReceiptCounts {
    const t: ReceiptCounts = { judged: 0, expectedHits: 0, misroutes: 0, errorTokens: 0 };
    for (const c of this.#by.values()) {
      t.judged += c.judged;
      t.expectedHits += c.expectedHits;
      t.misroutes += c.misroutes;
      t.errorTokens += c.errorTokens;
    }
    return t;
  }

  /** Keeps only replicas `known` still names (the fleet view forgot the others). */
  retain(known: ReadonlyMap<string, unknown>): void {
    for (const id of this.#by.keys()) if (!known.has(id)) this.#by.delete(id);
  }
}
