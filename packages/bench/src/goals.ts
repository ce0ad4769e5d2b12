/**
 * The benchmark's goals, judged on held-out workload seeds (placement may be
 * tuned on seeds 1–3 only; goals are judged on 101–104 and a goal is met when
 * it holds on at least 3 of the 4). Every TTFT figure here is over every
 * request sent: a request never answered counts as slower than any answered.
 *
 * Goals, per scenario (seed, chat, fanout, lora, pianos, trace, longctx), DES:
 *  - TTFT p50 and p99 ≤ 0.95 × the best peer emulation's (2 routers, random L4);
 *  - TTFT p50 ≤ 1/3 of round-robin's at the default load;
 *  - hit rate ≥ every peer's at 1, 4 and 16 routers, under random and sticky
 *    L4 (reported beside the ceiling: one fleet-sized cache, Belady eviction);
 *  - 4 and 16 routers: hit rate ≥ 0.95 × and TTFT p50/p99 ≤ 1.05 × 1 router's;
 *  - within 10% of `warmpath-instant` (true engine state, no delay) on p50/p99;
 *  - lora: adapter loads ≤ 0.95 × the fewest of any peer.
 * Then the tenants scenario's goals (tenant-goals.ts: noisy neighbour,
 * overload, the global token limit; six DES runs per seed in this process,
 * after the pool's jobs) when --scenarios names `tenants` (it does by default).
 * With --tiers, the tiered goals instead (goal-rows.ts, TIERS).
 * A TTFT target under the plan's TTFT bound (references.ts: no policy's
 * p50 / p99 is below it) is marked beyond any router; a goal beyond reach on
 * so many seeds that it cannot hold on enough of them is counted apart.
 * Steps: jobs for every (seed, scenario, routers, L4, policy) → a worker pool
 * (DesPool: two at a time, each under a heap limit; a failed job is reported,
 * never fatal) → rows per seed → a table of goals × seeds.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { configFromProcess, type CommandHelp, type Schema } from '@warmpath/shared/runtime';
import { DesPool, type DesJob, type JobOutcome } from './pool.ts';
import { computeReferences, type References } from './references.ts';
import type { PolicyResult } from './report.ts';
import { SCENARIOS } from './scenarios.ts';
import { tenantGoalRows, tenantRuns } from './tenant-goals.ts';
import {
  checkRuns,
  GOAL_SCENARIOS,
  goalsTable,
  HELD_OUT_SEEDS,
  jobsFor,
  RunSet,
  TARGETS,
  tierJobsFor,
  TIERS,
  tierRows,
  type GoalRow,
} from './goal-rows.ts';

export {
  checkRuns,
  GOAL_SCENARIOS,
  goalsTable,
  HELD_OUT_SEEDS,
  jobsFor,
  p50AllRequests,
  p99AllRequests,
  PEER_POLICIES,
  RunSet,
  TARGETS,
  tierJobsFor,
  TIERS,
  tierRows,
  TUNING_SEEDS,
  type GoalRow,
} from './goal-rows.ts';

/** The scenario whose goals are the tenants' (tenant-goals.ts), not the peers' comparison. */
const TENANTS = 'tenants';

export const goalsSchema = {
  scenarios: { type: 'list', default: [...GOAL_SCENARIOS, TENANTS], doc: 'scenarios to check' },
  seeds: {
    type: 'list',
    default: HELD_OUT_SEEDS.map(String),
    doc: 'workload seeds (held-out: 101–104; tune on 1–3 only)',
  },
  trace: {
    type: 'string',
    default: '',
    doc: 'Mooncake-format trace for the trace scenario ("" = the one shipped in packages/bench/traces/)',
  },
  tiers: {
    type: 'boolean',
    default: false,
    doc: 'the tiered goals instead: host memory 4× the GPU KV and KV sharing, on trace, chat and longctx',
  },
  workers: { type: 'number', default: 2, min: 1, max: 64, integer: true, doc: 'DES jobs run at once (worker threads)' },
  json: {
    type: 'string',
    default: '',
    doc: 'write every result, reference and goal row here (rewritten as results arrive)',
  },
} as const satisfies Schema;

export const GOALS_HELP: CommandHelp = {
  description:
    "Checks the benchmark's goals (TTFT and hit rate against the peers, round-robin, several routers, the gossip price) on every scenario in the discrete-event simulator (and the tenants scenario's fair-share, priority and limit goals), on the held-out seeds 101-104: a goal is met when it holds on at least 3 of 4. Prints the goal table; each seed is a long run (--workers runs more jobs at once).",
  examples: [
    'warmpath goals',
    '# one seed, two scenarios, every result saved as it arrives',
    'warmpath goals --seeds 101 --scenarios seed,chat --json goals.json',
    '# the tiered goals: host memory 4x and KV sharing on trace, chat and longctx',
    'warmpath goals --tiers --json goals-tiers.json',
  ],
};

