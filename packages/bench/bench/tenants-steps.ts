/**
 * Where an interactive request's time to first token goes inside the
 * engines, in the `tenants` scenario's DES run at 4 routers and in the
 * interactive tenants alone (the overload goal's two runs;
 * docs/TENANTS.md, "Engines that schedule by priority"): per interactive
 * request, the front end (tokenize), the wait in the engine's queue until
 * the scheduler takes it, and the time from then to its first token; per
 * engine step, its tokens against the budget (max_num_batched_tokens) and
 * whether it preempted — what priority scheduling can reorder.
 *
 *   node packages/bench/bench/tenants-steps.ts [--seed 1] [--scheduling-policy fcfs|priority] [--reserve 0.75] [--lower-slots 4]
 *
 * --reserve: the share of the replicas set apart for the interactive band
 * (docs/TENANTS.md, "Interactive reserve"); default the scenario's, 0: none;
 * --lower-slots: its shared replica's lower-band slots, default the scenario's, 0: none.
 *
 * Smoke: --seed 1
 */
import { PROFILES, type Sequence } from '@warmpath/sim';
import { runDes } from '../src/des/run.ts';
import { assignRouters } from '../src/l4.ts';
import { DEFAULT_MODEL } from '../src/scenarios.ts';
import { tenantsScenario } from '../src/tenant-goals.ts';
import {
  SCENARIO_LOWER_SLOTS,
  SCENARIO_RESERVE,
  TENANT_NAMES,
  tenantsFile,
  tenantsPlan,
  type TenantName,
} from '../src/tenants-plan.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    seed: { type: 'string', default: '1' },
    'scheduling-policy': { type: 'string' },
    reserve: { type: 'string' },
    'lower-slots': { type: 'string' },
  },
});
const seed = Number(values.seed);
const policy = values['scheduling-policy'];
if (policy !== undefined && policy !== 'fcfs' && policy !== 'priority')
  throw new Error(`--scheduling-policy: fcfs or priority, not ${policy}`);
const reserve = values.reserve === undefined ? SCENARIO_RESERVE : Number(values.reserve);
if (!(reserve >= 0 && reserve < 1)) throw new Error(`--reserve: a share ≥ 0 and < 1, not ${values.reserve}`);
const lowerSlots = values['lower-slots'] === undefined ? SCENARIO_LOWER_SLOTS : Number(values['lower-slots']);
if (!(Number.isInteger(lowerSlots) && lowerSlots >= 0))
  throw new Error(`--lower-slots: an integer ≥ 0, not ${values['lower-slots']}`);
const scenario = tenantsScenario(policy);
const { rate, duration } = scenario.defaults;
const budget = PROFILES[scenario.fleet.profile as keyof typeof PROFILES].maxNumBatchedTokens;
const INTERACTIVE: readonly string[] = ['chat-a', 'chat-b'];

const quantile = (xs: number[], p: number): number => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor(p * a.length))] ?? Number.NaN;
};
const spread = (xs: number[]) =>
  `p50 ${quantile(xs, 0.5).toFixed(1)}, p99 ${quantile(xs, 0.99).toFixed(1)}, max ${Math.max(...xs).toFixed(1)}`;

async function run(only: readonly TenantName[]): Promise<void> {
  const plan = assignRouters(tenantsPlan({ seed, rate, duration, model: DEFAULT_MODEL }, only), 4, 'random', seed);
  const front: number[] = [];
  const queued: number[] = [];
  const toFirst: number[] = [];
  const stepTokens: number[] = [];
  let full = 0;
  let preempting = 0;
  const seqs: Sequence[] = [];
  await runDes({
    scenario,
    plan,
    policy: 'warmpath',
    replicas: scenario.fleet.replicas,
    routers: 4,
    durationS: duration,
    seed,
    tenants: { file: JSON.stringify(tenantsFile({ rate, reserve, lowerSlots })), shared: true },
    onSubmitted: (seq, tag) => {
      if (INTERACTIVE.includes(tag ?? '')) seqs.push(seq);
    },
    onStep: (_replica, res) => {
      stepTokens.push(res.scheduledTokens);
      if (res.scheduledTokens >= budget) full++;
      if (res.preempted.length > 0) preempting++;
    },
  });
  for (const s of seqs) {
    if (!Number.isFinite(s.firstTokenMs)) continue;
    front.push(s.readyAtMs - s.arrivalMs);
    queued.push(s.admittedMs - s.readyAtMs);
    toFirst.push(s.firstTokenMs - s.admittedMs);
  }
  console.log(
    `${only.length === TENANT_NAMES.length ? 'every tenant' : 'interactive alone'} (seed ${seed}, ${scenario.fleet.schedulingPolicy ?? 'fcfs'} engines, reserve ${reserve}, lower slots ${lowerSlots}):`,
  );
  console.log(`  interactive requests: ${front.length}`);
  console.log(`  front end, ms: ${spread(front)}`);
  console.log(`  engine queue wait, ms: ${spread(queued)}`);
  console.log(`  taken → first token, ms: ${spread(toFirst)}`);
  console.log(
    `  engine steps: ${stepTokens.length}, tokens ${spread(stepTokens)}; at the budget of ${budget}: ${full}; preempting: ${preempting}`,
  );
}

await run(TENANT_NAMES);
await run(['chat-a', 'chat-b']);
