/**
 * The goals of prefill/decode disaggregation (docs/DISAGGREGATION.md,
 * "Goals"), judged per seed from goodput sweeps (goodput.ts) in the DES:
 *  - longdoc (long prompts, long outputs) on a P:D fleet: warmpath's goodput
 *    ≥ 1.2 × the best peer's P/D emulation on the same fleet, and ≥ the same
 *    GPUs aggregated under warmpath; and each policy on its own best split
 *    (as its operator would deploy it): warmpath's best ≥ 1.2 × the best
 *    peer's best, so the margin is not the chosen split's alone;
 *  - mixed (short chats among long documents): conditional disaggregation
 *    (warmpath's default threshold) ≥ 1.1 × always splitting
 *    (pdThresholdTokens 0) on the same fleet, and ≥ 1.1 × never splitting
 *    (the same GPUs aggregated);
 *  - longdoc: 4 and 16 routers ≥ 0.95 × 1 router's goodput.
 * The fleets' splits were chosen on tuning seeds 1–3 (each scenario's best
 * for warmpath among `SPLITS`) and are every policy's. A row whose target
 * is over the scenario's work bound (work-bound.ts: the rate no placement
 * on any split of the same GPUs sustains) is marked beyond any placement.
 */
import { goalsTable, type GoalRow } from './goal-rows.ts';
import { sweep, type GoodputCase, type Sweep } from './goodput.ts';
import { planFor, type DesPool } from './pool.ts';
import { SCENARIOS } from './scenarios.ts';
import { workBound, type WorkBound } from './work-bound.ts';

export const PD_TARGETS = { vsPeer: 1.2, vsAggregated: 1, conditional: 1.1, routers: 0.95 } as const;

/** The peers with a P/D emulation (KubeAI routes none). */
export const PD_PEERS = ['sglang-cache-aware', 'llm-d-approx', 'llm-d-precise', 'dynamo-kv'] as const;

/** The longdoc splits every P/D policy is also swept on (its best split). */
export const SPLITS = ['6:4', '5:5', '4:6', '3:7'] as const;

/**
 * Simulated seconds of arrivals per rate: several of longdoc's decode legs
 * end to end, so that a rate over what the fleet sustains breaks the SLO
 * within the run rather than leaving its backlog unjudged after the last
 * arrival (docs/DISAGGREGATION.md, "The work bound", says how long a leg is
 * and how far over the bound a run this long still passes).
 */
export const PD_GOALS_DURATION_S = 90;

/** Each goal scenario's fleet (disaggregated, and its GPUs aggregated) and the rates swept. */
export const PD_PLANS = {
  longdoc: { pd: '4:6', aggregated: '10', rates: [4, 6, 8, 10, 12, 14, 16] },
  mixed: { pd: '5:5', aggregated: '10', rates: [20, 30, 40, 60, 70, 80, 90, 100, 110] },
} as const;

const BASE_ROUTERS = 2;
/** The GPUs of every goal fleet (PD_PLANS' aggregated size). */
const GPUS = 10;

/**
 * A scenario's work bound on `gpus` for one seed: its plan at the
 * scenario's default rate over `duration` (the bound is a mean per
 * request, so the plan's rate only samples it; one rate for every table).
 */
export function scenarioBound(name: string, seed: number, duration: number, gpus: number): WorkBound {
  const scenario = SCENARIOS[name];
  if (scenario === undefined) throw new Error(`unknown scenario "${name}"`);
  const { plan } = planFor({ scenario: name, seed, rate: scenario.defaults.rate, duration });
  return workBound(scenario, plan, gpus);
}

/** Each goal scenario's work bound on one seed (scenarioBound on the goal fleets' GPUs). */
export function pdBounds(seed: number, duration: number): Record<keyof typeof PD_PLANS, WorkBound> {
  return {
    longdoc: scenarioBound('longdoc', seed, duration, GPUS),
    mixed: scenarioBound('mixed', seed, duration, GPUS),
  };
}
const ROUTER_COUNTS = [1, 4, 16] as const;

/** One case's sweep, named by what the goals call it. */
export interface PdRun {
  readonly name: string;
  readonly case: GoodputCase;
  readonly sweep: Sweep;
}

