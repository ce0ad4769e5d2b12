/**
 * A prefix-cache clear without a restart (e.g. vLLM /reset_prefix_cache),
 * read from the engine's prefix counters where no response carries
 * cached_tokens (when they do, per-request feedback corrects the cache model
 * instead).
 *
 * Rule, over one scrape window: the engine processed at least the tokens the
 * agent predicted as hits, those predictions came from at least
 * CLEAR_MIN_ADMISSIONS admissions and add up to CLEAR_MIN_TOKENS, the engine
 * reported zero new hits, and no response reported cached_tokens.
 * Complexity: O(1) per scrape.
 */

/** A cache clear is read from the counters only when at least this many prompt tokens were predicted cached… */
const CLEAR_MIN_TOKENS = 1_024;
/** …by at least this many admissions in one scrape window. */
const CLEAR_MIN_ADMISSIONS = 2;

/** Cumulative readings at one scrape: settled predictions (tokens, admissions), the engine's prefix counters, feedbacks. */
export interface ClearReadings {
  readonly predicted: number;
  readonly admissions: number;
  readonly hits: number;
  readonly queries: number;
  readonly feedbacks: number;
}

export class ClearDetector {
  #prev: ClearReadings | undefined;

  /** The readings of a new scrape: did the engine clear its cache since the last one? */
  cleared(now: ClearReadings): boolean {
    const prev = this.#prev;
    this.#prev = now;
    if (prev === undefined || now.hits < prev.hits || now.queries < prev.queries) return false;
    const predicted = now.predicted - prev.predicted;
    // Several admissions' settled predictions all missed: one request's evicted prefix is no clear.
    const several = now.admissions - prev.admissions >= CLEAR_MIN_ADMISSIONS;
    return (
      now.feedbacks === prev.feedbacks &&
      several &&
      predicted >= CLEAR_MIN_TOKENS &&
      now.queries - prev.queries >= predicted &&
      now.hits === prev.hits
    );
  }
}
