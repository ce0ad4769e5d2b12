/**
 * The agent ledger's arrival and recent work rates (load.arrivalTokensPerS,
 * recentTokensPerS): work per second as an exponential average with time
 * constant `tauMs`. Each admission adds its work (a steady stream of w tokens
 * every d ms reads about 1000 w / d), and the sum decays between admissions.
 * Complexity: O(1) per admission and per reading.
 */
export class DecayingRate {
  readonly #tauMs: number;
  #rate = 0;
  #at = 0;

  constructor(tauMs: number) {
    this.#tauMs = tauMs;
  }

  add(work: number, now: number): void {
    this.#rate = this.at(now) + (1000 * work) / this.#tauMs;
    this.#at = now;
  }

  /** Tokens per second at `now`. */
  at(now: number): number {
    return this.#rate * Math.exp(-(now - this.#at) / this.#tauMs);
  }
}
