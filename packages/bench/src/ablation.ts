/**
 * Ablation runs and their reading: warmpath whole and warmpath with one step
 * switched off (the router's `placementOff`), for every (scenario, seed,
 * router count), DES under one L4 mode.
 *
 * Steps: ablationGroups lists the jobs per workload (scenario, seed), so a
 * caller runs each group on one shared plan description (DesPool.runShared);
 * toRun keeps what a result says (TTFT p50 / p99 over every request sent,
 * hit rate); summarize reads the runs as ratios to warmpath whole, the geometric
 * mean over seeds, and per router count N the N-router / 1-router ratio with
 * and without each step.
 * Complexity: O(runs) to index, O(steps × scenarios × router counts × seeds)
 * to summarize. Trade-off: a ratio hides the absolute figures; the JSON keeps
 * them.
 */
import { p50AllRequests, p99AllRequests } from './goals.ts';
import type { L4Mode } from './l4.ts';
import type { DesJob, JobOutcome } from './pool.ts';

/** One run: `off` is the step switched off ('' = warmpath whole; 'a+b': several at once). A TTFT is null when unanswered requests reach it. */
export interface AblationRun {
  scenario: string;
  seed: number;
  routers: number;
  off: string;
  ok: boolean;
  p50: number | null;
  p99: number | null;
  hitRate: number | null;
  /** Wall-clock seconds the run took (its worker's). */
  seconds: number;
  error?: string;
}

export interface AblationConfig {
  scenarios: string[];
  seeds: number[];
  routers: number[];
  steps: string[];
  /**
   * The steps also run at 1 router (default: every step). A step that does
   * nothing with one router (it reads the other routers' work) is not run
   * there: its 1-router figures are warmpath whole's.
   */
  oneRouterSteps?: string[] | undefined;
  l4: L4Mode;
  /** Simulated seconds per run (0 = each scenario's own). */
  duration: number;
  /** Replicas and arrival rate, req/s (0 or absent = each scenario's own). */
  replicas?: number;
  rate?: number;
}

export const runKey = (r: Pick<AblationRun, 'scenario' | 'seed' | 'routers' | 'off'>): string =>
  `${r.scenario}|${r.seed}|${r.routers}|${r.off}`;

