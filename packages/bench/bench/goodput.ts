/**
 * Goodput: the highest arrival rate at which TTFT p99 (over every request
 * sent, an unanswered one counting as the slowest) and inter-token latency
 * p99 both stay within a stated SLO, per fleet and policy (DES, random L4,
 * 2 routers unless told; src/goodput.ts). Fleets of the same GPUs aggregated
 * (`N`) and disaggregated (`P:D`, des/pd.ts) side by side: where
 * disaggregation pays and where not (docs/DISAGGREGATION.md, "Goodput").
 *
 *   node packages/bench/bench/goodput.ts [--seed N] [--duration S] [--refine K] [--slo-ttft-ms MS] [--slo-itl-ms MS]
 *     [--fleets 10,5:5,3:7] [--policies warmpath,round-robin] [--routers N] [--router-set k=v,…]
 *     [longctx:6,10,14 …]
 *   node packages/bench/bench/goodput.ts --goals [--seeds 101,102,103,104] [--duration S] [--refine K] [--json FILE]
 *   node packages/bench/bench/goodput.ts --goals --bounds-only --json FILE
 *
 * Prints one row per (scenario, fleet, policy): each rate's TTFT p99 / ITL p99
 * (✓ within the SLO), then the goodput: the highest rate within it such that
 * every lower rate swept was within it too (0 when the lowest is not),
 * refined by K bisection steps toward the first rate past it (default 0).
 * Each scenario's work bound per fleet (src/work-bound.ts) heads its table,
 * and a goodput over it is flagged: the run ended before its backlog could
 * break the SLO (docs/DISAGGREGATION.md, "The work bound").
 * --goals runs the disaggregation goals (src/pd-goals.ts) on each seed and
 * prints the goal table (met on 3 of 4 seeds); --json writes every sweep and
 * row. Tune on seeds 1–3; report on the held-out seeds 101–104 (the default).
 * --bounds-only: no run; the work bounds of FILE's seeds computed again from
 * their plans, its rows judged again, its runs kept, and meta.bounds naming
 * this command and commit (then scoreboard.ts writes the docs' tables).
 * Smoke: --duration 2 --fleets 2,1:1 longctx:2
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { goalsTable, type GoalRow } from '../src/goal-rows.ts';
import { cellText, sweep, type GoodputCase } from '../src/goodput.ts';
import {
  PD_GOALS_DURATION_S,
  pdBounds,
  pdGoalRows,
  pdRuns,
  scenarioBound,
  withBounds,
  type PdGoalsJson,
} from '../src/pd-goals.ts';
import { DesPool } from '../src/pool.ts';
import { SCENARIOS } from '../src/scenarios.ts';
import { keyValues, scriptArgs } from '@warmpath/shared/runtime';

const { values: o, positionals } = scriptArgs(import.meta.url, {
  allowPositionals: true,
  options: {
    goals: { type: 'boolean', default: false },
    'bounds-only': { type: 'boolean', default: false },
    seed: { type: 'string', default: '101' },
    seeds: { type: 'string', default: '101,102,103,104' },
    duration: { type: 'string' },
    refine: { type: 'string' },
    'slo-ttft-ms': { type: 'string', default: '5000' },
    'slo-itl-ms': { type: 'string', default: '60' },
    fleets: { type: 'string', default: '10,5:5,3:7' },
    policies: { type: 'string', default: 'warmpath,round-robin' },
    routers: { type: 'string', default: '2' },
    'router-set': { type: 'string', default: '' },
    json: { type: 'string', default: '' },
  },
});
const command = `node packages/bench/bench/goodput.ts ${process.argv.slice(2).join(' ')}`.trim();
const goals = o.goals;
const seed = Number(o.seed);
const seeds = o.seeds.split(',').map(Number);
const duration = Number(o.duration ?? (goals ? String(PD_GOALS_DURATION_S) : '0'));
const refine = Number(o.refine ?? (goals ? '3' : '0'));
const slo = { ttftMs: Number(o['slo-ttft-ms']), itlMs: Number(o['slo-itl-ms']) };
const fleets = o.fleets.split(',');
const policies = o.policies.split(',');
const routers = Number(o.routers);
const routerSet = o['router-set'];
const json = o.json;
const routerOverrides = keyValues('--router-set', routerSet);
const specs = positionals.length > 0 ? positionals : ['longctx:6,10,14,18', 'chat:10,15,20,25'];

const pool = new DesPool();

/** A fleet's GPUs: `N`, or P + D. */
const gpusOf = (fleet: string): number => fleet.split(':').reduce((a, x) => a + Number(x), 0);

