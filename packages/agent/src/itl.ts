/**
 * The engine's inter-token latency tail over a sliding window, published by
 * a decode replica as `load.itlP99Ms` (docs/DESIGN-RATIONALE.md, §3): what a
 * router's P/D rule reads before it prefills there by load
 * (docs/DISAGGREGATION.md, "Prefilling on the decode pool by load").
 *
 * Steps per scrape: keep the engine's cumulative ITL histogram with its
 * time (vLLM's `vllm:inter_token_latency_seconds`, SGLang's likewise) →
 * drop the samples older than the window, keeping the newest of them as
 * the window's base → the p99 of the increase from the base to now,
 * interpolated linearly within its bucket as Prometheus' histogram_quantile
 * does (a quantile past the last finite bound reads as that bound).
 * Invariant: the p99 is of gaps that ended within about the last
 * ITL_WINDOW_MS (plus one scrape period); a restart (buckets changed, or a
 * count going back) starts the window afresh; fewer than ITL_MIN_GAPS gaps
 * in it say nothing (undefined), as a tail of a few gaps is noise.
 * Complexity: O(buckets) per scrape, O(window / scrape period) memory.
 * Trade-off: the buckets bound the resolution (the engines' bucket spacing:
 * docs/ENGINE-SIGNALS.md): the p99 says which side of a bound the slowest
 * 1% fall, which is what an objective between two bounds needs.
 */
import type { Buckets } from '@warmpath/shared/runtime';

/** The window the published ITL tail covers, ms. */
export const ITL_WINDOW_MS = 10_000;
/** Fewest gaps in the window for a published tail. */
export const ITL_MIN_GAPS = 200;

interface Sample {
  readonly at: number;
  readonly cumulative: readonly number[];
}

export class ItlWindow {
  #bounds: readonly number[] = [];
  #samples: Sample[] = [];

  /** A scrape that started at `at` (ms) read the engine's cumulative ITL histogram `b` (undefined: the engine has none). */
  observe(at: number, b: Buckets | undefined): void {
    if (b === undefined) {
      this.#samples = [];
      return;
    }
    const last = this.#samples.at(-1);
    const same = b.bounds.length === this.#bounds.length && b.bounds.every((x, i) => x === this.#bounds[i]);
    if (!same || (last !== undefined && b.cumulative.some((c, i) => c < last.cumulative[i]!))) {
      this.#bounds = b.bounds;
      this.#samples = [];
    }
    this.#samples.push({ at, cumulative: b.cumulative });
    // Keep one sample at or before the window's start: the base of the increase.
    while (this.#samples.length > 2 && this.#samples[1]!.at <= at - ITL_WINDOW_MS) this.#samples.shift();
  }

  /** The window's ITL p99, ms; undefined with fewer than ITL_MIN_GAPS gaps. */
  p99Ms(): number | undefined {
    const base = this.#samples[0];
    const last = this.#samples.at(-1);
    if (base === undefined || last === undefined || base === last) return undefined;
    const delta = last.cumulative.map((c, i) => c - base.cumulative[i]!);
    const total = delta.at(-1)!;
    if (total < ITL_MIN_GAPS) return undefined;
    const rank = 0.99 * total;
    const i = delta.findIndex((c) => c >= rank);
    const lower = i > 0 ? this.#bounds[i - 1]! : 0;
    const upper = this.#bounds[i]!;
    if (upper === Number.POSITIVE_INFINITY) return lower * 1e3;
    const below = i > 0 ? delta[i - 1]! : 0;
    const inBucket = delta[i]! - below;
    const q = inBucket > 0 ? lower + ((upper - lower) * (rank - below)) / inBucket : upper;
    return Math.round(q * 1e4) / 10;
  }
}