interface Progress {
  /** Which commit and command produced this file (docs/SCOREBOARD.md cites them). */
  meta: { commit?: string; command: string };
  results: Array<{ job: DesJob; result?: PolicyResult; error?: string; seconds: number }>;
  references: Record<string, References>;
  rows: GoalRow[];
}

/** `warmpath goals`: every job on a worker pool, then the goal table across seeds. */
export async function run(argv: string[]): Promise<void> {
  const cfg = configFromProcess('goals', goalsSchema, argv, GOALS_HELP);
  const trace = cfg.trace === '' ? undefined : resolve(cfg.trace);
  for (const name of cfg.scenarios) if (SCENARIOS[name] === undefined) throw new Error(`unknown scenario "${name}"`);
  const seeds = cfg.seeds.map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n)) throw new Error(`--seeds: "${x}" is not an integer`);
    return n;
  });
  const meta = { ...gitCommit(), command: ['warmpath goals', ...argv].join(' ') };
  const progress: Progress = { meta, results: [], references: {}, rows: [] };
  const save = () => (cfg.json !== '' ? writeFileSync(cfg.json, JSON.stringify(progress, null, 1)) : undefined);
  const pool = new DesPool(cfg.workers);
  const started = Date.now();
  const done = new Map<string, Promise<void>>();
  for (const seed of seeds) {
    for (const scenario of cfg.scenarios) {
      const runs = new RunSet();
      // The plan is described once here for all its jobs (streamed to the workers already running some), then its references.
      const named = SCENARIOS[scenario]!;
      if (scenario === TENANTS) continue; // its own runs, after the pool's (tenant-goals.ts)
      if (cfg.tiers && !(TIERS.scenarios as readonly string[]).includes(scenario)) continue;
      const sc = cfg.tiers
        ? { ...named, fleet: { ...named.fleet, cpuKvRatio: TIERS.cpuKvRatio, kvSharing: TIERS.kvSharing } }
        : named;
      const { outcomes, plan } = pool.runShared((cfg.tiers ? tierJobsFor : jobsFor)(scenario, seed, trace));
      const jobs = outcomes.map((o) => o.then((x) => record(x, runs, progress, save)));
      const refs = computeReferences(sc, plan, sc.fleet.replicas);
      done.set(
        `${scenario}|${seed}`,
        Promise.all(jobs).then(() => {
          progress.references[`${scenario}|${seed}`] = refs;
          progress.rows.push(...(cfg.tiers ? tierRows : checkRuns)(scenario, seed, runs, refs));
          save();
          console.error(`goals: ${scenario}, seed ${seed} done (${((Date.now() - started) / 60_000).toFixed(1)} min)`);
        }),
      );
    }
  }
  await Promise.all(done.values());
  await pool.close();
  if (cfg.scenarios.includes(TENANTS) && !cfg.tiers)
    for (const seed of seeds) {
      progress.rows.push(...tenantGoalRows(seed, await tenantRuns({ seed })));
      save();
      console.error(`goals: tenants, seed ${seed} done (${((Date.now() - started) / 60_000).toFixed(1)} min)`);
    }
  const { table, met, total, beyond } = goalsTable(progress.rows, seeds);
  console.log(table);
  const failed = progress.results.filter((r) => r.error !== undefined);
  for (const f of failed)
    console.log(
      `\nfailed: ${f.job.policy} on ${f.job.scenario}, seed ${f.job.seed}, ${f.job.routers} routers (${f.job.l4}): ${f.error?.split('\n')[0]}`,
    );
  const out =
    beyond > 0
      ? `; ${beyond} of the other ${total - met} beyond any router (a target under the plan's TTFT bound)`
      : '';
  console.log(
    `\n${met}/${total} goals met on at least ${Math.ceil(TARGETS.seedsNeeded * seeds.length)} of ${seeds.length} seeds${out} (seeds ${seeds.join(', ')}; ${((Date.now() - started) / 60_000).toFixed(1)} min)`,
  );
  save();
}

/** The checkout's commit, or nothing outside a git checkout. */
function gitCommit(): { commit?: string } {
  try {
    return {
      commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: 'pipe' }).trim(),
    };
  } catch {
    return {};
  }
}

function record(o: JobOutcome, runs: RunSet, progress: Progress, save: () => void): void {
  if (o.ok) {
    runs.set(o.job.routers, o.job.l4, o.result);
    const { detail, ...rest } = o.result;
    progress.results.push({
      job: o.job,
      result: {
        ...rest,
        ...(detail !== undefined ? { detail: { ...detail, ttftSamples: [], perReplicaLoad: [] } } : {}),
      } as PolicyResult,
      seconds: o.seconds,
    });
  } else {
    progress.results.push({ job: o.job, error: o.error, seconds: o.seconds });
    console.error(
      `goals: ${o.job.policy} failed on ${o.job.scenario} (seed ${o.job.seed}, ${o.job.routers} routers, ${o.job.l4}): ${o.error.split('\n')[0]}`,
    );
  }
  save();
}
