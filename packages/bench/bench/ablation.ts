/**
 * Ablation: warmpath with each placement step switched off in turn
 * (`placementOff`), against warmpath whole, for every scenario, seed and
 * router count (DES, random L4 by default). Saves every run to a JSON file
 * (with the run's configuration), rewritten after each result, and prints
 * the ratios to warmpath whole (geometric mean over seeds) and the N-router /
 * 1-router ratios with and without each step (src/ablation.ts).
 * Tune on seeds 1–3 only; judge on 101–104.
 *
 *   node packages/bench/bench/ablation.ts [--seeds 1,2,3] [--scenarios a,b] [--steps a,b]
 *     [--routers 1,4,16] [--one-router-steps a,b] [--l4 random] [--duration S] [--replicas N] [--rate R]
 *     [--json FILE] [--resume] [--report]
 *
 * A step 'a+b' switches a and b off together.
 * --duration: simulated seconds per run (default 0: each scenario's own).
 * --replicas, --rate: fleet size and arrival rate, req/s (default 0: each scenario's own).
 * --one-router-steps: the steps also run at 1 router (default: all); the others read as
 *   warmpath whole there (for steps that do nothing with one router: slice, share, expect,
 *   retry-two-choices, balance-spread).
 * --resume: keep the runs already in --json (same l4 and duration) and run only the missing ones.
 * --report: run nothing; print the table of the runs in --json.
 * Smoke: --scenarios seed --seeds 1 --routers 1 --steps slice --duration 2 --json /tmp/a.json
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SWITCHABLE_STEP_NAMES } from '@warmpath/router';
import {
  ablationGroups,
  type AblationConfig,
  type AblationRun,
  runKey,
  summarize,
  summaryTable,
  toRun,
} from '../src/ablation.ts';
import { GOAL_SCENARIOS, TUNING_SEEDS } from '../src/goals.ts';
import type { L4Mode } from '../src/l4.ts';
import { DesPool, type JobOutcome } from '../src/pool.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values: o } = scriptArgs(import.meta.url, {
  options: {
    scenarios: { type: 'string' },
    seeds: { type: 'string' },
    routers: { type: 'string' },
    steps: { type: 'string' },
    'one-router-steps': { type: 'string' },
    l4: { type: 'string' },
    duration: { type: 'string' },
    replicas: { type: 'string' },
    rate: { type: 'string' },
    json: { type: 'string' },
    resume: { type: 'boolean', default: false },
    report: { type: 'boolean', default: false },
  },
});
const opt = (name: string): string | undefined => o[name.replace(/^--/, '') as keyof typeof o] as string | undefined;
const list = (name: string): string[] | undefined =>
  opt(name)
    ?.split(',')
    .filter((s) => s !== '');
const cfg: AblationConfig = {
  scenarios: list('--scenarios') ?? [...GOAL_SCENARIOS],
  seeds: (list('--seeds') ?? TUNING_SEEDS.map(String)).map(Number),
  routers: (list('--routers') ?? ['1', '4', '16']).map(Number),
  steps: list('--steps') ?? [...SWITCHABLE_STEP_NAMES],
  oneRouterSteps: list('--one-router-steps'),
  l4: (opt('--l4') ?? 'random') as L4Mode,
  duration: Number(opt('--duration') ?? 0),
  replicas: Number(opt('--replicas') ?? 0),
  rate: Number(opt('--rate') ?? 0),
};
const unknown = cfg.steps
  .flatMap((s) => s.split('+'))
  .filter((s) => !(SWITCHABLE_STEP_NAMES as readonly string[]).includes(s));
if (unknown.length > 0)
  throw new Error(`unknown steps ${unknown.join(', ')}: known ${SWITCHABLE_STEP_NAMES.join(', ')}`);
const jsonPath = opt('--json');

interface AblationFile {
  /** Every invocation that added runs: its configuration, commit and wall-clock span. */
  invocations: Array<AblationConfig & { commit: string; started: string; finished?: string }>;
  runs: AblationRun[];
}

function load(): AblationFile {
  if (jsonPath === undefined || !existsSync(jsonPath) || !(o.resume || o.report)) return { invocations: [], runs: [] };
  const file = JSON.parse(readFileSync(jsonPath, 'utf8')) as AblationFile;
  for (const inv of file.invocations)
    if (!o.report && (inv.l4 !== cfg.l4 || inv.duration !== cfg.duration))
      throw new Error(`${jsonPath} holds runs under l4 ${inv.l4}, duration ${inv.duration}: not resumable with these`);
  return file;
}

const file = load();
const save = (): void => {
  if (jsonPath === undefined) return;
  mkdirSync(dirname(jsonPath), { recursive: true });
  writeFileSync(jsonPath, `${JSON.stringify(file, null, 1)}\n`);
};

async function runAll(): Promise<void> {
  const commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  const inv = { ...cfg, commit, started: new Date().toISOString() } as AblationFile['invocations'][number];
  file.invocations.push(inv);
  const done = new Set(file.runs.filter((r) => r.ok).map(runKey));
  file.runs = file.runs.filter((r) => r.ok);
  const pool = new DesPool();
  const groups = ablationGroups(cfg, done);
  const total = groups.reduce((n, g) => n + g.length, 0);
  let finished = 0;
  const record = (o: JobOutcome): void => {
    const run = toRun(o);
    file.runs.push(run);
    save();
    const what = `${run.scenario} seed ${run.seed} ${run.routers}r off=${run.off || '-'}`;
    console.error(
      `[${++finished}/${total}] ${what}: ${run.ok ? `${run.p50} / ${run.p99} ms` : run.error} (${run.seconds}s)`,
    );
  };
  // Two workloads in flight at most: the parent holds each one's descriptions until its last job has them.
  let previous: Promise<unknown> = Promise.resolve();
  for (const jobs of groups) {
    const outcomes = pool.runShared(jobs).outcomes.map((p) => p.then(record));
    await previous;
    previous = Promise.all(outcomes);
  }
  await previous;
  await pool.close();
  inv.finished = new Date().toISOString();
  save();
}

if (!o.report) await runAll();
console.log(
  `Warmpath with one step off against warmpath whole (DES, ${cfg.l4} L4, seeds ${cfg.seeds.join(', ')}): TTFT p50 / p99 over every request sent, as the geometric mean over seeds of off / whole (seeds where off is higher ↑, lower ↓ / seeds), hit rate off − whole in points; N/1: N routers over 1 router, whole → with the step off.\n`,
);
console.log(summaryTable(summarize(file.runs, cfg)).join('\n'));
