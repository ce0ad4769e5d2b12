/**
 * `warmpath bench`: one scenario, several policies side by side, in one run.
 * Prints a Markdown table; writes the JSON result and an HTML report on request.
 */
import { resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { BUILT_IN_POLICIES } from '@warmpath/router';
import { configFromProcess, ConfigError, keyValues, type CommandHelp, type Schema } from '@warmpath/shared/runtime';
import { assignRouters, L4_MODES, type L4Mode } from './l4.ts';
import { lastArrivalMs, type PlannedRequest } from './loadgen.ts';
import { runLive } from './live.ts';
import { DES_ONLY_POLICIES } from './des/feeds.ts';
import { DEFAULT_GOSSIP, validateGossip, type GossipModel } from './des/gossip.ts';
import { PEER_POLICIES } from './peers/index.ts';
import { DesPool, type DesJob } from './pool.ts';
import { computeReferences, type References } from './references.ts';
import { pdRolesOf } from './des/pd.ts';
import { markdownTable, writeHtml, writeJson, type BenchReport, type PolicyResult } from './report.ts';
import { CPU_KV_RATIO_SETTING, DEFAULT_MODEL, SCENARIOS, type Scenario } from './scenarios.ts';
import { benchTenants, TENANTS_SETTING } from './tenants-plan.ts';
import { KV_SHARING_SETTING, type KvSharing } from './tiers.ts';

/** The product's policies, the peers' emulations, warmpath over the engines' true state (DES only), and the oracle. */
export const ALL_POLICIES = [...BUILT_IN_POLICIES, ...PEER_POLICIES, 'warmpath-instant', 'oracle'] as const;
/** Accepted on request: the DES-only names, among them each peer behind Warmpath's agents (`<peer>@agents`; des/feeds.ts). */
const KNOWN_POLICIES: readonly string[] = [...new Set([...ALL_POLICIES, ...DES_ONLY_POLICIES])];

export const benchSchema = {
  scenario: { type: 'string', default: 'seed', choices: Object.keys(SCENARIOS), essential: true, doc: 'workload' },
  mode: {
    type: 'string',
    default: 'live',
    choices: ['live', 'des'],
    essential: true,
    doc: 'live: real processes; des: discrete-event simulation in virtual time',
  },
  policies: { type: 'list', default: ALL_POLICIES, essential: true, doc: 'policies to compare, side by side' },
  routers: {
    type: 'number',
    default: 2,
    min: 1,
    max: 200,
    integer: true,
    essential: true,
    doc: 'router instances (each policy instance learns on its own)',
  },
  replicas: {
    type: 'number',
    default: 0,
    min: 0,
    max: 5000,
    integer: true,
    essential: true,
    doc: "replicas (0 = the scenario's)",
  },
  pd: {
    type: 'string',
    default: '',
    doc: 'a disaggregated fleet P:D of P prefill and D decode replicas, instead of --replicas',
  },
  duration: {
    type: 'number',
    default: 0,
    min: 0,
    essential: true,
    doc: "simulated seconds of arrivals (0 = the scenario's)",
  },
  rate: {
    type: 'number',
    default: 0,
    min: 0,
    essential: true,
    doc: "arrival rate per simulated second (0 = the scenario's; trace: time compression)",
  },
  trace: { type: 'string', default: '', essential: true, doc: 'Mooncake-format JSONL trace, for --scenario trace' },
  timeScale: {
    type: 'number',
    default: 1,
    min: 0.1,
    max: 100,
    doc: 'live: simulated time runs this many times faster than wall time',
  },
  seed: {
    type: 'number',
    default: 1,
    integer: true,
    essential: true,
    doc: 'seed of the workload and of the DES random stream',
  },
  requestTimeoutS: {
    type: 'number',
    default: 30,
    min: 1,
    doc: 'live: a client gives up on a request after this many simulated seconds (an error)',
  },
  json: { type: 'string', default: '', essential: true, doc: 'write the JSON result here' },
  report: { type: 'string', default: '', essential: true, doc: 'write the HTML report here' },
  progress: { type: 'boolean', default: true, doc: 'live: show a progress bar on stderr' },
  l4: {
    type: 'string',
    default: 'random',
    choices: L4_MODES,
    doc: 'how clients reach routers: random (a seeded draw per request) or sticky (a session always reaches the same router)',
  },
  workers: {
    type: 'number',
    default: 2,
    min: 1,
    max: 64,
    integer: true,
    doc: 'des: policies simulated at once (worker threads, each under a heap limit)',
  },
  routerSet: {
    type: 'list',
    default: [],
    essential: true,
    doc: 'router config overrides as key=value (e.g. loadFactor=1.5), for every policy',
  },
  agentSet: {
    type: 'list',
    default: [],
    doc: 'agent config overrides as key=value (e.g. publishChangeTokens=0), for every replica',
  },
  gossipDelay: {
    type: 'string',
    default: DEFAULT_GOSSIP.delay,
    doc: 'des: gossip delay per message and router, ms: uniform:min:max, exp:base:mean, lognormal:p50:p99 or batch:window',
  },
  ...CPU_KV_RATIO_SETTING,
  modelGroups: {
    type: 'number',
    default: 0,
    min: 0,
    max: 10_000,
    integer: true,
    doc: 'des: split the replicas into this many model groups, replica i in g<i mod n> (0 = one group)',
  },
  routerModels: {
    type: 'list',
    default: [],
    doc: "des: router i's --models, as the i-th entry's groups joined by '+' (e.g. g0+g1); * or absent = every group",
  },
  ...KV_SHARING_SETTING,
  ...TENANTS_SETTING,
  gossipLoss: {
    type: 'number',
    default: 0,
    min: 0,
    max: 0.99,
    doc: 'des: probability a router misses a given state message (it pulls the digest snapshot on the gap)',
  },
} as const satisfies Schema;

export const BENCH_HELP: CommandHelp = {
  description:
    'One scenario with several routing policies side by side: live (real simulator processes, agents, routers and gossip, driven over HTTP) or in the discrete-event simulator (--mode des: the same engine model, agent core and router core in virtual time). Prints a Markdown table with the hit-rate ceiling and the TTFT floor; writes JSON and an HTML report on request.',
  examples: [
    'warmpath bench --scenario seed --mode live',
    'warmpath bench --scenario chat --mode des --routers 4 --l4 sticky --json out.json --report out.html',
    '# two policies on the shipped trace, with a router setting changed',
    'warmpath bench --scenario trace --mode des --policies warmpath,round-robin --router-set loadFactor=1.5',
    '# gossip that arrives late (median 500 ms, p99 1.5 s) and misses 5% of messages',
    'warmpath bench --scenario seed --mode des --routers 4 --policies warmpath \\',
    '  --gossip-delay lognormal:500:1500 --gossip-loss 0.05',
  ],
};

const isDesOnly = (p: string): boolean => (DES_ONLY_POLICIES as readonly string[]).includes(p);

type BenchConfig = ReturnType<typeof configFromProcess<typeof benchSchema>>;

/** The command line's settings; in live mode, the default policy list is every policy live mode can run. */
function benchConfig(argv: string[]) {
  const parsed = configFromProcess('bench', benchSchema, argv, BENCH_HELP);
  const liveDefault = parsed.mode === 'live' && parsed.policies.join() === ALL_POLICIES.join();
  return liveDefault ? { ...parsed, policies: parsed.policies.filter((p) => !isDesOnly(p)) } : parsed;
}

export async function run(argv: string[]): Promise<void> {
  const cfg = benchConfig(argv);
  const scenario = SCENARIOS[cfg.scenario]!;
  checkPolicies(cfg);
  const routerOverrides = keyValues('--router-set', cfg.routerSet);
  const agentOverrides = keyValues('--agent-set', cfg.agentSet);
  const roles = pdRolesOf(cfg.pd);
  const replicas = roles?.length ?? (cfg.replicas > 0 ? cfg.replicas : scenario.fleet.replicas);
  const duration = cfg.duration > 0 ? cfg.duration : scenario.defaults.duration;
  const rate = cfg.rate > 0 ? cfg.rate : scenario.defaults.rate;
  const trace = cfg.trace === '' ? undefined : resolve(cfg.trace);
  const l4 = cfg.l4 as L4Mode;
  const gossip = gossipOf(cfg);
  const tenants = benchTenants(cfg.tenants, scenario, rate);
  const plan = assignRouters(
    scenario.build({ seed: cfg.seed, rate, duration, model: DEFAULT_MODEL, trace }),
    cfg.routers,
    l4,
    cfg.seed,
  );
  const config = {
    ...(cfg.routerSet.length > 0 ? { router: routerOverrides } : {}),
    ...(cfg.agentSet.length > 0 ? { agent: agentOverrides } : {}),
    replicas,
    ...(roles !== undefined ? { pd: cfg.pd } : {}),
    routers: cfg.routers,
    l4,
    duration,
    rate,
    seed: cfg.seed,
    timeScale: cfg.timeScale,
    profile: scenario.fleet.profile,
    cpuKvRatio: cfg.cpuKvRatio,
    ...(cfg.kvSharing !== 'off' ? { kvSharing: cfg.kvSharing } : {}),
    ...(tenants !== undefined ? { tenants: cfg.tenants === '' ? `the ${scenario.name} scenario's` : cfg.tenants } : {}),
    requests: plan.length,
    ...(cfg.trace !== '' ? { trace: cfg.trace } : {}),
    ...(cfg.mode === 'des' ? { gossip } : {}),
  };
  console.error(
    `warmpath bench: scenario ${scenario.name} (${scenario.summary}), ${cfg.mode} mode, ${plan.length} requests, ${replicas} replicas, ${cfg.routers} routers (${l4} L4), policies: ${cfg.policies.join(', ')}`,
  );
  // DES: the main thread describes the plan once, streaming it to the workers as they simulate, then
  // computes the references while they run; live: the references first (nothing else may take the CPU).
  const report: Omit<BenchReport, 'references'> & { references?: References } = {
    scenario: scenario.name,
    mode: cfg.mode as 'live' | 'des',
    config,
    results: [],
    failures: [],
  };
  const done = (): BenchReport => ({ ...report, references: report.references! });
  // Each policy's result is written as soon as it finishes (never before the references: they are computed on
  // this thread before it reads any result); a failed policy is reported, never fatal.
  const save = (): void => (cfg.json !== '' ? writeJson(cfg.json, done()) : undefined);
  const settle = settler(report, save);
  const fleet = { ...scenario, fleet: { ...scenario.fleet, cpuKvRatio: cfg.cpuKvRatio } }; // as the policies run it
  const common = { replicas, routerOverrides, agentOverrides, plan, tenants };
  if (cfg.mode === 'des') {
    const running = runDesPolicies(cfg, { ...common, trace, l4, gossip }, settle);
    report.references = computeReferences(fleet, plan, replicas);
    await running;
  } else {
    report.references = computeReferences(fleet, plan, replicas);
    await runLivePolicies(cfg, { ...common, scenario, duration }, settle);
  }
  // Table rows in the order the policies were asked for.
  report.results.sort((a, b) => cfg.policies.indexOf(a.policy) - cfg.policies.indexOf(b.policy));
  console.log(markdownTable(done()));
  save();
  if (cfg.report !== '') writeHtml(cfg.report, [done()]);
}

/** Every policy asked for is known, and runs in the mode asked for; else a ConfigError naming them. */
function checkPolicies(cfg: BenchConfig): void {
  for (const p of cfg.policies)
    if (!KNOWN_POLICIES.includes(p))
      throw new ConfigError(`command line: unknown policy "${p}"; known: ${KNOWN_POLICIES.join(', ')}`);
  const desOnly = cfg.policies.filter(isDesOnly);
  if (cfg.mode === 'live' && desOnly.length > 0)
    throw new ConfigError(
      `command line: DES-only policies ${desOnly.join(', ')} run only in --mode des (they need the engines' true state or the simulator's feeds); drop them from --policies in live mode`,
    );
}

/** The DES gossip model from the flags; a bad spec is a ConfigError naming the flag. */
function gossipOf(cfg: BenchConfig): GossipModel {
  try {
    return validateGossip({ delay: cfg.gossipDelay, loss: cfg.gossipLoss });
  } catch (err) {
    throw new ConfigError(`command line: --gossip-delay/--gossip-loss: ${(err as Error).message}`);
  }
}

type Settle = (policy: string, r: PolicyResult | Error, seconds: number) => void;
/** What both modes run: the fleet's size, the settings given, the plan, the tenants file's text. */
interface Common {
  replicas: number;
  routerOverrides: Record<string, string>;
  agentOverrides: Record<string, string>;
  plan: PlannedRequest[];
  tenants: string | undefined;
}

/** Each policy's outcome into the report, on stderr, then saved. */
function settler(report: Pick<BenchReport, 'results' | 'failures'>, save: () => void): Settle {
  return (policy, r, seconds) => {
    if (r instanceof Error) {
      report.failures!.push({ policy, error: r.message });
      console.error(`  ${policy}: FAILED after ${seconds.toFixed(0)} s: ${r.message.split('\n')[0]}`);
    } else {
      report.results.push(r);
      console.error(
        `  ${policy}: ${r.completed}/${r.requests} ok, TTFT p50 ${r.ttft_ms.p50} ms, hit rate ${(r.cache_hit_rate * 100).toFixed(1)}% (${seconds.toFixed(0)} s)`,
      );
    }
    save();
  };
}

/** DES: every policy on the worker pool (a policy that runs out of memory or throws is reported as failed). */
async function runDesPolicies(
  cfg: BenchConfig,
  o: Common & { trace: string | undefined; l4: L4Mode; gossip: GossipModel },
  settle: Settle,
): Promise<void> {
  const pool = new DesPool(cfg.workers);
  const job = (policy: string): DesJob => ({
    scenario: cfg.scenario,
    seed: cfg.seed,
    rate: cfg.rate,
    duration: cfg.duration,
    trace: o.trace,
    replicas: o.replicas,
    routers: cfg.routers,
    l4: o.l4,
    policy,
    routerOverrides: o.routerOverrides,
    agentOverrides: o.agentOverrides,
    gossip: o.gossip,
    ...(cfg.cpuKvRatio > 0 ? { cpuKvRatio: cfg.cpuKvRatio } : {}),
    ...(cfg.pd !== '' ? { pd: cfg.pd } : {}),
    ...(cfg.modelGroups > 0
      ? { groups: { count: cfg.modelGroups, routers: cfg.routerModels.map((m) => m.split('+')) } }
      : {}),
    ...(cfg.kvSharing !== 'off' ? { kvSharing: cfg.kvSharing as KvSharing } : {}),
    ...(o.tenants !== undefined ? { tenants: o.tenants } : {}),
  });
  // Submits every policy, then describes the plan once here while the workers start (the references below reuse the descriptions).
  const { outcomes } = pool.runShared(cfg.policies.map(job), o.plan);
  await Promise.all(
    outcomes.map((out, i) =>
      out.then((r) => settle(cfg.policies[i]!, r.ok ? r.result : new Error(r.error), r.seconds)),
    ),
  );
  await pool.close();
}

/** Live: one fresh fleet per policy, one policy at a time (they would share the 2 cores otherwise). */
async function runLivePolicies(
  cfg: BenchConfig,
  o: Common & { scenario: Scenario; duration: number },
  settle: Settle,
): Promise<void> {
  const spanS = Math.max(o.duration, lastArrivalMs(o.plan) / 1000);
  const bars =
    cfg.progress && process.stderr.isTTY
      ? new cliProgress.MultiBar(
          {
            format: ' {policy} [{bar}] {value}/{total} {duration_formatted}',
            clearOnComplete: false,
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  for (const policy of cfg.policies) {
    const bar = bars?.create(o.plan.length, 0, { policy: policy.padEnd(20) });
    const started = Date.now();
    try {
      const r = await runLive({
        scenario: o.scenario,
        plan: o.plan,
        policy,
        replicas: o.replicas,
        routers: cfg.routers,
        timeScale: cfg.timeScale,
        durationS: spanS,
        onProgress: (done) => bar?.update(done),
        routerOverrides: o.routerOverrides,
        agentOverrides: o.agentOverrides,
        requestTimeoutMs: cfg.requestTimeoutS * 1000,
        cpuKvRatio: cfg.cpuKvRatio,
        ...(cfg.kvSharing !== 'off' ? { kvSharing: cfg.kvSharing as KvSharing } : {}),
        ...(cfg.pd !== '' ? { roles: pdRolesOf(cfg.pd)! } : {}),
        ...(o.tenants !== undefined ? { tenants: o.tenants } : {}),
      });
      bar?.update(o.plan.length);
      settle(policy, r, (Date.now() - started) / 1000);
    } catch (err) {
      settle(policy, err instanceof Error ? err : new Error(String(err)), (Date.now() - started) / 1000);
    }
  }
  bars?.stop();
}
