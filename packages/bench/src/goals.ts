/**
 * The benchmark's goals (issue: "reaching the goal"), checked against result
 * reports: one row per goal and scenario with the measured value, the target
 * and pass/fail. `warmpath goals` runs every goal scenario in DES mode (fast)
 * and prints the table; the pure checker also reads live reports.
 *
 * Goals, on seed, chat, fanout, lora and the trace:
 *  - warmpath's cache hit rate ≥ 95% of the oracle's;
 *  - warmpath's TTFT p50 ≤ 1/3 of round-robin's (over every request sent:
 *    an unanswered request counts as the slowest); TTFT p99 below every peer's;
 *  - seed: zero preemptions, every request answered;
 *  - 4 routers: hit rate within 2% (relative) of 1 router;
 *  - lora: fewer adapter loads than every peer.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { configFromProcess, type Schema } from '@warmpath/shared/runtime';
import { ALL_POLICIES } from './cli.ts';
import { runDes } from './des/run.ts';
import { lastArrivalMs } from './loadgen.ts';
import { markdownTable, type BenchReport, type PolicyResult } from './report.ts';
import { DEFAULT_MODEL, SCENARIOS } from './scenarios.ts';

/** The peers' emulations (docs/PEERS.md): warmpath's p99 must beat each of them. */
export const PEER_POLICIES = ['sglang-cache-aware', 'llm-d-approx', 'llm-d-precise', 'dynamo-kv', 'kubeai-prefix-hash'] as const;

const SHORT: Record<string, string> = { 'sglang-cache-aware': 'sglang', 'llm-d-approx': 'llm-d-approx', 'llm-d-precise': 'llm-d-precise', 'dynamo-kv': 'dynamo', 'kubeai-prefix-hash': 'kubeai' };

export interface GoalRow {
  scenario: string;
  goal: string;
  measured: string;
  target: string;
  pass: boolean;
}

const f1 = (x: number) => (Math.round(x * 10) / 10).toString();
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** TTFT p50 over every request sent (see `p50OverAllRequests`); answered-only when a report lacks it. */
export function p50AllRequests(r: PolicyResult): number {
  const all = r.detail?.ttftP50AllRequests;
  if (all === undefined) return r.ttft_ms.p50;
  return all ?? Number.POSITIVE_INFINITY;
}

function row(report: BenchReport, policy: string): PolicyResult | undefined {
  return report.results.find((r) => r.policy === policy);
}

/** The goals one report (all policies, one router count) can answer. */
export function checkReport(report: BenchReport): GoalRow[] {
  const s = report.scenario;
  const out: GoalRow[] = [];
  const w = row(report, 'warmpath');
  if (w === undefined) return out;
  const oracle = row(report, 'oracle');
  if (oracle !== undefined) {
    const ratio = oracle.cache_hit_rate > 0 ? w.cache_hit_rate / oracle.cache_hit_rate : 1;
    out.push({ scenario: s, goal: 'hit rate ≥ 95% of oracle', measured: `${pct(w.cache_hit_rate)} vs ${pct(oracle.cache_hit_rate)} (${pct(ratio)})`, target: '≥ 95%', pass: ratio >= 0.95 });
  }
  const rr = row(report, 'round-robin');
  if (rr !== undefined) {
    const wp = p50AllRequests(w);
    const rp = p50AllRequests(rr);
    const ratio = wp / rp;
    const shed = rr.errors > 0 ? `; round-robin answered ${rr.completed}/${rr.requests}, p50 of those ${f1(rr.ttft_ms.p50)}` : '';
    out.push({ scenario: s, goal: 'TTFT p50 ≤ 1/3 round-robin', measured: `${f1(wp)} vs ${Number.isFinite(rp) ? f1(rp) : '∞'} ms (${ratio.toFixed(2)}×${shed})`, target: '≤ 0.33×', pass: ratio <= 1 / 3 });
  }
  const peers = PEER_POLICIES.map((p) => row(report, p)).filter((r): r is PolicyResult => r !== undefined);
  if (peers.length > 0) {
    const best = peers.reduce((a, b) => (b.ttft_ms.p99 < a.ttft_ms.p99 ? b : a));
    out.push({ scenario: s, goal: 'TTFT p99 below every peer', measured: `${f1(w.ttft_ms.p99)} vs ${best.policy} ${f1(best.ttft_ms.p99)} ms`, target: '<', pass: w.ttft_ms.p99 < best.ttft_ms.p99 });
  }
  if (s === 'seed') {
    out.push({ scenario: s, goal: 'no preemptions, all answered', measured: `${w.preemptions} preemptions, ${w.completed}/${w.requests} answered`, target: '0, all', pass: w.preemptions === 0 && w.completed === w.requests });
  }
  if (s === 'lora' && peers.length > 0) {
    const fewest = peers.reduce((a, b) => (b.adapter_loads < a.adapter_loads ? b : a));
    out.push({ scenario: s, goal: 'fewer adapter loads than every peer', measured: `${w.adapter_loads} vs ${fewest.policy} ${fewest.adapter_loads}`, target: '<', pass: w.adapter_loads < fewest.adapter_loads });
  }
  return out;
}