/** Every case the goals need, by name. */
export function pdCases(): Array<{ name: string; case: GoodputCase }> {
  const ld = PD_PLANS.longdoc;
  const mx = PD_PLANS.mixed;
  const c = (
    scenario: string,
    fleet: string,
    policy: string,
    routers = BASE_ROUTERS,
    over?: Record<string, string>,
  ) => ({
    scenario,
    fleet,
    policy,
    routers,
    ...(over !== undefined ? { routerOverrides: over } : {}),
  });
  return [
    { name: 'longdoc warmpath', case: c('longdoc', ld.pd, 'warmpath') },
    ...PD_PEERS.map((p) => ({ name: `longdoc ${p}`, case: c('longdoc', ld.pd, p) })),
    { name: 'longdoc aggregated', case: c('longdoc', ld.aggregated, 'warmpath') },
    ...SPLITS.filter((f) => f !== ld.pd).flatMap((f) =>
      ['warmpath', ...PD_PEERS].map((p) => ({ name: `longdoc ${p} ${f}`, case: c('longdoc', f, p) })),
    ),
    ...ROUTER_COUNTS.map((n) => ({ name: `longdoc ${n} routers`, case: c('longdoc', ld.pd, 'warmpath', n) })),
    { name: 'mixed conditional', case: c('mixed', mx.pd, 'warmpath') },
    {
      name: 'mixed always',
      case: c('mixed', mx.pd, 'warmpath', BASE_ROUTERS, { pdThresholdTokens: '0', pdStallShare: '0' }),
    },
    { name: 'mixed never', case: c('mixed', mx.aggregated, 'warmpath') },
  ];
}

/** The sweeps of one seed, one case after another (each case's grid runs in parallel on the pool). */
export async function pdRuns(
  pool: DesPool,
  o: { seed: number; duration: number; refine: number; onRun?: (r: PdRun) => void },
): Promise<PdRun[]> {
  const out: PdRun[] = [];
  for (const { name, case: c } of pdCases()) {
    const rates = PD_PLANS[c.scenario as keyof typeof PD_PLANS].rates;
    const run = {
      name,
      case: c,
      sweep: await sweep(pool, c, { seed: o.seed, duration: o.duration, rates, refine: o.refine }),
    };
    o.onRun?.(run);
    out.push(run);
  }
  return out;
}

const g = (x: number): string => `${Number(x.toFixed(2))}`;

/** A row: `a` against `b` × target (met when a ≥ target × b; a zero goodput meets nothing); beyond any placement when target × b is over `bound`. */
function ratioRow(
  seed: number,
  scenario: string,
  goal: string,
  a: PdRun,
  b: PdRun,
  target: number,
  bound?: WorkBound,
): GoalRow {
  const ratio = b.sweep.goodput > 0 ? a.sweep.goodput / b.sweep.goodput : a.sweep.goodput > 0 ? Infinity : 0;
  const need = target * b.sweep.goodput;
  return {
    scenario,
    seed,
    goal,
    measured: `${g(a.sweep.goodput)} vs ${g(b.sweep.goodput)} req/s (${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : '∞'})`,
    target: `≥ ${target}×`,
    pass: a.sweep.goodput > 0 && ratio >= target,
    ...(bound !== undefined && need > bound.rate
      ? { beyond: `beyond any placement: ${g(need)} req/s is over the work bound ${g(bound.rate)}` }
      : {}),
  };
}

/** The row with the rival's policy named in its measure (the best peer differs by seed). */
const named = (row: GoalRow, rival: PdRun): GoalRow => ({ ...row, measured: `${row.measured}, ${rival.case.policy}` });

