/**
 * The agent ledger's arrival and recent work rates (load.arrivalTokensPerS,
 * recentTokensPerS): work per second as an exponential average with time
 * constant `tauMs`. Each admission adds its work (a steady stream of w tokens
 * every d ms reads about 1000 w / d), and the sum decays between admissions.
 * `withoutNewest` reads it without the newest admission: an agent reports
 * mostly because an admission just changed its queue, and the average read
 * at that moment holds that admission's whole term (1000 w / τ), which says
 * nothing of the arrivals to come (for Poisson arrivals the average seen at
 * an arrival is the rate plus that arrival; without it, the rate).
 * Complexity: O(1) per admission and per reading.
 */
export class DecayingRate {
  readonly #tauMs: number;
  #rate = 0;
  #at = 0;
  /** The rate just before the newest admission, at #at. */
  #before = 0;

  constructor(tauMs: number) {
    this.#tauMs = tauMs;
  }

  add(work: number, now: number): void {
    this.#before = this.at(now);
    this.#rate = this.#before + (1000 * work) / this.#tauMs;
    this.#at = now;
  }

  /** Tokens per second at `now`. */
  at(now: number): number {
    return this.#rate * Math.exp(-(now - this.#at) / this.#tauMs);
  }

  /** Tokens per second at `now`, leaving out the newest admission. */
  withoutNewest(now: number): number {
    return this.#before * Math.exp(-(now - this.#at) / this.#tauMs);
  }
}
