/**
 * Goodput (docs/DISAGGREGATION.md, "Goodput"): the highest arrival rate at
 * which TTFT p99 (over every request sent, an unanswered one the slowest)
 * and inter-token latency p99 both stay within the SLO, for one fleet and
 * policy in the DES.
 *
 * Steps: sweep the given rates in order; the goodput is the highest rate
 * within the SLO with every lower rate swept within it too (0 when the
 * lowest is not). Then bisect between it and the first rate past the SLO,
 * `refine` times, keeping the rule (a midpoint within the SLO raises the
 * goodput). Complexity: rates + refine DES runs per (fleet, policy), the
 * grid's in parallel on the pool.
 * Trade-off: a grid step is wider than the differences the goals judge (5%
 * between router counts); bisection resolves them at a few runs each, but
 * the rate where the SLO breaks is itself noisy, so a figure is a seed's.
 */
import { p99AllRequests } from './goals.ts';
import type { DesJob, DesPool } from './pool.ts';

export const SLO = { ttftMs: 5_000, itlMs: 60 } as const;

/** One (scenario, fleet, policy) case: `fleet` is `N` (aggregated) or `P:D`. */
export interface GoodputCase {
  readonly scenario: string;
  readonly fleet: string;
  readonly policy: string;
  readonly routers: number;
  readonly routerOverrides?: Record<string, string>;
}

export interface Cell {
  readonly rate: number;
  readonly ttftP99: number;
  readonly itlP99: number;
  readonly within: boolean;
}

export interface Sweep {
  readonly cells: Cell[];
  readonly goodput: number;
}

export interface SweepOptions {
  readonly seed: number;
  /** Simulated seconds per rate (0: the scenario's). */
  readonly duration: number;
  readonly rates: readonly number[];
  /** Bisection steps after the grid. */
  readonly refine: number;
  readonly slo?: { ttftMs: number; itlMs: number };
}

export function jobOf(c: GoodputCase, seed: number, duration: number, rate: number): DesJob {
  const pd = c.fleet.includes(':');
  return {
    scenario: c.scenario,
    seed,
    rate,
    duration,
    replicas: pd ? 0 : Number(c.fleet),
    ...(pd ? { pd: c.fleet } : {}),
    routers: c.routers,
    l4: 'random',
    policy: c.policy,
    ...(c.routerOverrides !== undefined ? { routerOverrides: c.routerOverrides } : {}),
  };
}

/** The goodput of `c` (module header); a failed run throws. */
export async function sweep(pool: DesPool, c: GoodputCase, o: SweepOptions): Promise<Sweep> {
  const slo = o.slo ?? SLO;
  const cell = async (rate: number): Promise<Cell> => {
    const out = await pool.run(jobOf(c, o.seed, o.duration, rate));
    if (!out.ok) throw new Error(`${c.scenario} ${c.fleet} ${c.policy} at ${rate} req/s: ${out.error.split('\n')[0]}`);
    const ttftP99 = p99AllRequests(out.result);
    const itlP99 = out.result.itl_ms.p99;
    return { rate, ttftP99, itlP99, within: ttftP99 <= slo.ttftMs && itlP99 <= slo.itlMs };
  };
  const cells = await Promise.all(o.rates.map(cell));
  const past = cells.findIndex((x) => !x.within);
  let lo = past < 0 ? (cells.at(-1)?.rate ?? 0) : past === 0 ? 0 : cells[past - 1]!.rate;
  if (past >= 0 && lo > 0) {
    let hi = cells[past]!.rate;
    for (let k = 0; k < o.refine; k++) {
      const mid = Math.round(((lo + hi) / 2) * 100) / 100;
      const x = await cell(mid);
      cells.push(x);
      if (x.within) lo = mid;
      else hi = mid;
    }
  }
  cells.sort((a, b) => a.rate - b.rate);
  return { cells, goodput: lo };
}

const ms = (x: number): string => (Number.isFinite(x) ? x.toFixed(0) : '∞');

/** A cell as the tables print it: TTFT p99 / ITL p99 (ms), ✓ within the SLO. */
export function cellText(x: Cell): string {
  return `${ms(x.ttftP99)} / ${x.itlP99.toFixed(1)}${x.within ? ' ✓' : ''}`;
}