/** 4 routers against 1: warmpath's hit rate within 2% (relative); the peers' losses beside it. */
export function checkRouters(one: BenchReport, four: BenchReport): GoalRow[] {
  const w1 = row(one, 'warmpath');
  const w4 = row(four, 'warmpath');
  if (w1 === undefined || w4 === undefined) return [];
  const change = (a: PolicyResult, b: PolicyResult) => (b.cache_hit_rate - a.cache_hit_rate) / Math.max(1e-9, a.cache_hit_rate);
  const peers = PEER_POLICIES.flatMap((p) => {
    const a = row(one, p);
    const b = row(four, p);
    return a !== undefined && b !== undefined ? [`${SHORT[p]} ${pct(a.cache_hit_rate)}→${pct(b.cache_hit_rate)}`] : [];
  });
  const d = change(w1, w4);
  return [
    {
      scenario: one.scenario,
      goal: '4 routers: hit within 2% of 1',
      measured: `${pct(w1.cache_hit_rate)}→${pct(w4.cache_hit_rate)} (${d >= 0 ? '+' : ''}${(d * 100).toFixed(1)}%)${peers.length > 0 ? `; ${peers.join(', ')}` : ''}`,
      target: '|Δ| ≤ 2%',
      pass: Math.abs(d) <= 0.02,
    },
  ];
}