/** One (scenario, fleet, policy) row over the rates (and the refinement's); a goodput over the work bound is flagged. */
async function row(c: GoodputCase, rates: number[], bound: number): Promise<string> {
  try {
    const s = await sweep(pool, c, { seed, duration, rates, refine, slo });
    const over = s.goodput > bound ? ` over the work bound ${bound.toFixed(2)}: a run too short to judge` : '';
    return `| ${c.scenario} | ${c.fleet} | ${c.policy} | ${s.cells.map((x) => `${x.rate}: ${cellText(x)}`).join(' | ')} | **${s.goodput}**${over} |`;
  } catch (e) {
    return `| ${c.scenario} | ${c.fleet} | ${c.policy} | failed: ${(e as Error).message} |`;
  }
}

async function tables(): Promise<void> {
  for (const spec of specs) {
    const [name, list] = spec.split(':') as [string, string];
    if (SCENARIOS[name] === undefined) throw new Error(`unknown scenario "${name}"`);
    const rates = list.split(',').map(Number);
    console.log(
      `\n${name}, seed ${seed}, ${routers} routers, SLO TTFT p99 ≤ ${slo.ttftMs} ms and ITL p99 ≤ ${slo.itlMs} ms (cells: rate: TTFT p99 / ITL p99, ms)\n`,
    );
    const bounds = new Map(fleets.map((f) => [f, scenarioBound(name, seed, duration, gpusOf(f)).rate]));
    console.log(
      `work bound (src/work-bound.ts: no placement on any split serves more): ${[...bounds].map(([f, b]) => `${f} ${b.toFixed(2)}`).join(', ')} req/s\n`,
    );
    console.log(`| scenario | fleet | policy | rates … | goodput |`);
    console.log(`|---|---|---|---|--:|`);
    const cases = fleets.flatMap((fleet) =>
      policies.map((policy) => ({
        scenario: name,
        fleet,
        policy,
        routers,
        ...(routerSet !== '' ? { routerOverrides } : {}),
      })),
    );
    for (const r of await Promise.all(cases.map((c) => row(c, rates, bounds.get(c.fleet)!)))) console.log(r);
  }
}

async function goalRuns(): Promise<void> {
  const rows: GoalRow[] = [];
  const all: PdGoalsJson['seeds'] = [];
  for (const s of seeds) {
    const runs = await pdRuns(pool, {
      seed: s,
      duration,
      refine,
      onRun: (r) =>
        console.log(
          `seed ${s}, ${r.name} (${r.case.fleet}): ${r.sweep.goodput} req/s; ${r.sweep.cells.map((x) => `${x.rate}: ${cellText(x)}`).join(', ')}`,
        ),
    });
    const bounds = pdBounds(s, duration);
    console.log(
      `seed ${s}, work bounds: longdoc ${bounds.longdoc.rate.toFixed(2)}, mixed ${bounds.mixed.rate.toFixed(2)} req/s`,
    );
    all.push({ seed: s, runs, bounds });
    rows.push(...pdGoalRows(s, runs, bounds));
  }
  const { table, met, total } = goalsTable(rows, seeds);
  console.log(`\n${table}\n\n${met} of ${total} goals met`);
  if (json !== '') writeJson({ meta: { command, commit: commitOf(), slo, duration, refine }, seeds: all, rows });
}

const commitOf = (): string => execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const writeJson = (j: PdGoalsJson): void => writeFileSync(json, `${JSON.stringify(j, null, 1)}\n`);

/** --bounds-only: the saved runs' work bounds and rows again, from the plans (no run). */
function boundsOnly(): void {
  if (json === '') throw new Error('--bounds-only needs --json FILE (a saved --goals run)');
  const out = withBounds(JSON.parse(readFileSync(json, 'utf8')) as PdGoalsJson, { command, commit: commitOf() });
  for (const s of out.seeds)
    console.log(
      `seed ${s.seed}, work bounds: ${Object.entries(s.bounds ?? {})
        .map(
          ([n, b]) =>
            `${n} ${b.rate.toFixed(2)} (prefill ${b.prefillS.toFixed(3)}, decode ${b.decodeS.toFixed(3)}, fixed ${b.fixedS.toFixed(3)} s)`,
        )
        .join(', ')} req/s`,
    );
  const { table, met, total } = goalsTable(
    out.rows,
    out.seeds.map((s) => s.seed),
  );
  console.log(`\n${table}\n\n${met} of ${total} goals met`);
  writeJson(out);
}

try {
  if (o['bounds-only']) boundsOnly();
  else await (goals ? goalRuns() : tables());
} finally {
  await pool.close();
}