/** The goal rows of one seed's runs (module header). */
export function pdGoalRows(seed: number, runs: readonly PdRun[], bounds?: ReturnType<typeof pdBounds>): GoalRow[] {
  const by = (name: string): PdRun => {
    const r = runs.find((x) => x.name === name);
    if (r === undefined) throw new Error(`no run "${name}"`);
    return r;
  };
  const w = by('longdoc warmpath');
  const peers = PD_PEERS.map((p) => by(`longdoc ${p}`));
  const best = peers.reduce((a, b) => (b.sweep.goodput > a.sweep.goodput ? b : a));
  const ld = PD_PLANS.longdoc.pd;
  const one = by('longdoc 1 routers');
  /** A policy's best sweep over the splits (its name at the plan's split has no suffix). */
  const bestSplit = (p: string): PdRun =>
    SPLITS.map((f) => by(f === ld ? `longdoc ${p}` : `longdoc ${p} ${f}`)).reduce((a, b) =>
      b.sweep.goodput > a.sweep.goodput ? b : a,
    );
  const wBest = bestSplit('warmpath');
  const peerBest = PD_PEERS.map(bestSplit).reduce((a, b) => (b.sweep.goodput > a.sweep.goodput ? b : a));
  const at = (r: PdRun): string => `${r.case.policy} ${r.case.fleet}`;
  const eachBest = ratioRow(
    seed,
    'longdoc',
    'best split each: goodput ≥ 1.2× the best peer',
    wBest,
    peerBest,
    PD_TARGETS.vsPeer,
    bounds?.longdoc,
  );
  return [
    named(
      ratioRow(seed, 'longdoc', `${ld} goodput ≥ 1.2× the best peer P/D`, w, best, PD_TARGETS.vsPeer, bounds?.longdoc),
      best,
    ),
    { ...eachBest, measured: `${eachBest.measured}: ${at(wBest)} vs ${at(peerBest)}` },
    ratioRow(
      seed,
      'longdoc',
      `${ld} goodput ≥ the same GPUs aggregated`,
      w,
      by('longdoc aggregated'),
      PD_TARGETS.vsAggregated,
    ),
    ...ROUTER_COUNTS.filter((n) => n !== 1).map((n) =>
      ratioRow(
        seed,
        'longdoc',
        `${ld}: ${n} routers' goodput ≥ 0.95× 1 router's`,
        by(`longdoc ${n} routers`),
        one,
        PD_TARGETS.routers,
      ),
    ),
    ratioRow(
      seed,
      'mixed',
      `${PD_PLANS.mixed.pd} conditional ≥ 1.1× always split`,
      by('mixed conditional'),
      by('mixed always'),
      PD_TARGETS.conditional,
    ),
    ratioRow(
      seed,
      'mixed',
      'conditional ≥ 1.1× never split (the GPUs aggregated)',
      by('mixed conditional'),
      by('mixed never'),
      PD_TARGETS.conditional,
    ),
  ];
}

/** What `goodput.ts --goals --json` writes. */
export interface PdGoalsJson {
  meta: {
    command: string;
    commit: string;
    slo: { ttftMs: number; itlMs: number };
    duration: number;
    refine: number;
    /** Set when the work bounds (and so the rows) were computed again from the plans after the runs (`--bounds-only`). */
    bounds?: { command: string; commit: string };
  };
  seeds: Array<{ seed: number; runs: PdRun[]; bounds?: ReturnType<typeof pdBounds> }>;
  rows: GoalRow[];
}

/**
 * The saved runs with each seed's work bounds computed again from its plans
 * (the bounds need no run) and the goal rows judged again against them; the
 * runs are kept as they are, and `meta.bounds` records the command and commit.
 */
export function withBounds(json: PdGoalsJson, at: { command: string; commit: string }): PdGoalsJson {
  const seeds = json.seeds.map((s) => ({ ...s, bounds: pdBounds(s.seed, json.meta.duration) }));
  return {
    meta: { ...json.meta, bounds: at },
    seeds,
    rows: seeds.flatMap((s) => pdGoalRows(s.seed, s.runs, s.bounds)),
  };
}

/** docs/DISAGGREGATION.md's figures from the saved runs: each case's goodput per seed, then the goal rows. */
export function pdGoalsTable(json: PdGoalsJson, source: string): string {
  const seeds = json.seeds.map((s) => s.seed);
  const m = json.meta;
  const lines = [
    `From \`${source}\` (\`${m.command}\`, commit ${m.commit}): DES, ${m.duration} simulated seconds per rate, ${BASE_ROUTERS} routers unless named, random L4; goodput at TTFT p99 ≤ ${m.slo.ttftMs} ms and ITL p99 ≤ ${m.slo.itlMs} ms, req/s (the grid, then ${m.refine} bisection steps)${m.bounds !== undefined ? `; the work bounds from the plans by \`${m.bounds.command}\`, commit ${m.bounds.commit}` : ''}.`,
    '',
    `| case | fleet | ${seeds.map((s) => `seed ${s}`).join(' | ')} |`,
    `|---|---|${seeds.map(() => '--:|').join('')}`,
  ];
  for (const { name, case: c } of json.seeds[0]?.runs ?? []) {
    const cells = json.seeds.map((s) => g(s.runs.find((r) => r.name === name)?.sweep.goodput ?? NaN));
    lines.push(`| ${name} | ${c.fleet} | ${cells.join(' | ')} |`);
  }
  for (const name of Object.keys(PD_PLANS) as Array<keyof typeof PD_PLANS>) {
    const cells = json.seeds.map((s) => (s.bounds !== undefined ? g(s.bounds[name].rate) : '–'));
    lines.push(`| ${name} work bound (any placement, any split) | ${GPUS} GPUs | ${cells.join(' | ')} |`);
  }
  const { table, met, total } = goalsTable(json.rows, seeds);
  lines.push('', table, '', `${met} of ${total} goals met (a goal holds on 3 of 4 seeds).`);
  return lines.join('\n');
}