/** The jobs of each workload (scenario, seed) not already in `done` (runKey), seed-major so a cut-short run covers every scenario. */
export function ablationGroups(cfg: AblationConfig, done: ReadonlySet<string>): DesJob[][] {
  const groups: DesJob[][] = [];
  for (const seed of cfg.seeds)
    for (const scenario of cfg.scenarios) {
      const jobs: DesJob[] = [];
      for (const routers of cfg.routers)
        for (const off of ['', ...cfg.steps]) {
          if (routers === 1 && off !== '' && cfg.oneRouterSteps !== undefined && !cfg.oneRouterSteps.includes(off))
            continue;
          if (done.has(runKey({ scenario, seed, routers, off }))) continue;
          jobs.push({
            scenario,
            seed,
            rate: cfg.rate ?? 0,
            duration: cfg.duration,
            replicas: cfg.replicas ?? 0,
            routers,
            l4: cfg.l4,
            policy: 'warmpath',
            ...(off !== '' ? { routerOverrides: { placementOff: off.split('+').join(',') } } : {}),
          });
        }
      if (jobs.length > 0) groups.push(jobs);
    }
  return groups;
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

export function toRun(o: JobOutcome): AblationRun {
  const j = o.job;
  const base = {
    scenario: j.scenario,
    seed: j.seed,
    routers: j.routers,
    off: (j.routerOverrides?.placementOff ?? '').split(',').join('+'),
  };
  if (!o.ok) return { ...base, ok: false, p50: null, p99: null, hitRate: null, seconds: o.seconds, error: o.error };
  const r = o.result;
  return {
    ...base,
    ok: true,
    p50: finite(p50AllRequests(r)),
    p99: finite(p99AllRequests(r)),
    hitRate: r.cache_hit_rate,
    seconds: o.seconds,
  };
}

/** A ratio over seeds: the geometric mean, and on how many seeds it is above 1 (worse) and below 1. */
export interface SeedRatio {
  mean: number;
  worse: number;
  better: number;
  seeds: number;
}

/** Geometric mean of a / b over the seeds where both are there (an unanswered TTFT, null, counts as infinite). */
export function seedRatio(pairs: ReadonlyArray<readonly [number | null, number | null]>): SeedRatio | undefined {
  const ratios = pairs.map(([a, b]) => (a === null ? Infinity : a) / (b === null ? Infinity : b));
  const usable = ratios.filter((r) => !Number.isNaN(r));
  if (usable.length === 0) return undefined;
  const mean = Math.exp(usable.reduce((s, r) => s + Math.log(r), 0) / usable.length);
  const eps = 1e-9;
  return {
    mean,
    worse: usable.filter((r) => r > 1 + eps).length,
    better: usable.filter((r) => r < 1 - eps).length,
    seeds: usable.length,
  };
}

/** Runs indexed by runKey (ok ones only). */
export function indexRuns(runs: readonly AblationRun[]): Map<string, AblationRun> {
  return new Map(runs.filter((r) => r.ok).map((r) => [runKey(r), r]));
}

export interface Cell {
  scenario: string;
  routers: number;
  off: string;
  /** Off / whole, over seeds. */
  p50?: SeedRatio | undefined;
  p99?: SeedRatio | undefined;
  /** Hit rate off − whole, points, mean over seeds. */
  hitPt?: number | undefined;
  /** N routers / 1 router, whole and with the step off (undefined at 1 router). */
  scaleWhole?: { p50?: SeedRatio | undefined; p99?: SeedRatio | undefined } | undefined;
  scaleOff?: { p50?: SeedRatio | undefined; p99?: SeedRatio | undefined } | undefined;
}

/** One cell per (step, scenario, router count) with runs on at least one seed. */
export function summarize(runs: readonly AblationRun[], cfg: AblationConfig): Cell[] {
  const idx = indexRuns(runs);
  // A step not run at 1 router (oneRouterSteps) reads as warmpath whole there.
  const at = (scenario: string, seed: number, routers: number, off: string) =>
    idx.get(runKey({ scenario, seed, routers, off })) ??
    (routers === 1 && cfg.oneRouterSteps !== undefined && !cfg.oneRouterSteps.includes(off)
      ? idx.get(runKey({ scenario, seed, routers, off: '' }))
      : undefined);
  const ratio = (metric: 'p50' | 'p99', a: (s: number) => AblationRun | undefined, b: typeof a) =>
    seedRatio(
      cfg.seeds.flatMap((s) => {
        const x = a(s);
        const y = b(s);
        return x !== undefined && y !== undefined ? [[x[metric], y[metric]] as const] : [];
      }),
    );
  const cells: Cell[] = [];
  for (const off of cfg.steps)
    for (const scenario of cfg.scenarios)
      for (const routers of cfg.routers) {
        const w = (s: number) => at(scenario, s, routers, '');
        const o = (s: number) => at(scenario, s, routers, off);
        const hits = cfg.seeds.flatMap((s) => {
          const x = o(s);
          const y = w(s);
          return x?.hitRate != null && y?.hitRate != null ? [(x.hitRate - y.hitRate) * 100] : [];
        });
        if (hits.length === 0) continue;
        const scale = (v: string) =>
          routers === 1
            ? undefined
            : {
                p50: ratio(
                  'p50',
                  (s) => at(scenario, s, routers, v),
                  (s) => at(scenario, s, 1, v),
                ),
                p99: ratio(
                  'p99',
                  (s) => at(scenario, s, routers, v),
                  (s) => at(scenario, s, 1, v),
                ),
              };
        cells.push({
          scenario,
          routers,
          off,
          p50: ratio('p50', o, w),
          p99: ratio('p99', o, w),
          hitPt: hits.reduce((a, b) => a + b, 0) / hits.length,
          scaleWhole: scale(''),
          scaleOff: scale(off),
        });
      }
  return cells;
}

const fr = (r: SeedRatio | undefined): string =>
  r === undefined ? '–' : `${Number.isFinite(r.mean) ? r.mean.toFixed(3) : '∞'} (${r.worse}↑${r.better}↓/${r.seeds})`;

/** Markdown: one row per (step, scenario, router count). */
export function summaryTable(cells: readonly Cell[]): string[] {
  const lines = [
    '| off | scenario | routers | p50 off/whole | p99 off/whole | hit Δ pt | p50 N/1 whole → off | p99 N/1 whole → off |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const c of cells) {
    const scale = (m: 'p50' | 'p99') =>
      c.scaleWhole === undefined ? '' : `${fr(c.scaleWhole[m])} → ${fr(c.scaleOff?.[m])}`;
    lines.push(
      `| ${c.off} | ${c.scenario} | ${c.routers} | ${fr(c.p50)} | ${fr(c.p99)} | ${c.hitPt?.toFixed(2) ?? '–'} | ${scale('p50')} | ${scale('p99')} |`,
    );
  }
  return lines;
}
