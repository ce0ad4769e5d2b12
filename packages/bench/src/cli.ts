/**
 * `warmpath bench`: one scenario, several policies side by side, in one run.
 * Prints a Markdown table; writes the JSON result and an HTML report on request.
 */
import { resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { POLICY_NAMES } from '@warmpath/router';
import { configFromProcess, ConfigError, type Schema } from '@warmpath/shared/runtime';
import { runDes } from './des/run.ts';
import { lastArrivalMs } from './loadgen.ts';
import { runLive } from './live.ts';
import { markdownTable, writeHtml, writeJson, type BenchReport, type PolicyResult } from './report.ts';
import { DEFAULT_MODEL, SCENARIOS } from './scenarios.ts';

/** Every router policy, plus the oracle (which routes around the routers). */
export const ALL_POLICIES = [...POLICY_NAMES, 'oracle'] as const;

export const benchSchema = {
  scenario: { type: 'string', default: 'seed', choices: Object.keys(SCENARIOS), doc: 'workload' },
  mode: { type: 'string', default: 'live', choices: ['live', 'des'], doc: 'live: real processes; des: discrete-event simulation in virtual time' },
  policies: { type: 'list', default: ALL_POLICIES, doc: 'policies to compare, side by side' },
  routers: { type: 'number', default: 2, min: 1, max: 200, integer: true, doc: 'router instances (each policy instance learns on its own)' },
  replicas: { type: 'number', default: 0, min: 0, max: 5000, integer: true, doc: "replicas (0 = the scenario's)" },
  duration: { type: 'number', default: 0, min: 0, doc: "simulated seconds of arrivals (0 = the scenario's)" },
  rate: { type: 'number', default: 0, min: 0, doc: "arrival rate per simulated second (0 = the scenario's; trace: time compression)" },
  trace: { type: 'string', default: '', doc: 'Mooncake-format JSONL trace, for --scenario trace' },
  timeScale: { type: 'number', default: 1, min: 0.1, max: 100, doc: 'live: simulated time runs this many times faster than wall time (2 cores hold the seed scenario at 1)' },
  seed: { type: 'number', default: 1, integer: true, doc: 'seed of the workload and of the DES random stream' },
  requestTimeoutS: { type: 'number', default: 30, min: 1, doc: 'live: a client gives up on a request after this many simulated seconds (an error)' },
  json: { type: 'string', default: '', doc: 'write the JSON result here' },
  report: { type: 'string', default: '', doc: 'write the HTML report here' },
  progress: { type: 'boolean', default: true, doc: 'show a progress bar on stderr' },
  routerSet: { type: 'list', default: [], doc: 'router config overrides as key=value (e.g. loadFactor=1.5), for every policy' },
} as const satisfies Schema;

export async function run(argv: string[]): Promise<void> {
  const cfg = configFromProcess('bench', benchSchema, argv);
  const scenario = SCENARIOS[cfg.scenario]!;
  for (const p of cfg.policies) if (!(ALL_POLICIES as readonly string[]).includes(p)) throw new ConfigError(`command line: unknown policy "${p}"; known: ${ALL_POLICIES.join(', ')}`);
  const routerOverrides: Record<string, string> = {};
  for (const kv of cfg.routerSet) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new ConfigError(`command line: --router-set expects key=value (got "${kv}")`);
    routerOverrides[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const replicas = cfg.replicas > 0 ? cfg.replicas : scenario.fleet.replicas;
  const duration = cfg.duration > 0 ? cfg.duration : scenario.defaults.duration;
  const rate = cfg.rate > 0 ? cfg.rate : scenario.defaults.rate;
  const plan = scenario.build({ seed: cfg.seed, rate, duration, model: DEFAULT_MODEL, trace: cfg.trace === '' ? undefined : resolve(cfg.trace) });
  const spanS = Math.max(duration, lastArrivalMs(plan) / 1000);
  const config = { ...(cfg.routerSet.length > 0 ? { router: routerOverrides } : {}), replicas, routers: cfg.routers, duration, rate, seed: cfg.seed, timeScale: cfg.timeScale, profile: scenario.fleet.profile, requests: plan.length, ...(cfg.trace !== '' ? { trace: cfg.trace } : {}) };
  console.error(`warmpath bench: scenario ${scenario.name} (${scenario.summary}), ${cfg.mode} mode, ${plan.length} requests, ${replicas} replicas, ${cfg.routers} routers, policies: ${cfg.policies.join(', ')}`);

  const bars = cfg.progress && process.stderr.isTTY ? new cliProgress.MultiBar({ format: ' {policy} [{bar}] {value}/{total} {duration_formatted}', clearOnComplete: false, hideCursor: true }, cliProgress.Presets.shades_classic) : undefined;
  const results: PolicyResult[] = [];
  for (const policy of cfg.policies) {
    const bar = bars?.create(plan.length, 0, { policy: policy.padEnd(20) });
    const onProgress = (done: number) => bar?.update(done);
    const started = Date.now();
    const r =
      cfg.mode === 'live'
        ? await runLive({ scenario, plan, policy, replicas, routers: cfg.routers, timeScale: cfg.timeScale, durationS: spanS, onProgress, routerOverrides, requestTimeoutMs: cfg.requestTimeoutS * 1000 })
        : await runDes({ scenario, plan, policy, replicas, routers: cfg.routers, durationS: spanS, onProgress, routerOverrides, seed: cfg.seed });
    bar?.update(plan.length);
    if (bars === undefined) console.error(`  ${policy}: ${r.completed}/${r.requests} ok, TTFT p50 ${r.ttft_ms.p50} ms, hit rate ${(r.cache_hit_rate * 100).toFixed(1)}% (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    results.push(r);
  }
  bars?.stop();
  const report: BenchReport = { scenario: scenario.name, mode: cfg.mode as 'live' | 'des', config, results };
  console.log(markdownTable(report));
  if (cfg.json !== '') writeJson(cfg.json, report);
  if (cfg.report !== '') writeHtml(cfg.report, [report]);
}
