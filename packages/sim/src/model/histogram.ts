/**
 * Fixed-bucket histogram (Prometheus semantics: cumulative on export).
 * Observe is a short linear scan over ≤ 25 upper bounds, cheaper than a binary
 * search at this size; counts are per bucket, summed when exported.
 */
export class Histogram {
  readonly bounds: readonly number[];
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1); // last = +Inf
  }

  observe(v: number): void {
    let i = 0;
    const b = this.bounds;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }

  /** Cumulative counts, one per bound plus +Inf. */
  cumulative(): number[] {
    const out: number[] = [];
    let acc = 0;
    for (const c of this.counts) out.push((acc += c));
    return out;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** vLLM's bucket bounds (seconds). */
export const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0,
  640.0, 2560.0,
] as const;
export const ITL_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
] as const;
export const E2E_BUCKETS = [
  0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0,
  7680.0,
] as const;
