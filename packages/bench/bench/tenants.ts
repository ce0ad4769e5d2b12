/**
 * The `tenants` scenario's goals in the DES (packages/bench/src/tenant-goals.ts):
 * per seed, per tenant TTFT p50/p99, admitted and refused, completed tokens/s
 * of every run, then the goal rows (✓/✗ per seed, met on 3 of 4).
 *
 *   node packages/bench/bench/tenants.ts [--seeds 101,102,103,104] [--rate 16] [--duration 180]
 *     [--scheduling-policy fcfs|priority] [--reserve 0.75] [--lower-slots 4] [--json docs/data/tenants.json]
 *
 * The engines schedule by the bands (the scenario's fleet) unless
 * --scheduling-policy fcfs; the interactive reserve is the scenario's
 * (SCENARIO_RESERVE) unless --reserve (0: none), and so are its shared
 * replica's lower-band slots (SCENARIO_LOWER_SLOTS) unless --lower-slots
 * (0: none). The JSON records all three.
 *
 * Tune on seeds 1–3; report on the held-out seeds 101–104 (the default).
 * Smoke: --seeds 1 --duration 70
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { goalsTable, type GoalRow } from '../src/goal-rows.ts';
import { tenantGoalRows, tenantRuns, tenantsScenario, type TenantRun } from '../src/tenant-goals.ts';
import { SCENARIO_LOWER_SLOTS, SCENARIO_RESERVE } from '../src/tenants-plan.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    seeds: { type: 'string', default: '101,102,103,104' },
    rate: { type: 'string' },
    duration: { type: 'string' },
    json: { type: 'string' },
    'scheduling-policy': { type: 'string' },
    reserve: { type: 'string' },
    'lower-slots': { type: 'string' },
  },
});
const policy = values['scheduling-policy'];
if (policy !== undefined && policy !== 'fcfs' && policy !== 'priority')
  throw new Error(`--scheduling-policy: fcfs or priority, not ${policy}`);
const reserve = values.reserve === undefined ? SCENARIO_RESERVE : Number(values.reserve);
if (!(reserve >= 0 && reserve < 1)) throw new Error(`--reserve: a share ≥ 0 and < 1, not ${values.reserve}`);
const lowerSlots = values['lower-slots'] === undefined ? SCENARIO_LOWER_SLOTS : Number(values['lower-slots']);
if (!(Number.isInteger(lowerSlots) && lowerSlots >= 0))
  throw new Error(`--lower-slots: an integer ≥ 0, not ${values['lower-slots']}`);
const seeds = values.seeds.split(',').map(Number);
const rows: GoalRow[] = [];
const all: Array<{ seed: number; runs: TenantRun[] }> = [];
for (const seed of seeds) {
  const runs = await tenantRuns({
    seed,
    ...(values.rate !== undefined ? { rate: Number(values.rate) } : {}),
    ...(values.duration !== undefined ? { duration: Number(values.duration) } : {}),
    ...(policy !== undefined ? { schedulingPolicy: policy } : {}),
    reserve,
    lowerSlots,
    onRun: (r) => {
      console.log(`seed ${seed}, ${r.variant}, ${r.routers} routers: fleet ${r.fleetTokensPerS} tokens/s`);
      console.table(r.rows);
    },
  });
  all.push({ seed, runs });
  rows.push(...tenantGoalRows(seed, runs));
}
const { table, met, total } = goalsTable(rows, seeds);
console.log(`${table}\n\n${met} of ${total} goals met`);
if (values.json !== undefined) {
  const command = `node packages/bench/bench/tenants.ts ${process.argv.slice(2).join(' ')}`.trim();
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const fleet = tenantsScenario(policy).fleet;
  writeFileSync(
    values.json,
    `${JSON.stringify({ meta: { command, commit, fleet, reserve, lowerSlots }, seeds: all, rows }, null, 1)}\n`,
  );
}