export function goalsTable(rows: readonly GoalRow[]): string {
  const lines = ['| scenario | goal | measured | target | |', '|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.scenario} | ${r.goal} | ${r.measured} | ${r.target} | ${r.pass ? '✓' : '✗'} |`);
  return lines.join('\n');
}

export const goalsSchema = {
  scenarios: { type: 'list', default: ['seed', 'chat', 'fanout', 'lora', 'trace'], doc: 'scenarios to check' },
  trace: { type: 'string', default: '', doc: 'Mooncake-format trace for the trace scenario ("" = the one shipped in packages/bench/traces/)' },
  routersCheck: { type: 'list', default: ['seed', 'chat', 'fanout', 'lora', 'trace'], doc: 'scenarios on which to compare 1 and 4 routers' },
  seeds: { type: 'list', default: ['1'], doc: 'seeds of the workload and the DES random stream (comma-separated): each seed is a full run; several print a summary across seeds' },
  tables: { type: 'boolean', default: false, doc: 'also print each scenario’s full policy table' },
  json: { type: 'string', default: '', doc: 'write every report and the goal rows here' },
} as const satisfies Schema;

async function desReport(scenarioName: string, policies: readonly string[], routers: number, seed: number, trace: string | undefined): Promise<BenchReport> {
  const scenario = SCENARIOS[scenarioName]!;
  const plan = scenario.build({ seed, rate: scenario.defaults.rate, duration: scenario.defaults.duration, model: DEFAULT_MODEL, trace });
  const spanS = Math.max(scenario.defaults.duration, lastArrivalMs(plan) / 1000);
  const results: PolicyResult[] = [];
  for (const policy of policies) {
    if (policy === 'oracle' && routers !== 2) continue;
    results.push(await runDes({ scenario, plan, policy, replicas: scenario.fleet.replicas, routers, durationS: spanS, seed }));
  }
  return { scenario: scenarioName, mode: 'des', config: { replicas: scenario.fleet.replicas, routers, rate: scenario.defaults.rate, duration: scenario.defaults.duration, seed, requests: plan.length }, results };
}

/** Every goal for one workload seed: rows and the reports they came from. */
async function checkSeed(scenarios: readonly string[], routersCheck: readonly string[], seed: number, trace: string | undefined, tables: boolean): Promise<{ rows: GoalRow[]; reports: BenchReport[] }> {
  const rows: GoalRow[] = [];
  const reports: BenchReport[] = [];
  for (const name of scenarios) {
    // A scenario that cannot run fails the whole goals run: no goal is skipped silently.
    if (name === 'trace' && trace !== undefined && !existsSync(trace)) throw new Error(`goals: no trace file at ${trace}`);
    const t = name === 'trace' ? trace : undefined;
    const started = Date.now();
    const two = await desReport(name, ALL_POLICIES, 2, seed, t);
    reports.push(two);
    rows.push(...checkReport(two));
    if (tables) console.log(`${markdownTable(two)}\n`);
    if (routersCheck.includes(name)) {
      const pols = ['warmpath', ...PEER_POLICIES];
      const one = await desReport(name, pols, 1, seed, t);
      const four = await desReport(name, pols, 4, seed, t);
      reports.push(one, four);
      rows.push(...checkRouters(one, four));
    }
    console.error(`goals: seed ${seed}: ${name} checked (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  }
  return { rows, reports };
}

/** Across seeds: each goal with the seeds that met it. */
export function seedsSummary(bySeed: ReadonlyArray<{ seed: number; rows: readonly GoalRow[] }>): string {
  const lines = ['| scenario | goal | seeds met |', '|---|---|---|'];
  const first = bySeed[0]?.rows ?? [];
  for (const [k, r] of first.entries()) {
    const missed = bySeed.filter((b) => b.rows[k]?.pass !== true).map((b) => `${b.seed} (${b.rows[k]?.measured ?? 'not run'})`);
    lines.push(`| ${r.scenario} | ${r.goal} | ${bySeed.length - missed.length}/${bySeed.length}${missed.length > 0 ? `; missed on seed ${missed.join(', ')}` : ''} |`);
  }
  return lines.join('\n');
}

/** `warmpath goals`: every goal scenario in DES mode at its defaults; prints the goal table. */
export async function run(argv: string[]): Promise<void> {
  const cfg = configFromProcess('goals', goalsSchema, argv);
  const trace = cfg.trace === '' ? undefined : resolve(cfg.trace);
  for (const name of cfg.scenarios) if (SCENARIOS[name] === undefined) throw new Error(`unknown scenario "${name}"`);
  const seeds = cfg.seeds.map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n)) throw new Error(`--seeds: "${x}" is not an integer`);
    return n;
  });
  const bySeed: Array<{ seed: number; rows: GoalRow[]; reports: BenchReport[] }> = [];
  for (const seed of seeds) {
    const { rows, reports } = await checkSeed(cfg.scenarios, cfg.routersCheck, seed, trace, cfg.tables);
    bySeed.push({ seed, rows, reports });
    if (seeds.length > 1) console.log(`### seed ${seed}\n`);
    console.log(goalsTable(rows));
    const failed = rows.filter((r) => !r.pass).length;
    console.log(`\n${rows.length - failed}/${rows.length} goals met (DES, 2 routers unless stated; seed ${seed}).\n`);
  }
  if (seeds.length > 1) {
    console.log(`### across seeds\n\n${seedsSummary(bySeed)}\n`);
    console.log(bySeed.map((b) => `seed ${b.seed}: ${b.rows.filter((r) => r.pass).length}/${b.rows.length}`).join('; '));
  }
  if (cfg.json !== '') writeFileSync(cfg.json, `${JSON.stringify(seeds.length === 1 ? bySeed[0] : { seeds: bySeed }, null, 1)}\n`);
}
