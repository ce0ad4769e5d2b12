/**
 * Placement quality over a matrix of DES runs: warmpath's TTFT p50 / p99
 * (over every request sent) and cache hit rate for each (scenario, seed,
 * routers), on the worker pool. DES runs are deterministic, so unchanged
 * behaviour shows as identical numbers: `--save` writes the rows, and
 * `--compare` prints a saved run beside this one (before → after).
 *
 *   node packages/bench/bench/quality.ts [--scenarios seed,chat,trace,longctx] [--seeds 1,2,3]
 *     [--routers 1,4] [--l4 random,sticky] [--replicas N] [--rate R] [--duration S] [--policy warmpath]
 *     [--agent-set k=v …] [--router-set k=v …] [--save rows.json] [--compare rows.json]
 *     [--gossip-delays uniform:5:20,lognormal:500:1500] [--gossip-losses 0,0.05]
 *     [--cpu-kv-ratio 4] [--kv-sharing peer]
 *
 * Smoke: --scenarios seed --seeds 1 --routers 1,2 --duration 2 --cpu-kv-ratio 4 --kv-sharing peer
 *
 * With gossip delays or losses, every (delay, loss) pair is one more axis of
 * the matrix (the DES gossip model, packages/bench/src/des/gossip.ts); so
 * is each L4 mode (how clients reach the routers, packages/bench/src/l4.ts;
 * default random).
 * With --compare, a summary per scenario, router count and L4 mode follows the
 * table: geometric-mean ratios of p50 and p99, runs faster and slower at
 * p99, and the mean change in hit rate. When the matrix holds 1 router, the
 * goal table's router rows follow on these seeds: each N-router run against
 * 1 router (hit ≥ 0.95×, TTFT ≤ 1.05×), beside the saved run's.
 * `--cpu-kv-ratio` and `--kv-sharing` give every run the tiered fleet of
 * `warmpath goals --tiers` (docs/TIERS.md).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { TARGETS } from '../src/goal-rows.ts';
import { p50AllRequests, p99AllRequests } from '../src/goals.ts';
import { DEFAULT_GOSSIP, validateGossip } from '../src/des/gossip.ts';
import { L4_MODES, type L4Mode } from '../src/l4.ts';
import { DesPool, workloadKey, type DesJob, type JobOutcome } from '../src/pool.ts';
import type { QualityRow } from '../src/quality-row.ts';
import { KV_SHARING, type KvSharing } from '../src/tiers.ts';
import { keyValues, scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    scenarios: { type: 'string', default: 'seed,chat,trace,longctx' },
    seeds: { type: 'string', default: '1,2,3' },
    routers: { type: 'string', default: '1,4' },
    l4: { type: 'string', default: 'random' },
    replicas: { type: 'string', default: '0' },
    rate: { type: 'string', default: '0' },
    duration: { type: 'string', default: '0' },
    policy: { type: 'string', default: 'warmpath' },
    'agent-set': { type: 'string', multiple: true, default: [] },
    'router-set': { type: 'string', multiple: true, default: [] },
    save: { type: 'string', default: '' },
    compare: { type: 'string', default: '' },
    workers: { type: 'string', default: '2' },
    'gossip-delays': { type: 'string', default: DEFAULT_GOSSIP.delay },
    'gossip-losses': { type: 'string', default: String(DEFAULT_GOSSIP.loss) },
    'cpu-kv-ratio': { type: 'string', default: '0' },
    'kv-sharing': { type: 'string', default: 'off' },
  },
});

const list = (s: string): string[] => s.split(',').filter((x) => x !== '');
const key = (r: Pick<QualityRow, 'scenario' | 'seed' | 'routers' | 'l4' | 'delay' | 'loss'>): string =>
  `${r.scenario}/${r.seed}/${r.routers}/${r.l4 ?? 'random'}/${r.delay}/${r.loss}`;
const cell = (r: QualityRow | undefined): string =>
  r === undefined ? '—' : `${r.p50.toFixed(0)} / ${r.p99.toFixed(0)} / ${(r.hit * 100).toFixed(1)}%`;
const cost = (r: QualityRow): string =>
  `${r.completed}/${r.requests} | ${r.pulls} | ${r.viewMiB.toFixed(1)} | ${r.messagesPerReplicaS ?? '—'} / ${r.bytesPerReplicaS ?? '—'}`;

const l4Modes = list(values.l4).map((m): L4Mode => {
  if (!(L4_MODES as readonly string[]).includes(m))
    throw new Error(`--l4: "${m}" is not one of ${L4_MODES.join(', ')}`);
  return m as L4Mode;
});
const agentOverrides = keyValues('--agent-set', values['agent-set']);
const routerOverrides = keyValues('--router-set', values['router-set']);
if (!(KV_SHARING as readonly string[]).includes(values['kv-sharing']))
  throw new Error(`--kv-sharing: "${values['kv-sharing']}" is not one of ${KV_SHARING.join(', ')}`);
const kvSharing = values['kv-sharing'] as KvSharing;
const cpuKvRatio = Number(values['cpu-kv-ratio']);
if (!(cpuKvRatio >= 0)) throw new Error(`--cpu-kv-ratio: "${values['cpu-kv-ratio']}" is not a number ≥ 0`);
const pool = new DesPool(Number(values.workers));
const jobs: DesJob[] = [];
for (const scenario of list(values.scenarios))
  for (const seed of list(values.seeds).map(Number))
    for (const routers of list(values.routers).map(Number))
      for (const l4 of l4Modes)
        for (const delay of list(values['gossip-delays']))
          for (const loss of list(values['gossip-losses']).map(Number)) {
            const gossip = validateGossip({ delay, loss });
            jobs.push({
              scenario,
              seed,
              rate: Number(values.rate),
              duration: Number(values.duration),
              replicas: Number(values.replicas),
              routers,
              l4,
              policy: values.policy,
              agentOverrides,
              routerOverrides,
              gossip,
              ...(cpuKvRatio > 0 ? { cpuKvRatio } : {}),
              ...(kvSharing !== 'off' ? { kvSharing } : {}),
            });
          }

const started = Date.now();
// Jobs on one workload share its descriptions, made once on this thread (DesPool.runShared).
const byWorkload = Map.groupBy(jobs, workloadKey);
const outcomes = new Map<DesJob, Promise<JobOutcome>>();
for (const group of byWorkload.values()) pool.runShared(group).outcomes.forEach((o, i) => outcomes.set(group[i]!, o));
const rows = await Promise.all(
  jobs.map(async (job): Promise<QualityRow | string> => {
    const out = await outcomes.get(job)!;
    const id = {
      scenario: job.scenario,
      seed: job.seed,
      routers: job.routers,
      l4: job.l4,
      delay: job.gossip!.delay,
      loss: job.gossip!.loss,
    };
    if (!out.ok) return `${key(id)}: failed: ${out.error.split('\n')[0]}`;
    const r = out.result;
    const row: QualityRow = {
      ...id,
      p50: p50AllRequests(r),
      p99: p99AllRequests(r),
      hit: r.cache_hit_rate,
      completed: r.completed,
      requests: r.requests,
      pulls: r.detail?.gossip?.pulls ?? 0,
      viewMiB: (r.detail?.gossip?.viewBytes ?? 0) / 2 ** 20,
      messagesPerReplicaS: r.detail?.gossip?.messagesPerReplicaS ?? 0,
      bytesPerReplicaS: r.detail?.gossip?.bytesPerReplicaS ?? 0,
      hashesPerMessage: r.detail?.gossip?.hashesPerMessage ?? 0,
      fullShare: r.detail?.gossip?.fullShare ?? 0,
    };
    console.error(`  ${key(id)}: ${cell(row)} | ${cost(row)} (${out.seconds.toFixed(0)} s)`);
    return row;
  }),
);
await pool.close();
const ok = rows.filter((r): r is QualityRow => typeof r !== 'string');
for (const f of rows) if (typeof f === 'string') console.log(f);
if (values.save !== '') writeFileSync(values.save, JSON.stringify(ok, null, 1));
const before =
  values.compare === ''
    ? undefined
    : new Map(
        (JSON.parse(readFileSync(values.compare, 'utf8')) as QualityRow[]).map((r) => [
          key({ ...r, delay: r.delay ?? DEFAULT_GOSSIP.delay, loss: r.loss ?? DEFAULT_GOSSIP.loss }),
          r,
        ]),
      );
console.log(
  `TTFT p50 / p99 (ms, every request) / hit rate; ${values.policy}; ${((Date.now() - started) / 1000).toFixed(0)} s on a shared machine`,
);
console.log(
  before === undefined
    ? '| scenario | seed | routers | L4 | gossip delay | loss | result | answered | pulls | one view, MiB | messages / bytes per agent-s |\n|---|--:|--:|---|---|--:|---|--:|--:|--:|--:|'
    : '| scenario | seed | routers | L4 | gossip delay | loss | before | after | same |\n|---|--:|--:|---|---|--:|---|---|---|',
);
for (const r of ok) {
  const b = before?.get(key(r));
  const same = b !== undefined && b.p50 === r.p50 && b.p99 === r.p99 && b.hit === r.hit ? 'yes' : 'no';
  const id = `| ${r.scenario} | ${r.seed} | ${r.routers} | ${r.l4 ?? 'random'} | ${r.delay} | ${r.loss} |`;
  console.log(before === undefined ? `${id} ${cell(r)} | ${cost(r)} |` : `${id} ${cell(b)} | ${cell(r)} | ${same} |`);
}
if (before !== undefined) printSummary(ok, before);
printAgainstOne(ok, before);

/**
 * One line per scenario and router count, over its seeds (and gossip
 * settings): the geometric mean of after ÷ before for TTFT p50 and p99, how
 * many runs got faster / slower at p99, and the mean change in hit rate.
 * A change is judged on every line, not on the row it was made for.
 */
function printSummary(after: QualityRow[], beforeRows: Map<string, QualityRow>): void {
  const groups = Map.groupBy(
    after.filter((r) => beforeRows.has(key(r))),
    (r) => `${r.scenario} | ${r.routers} | ${r.l4 ?? 'random'}`,
  );
  const geo = (xs: number[]): number => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
  console.log('\nAfter ÷ before, per scenario, router count and L4 mode (geometric means over the seeds):');
  console.log(
    '| scenario | routers | L4 | runs | p50 | p99 | p99 faster / slower | hit rate, points |\n|---|--:|---|--:|--:|--:|---|--:|',
  );
  for (const [g, rs] of groups) {
    const pairs = rs.map((r) => [beforeRows.get(key(r))!, r] as const);
    const p50 = geo(pairs.map(([b, a]) => a.p50 / b.p50));
    const p99 = geo(pairs.map(([b, a]) => a.p99 / b.p99));
    const faster = pairs.filter(([b, a]) => a.p99 < b.p99).length;
    const slower = pairs.filter(([b, a]) => a.p99 > b.p99).length;
    const hit = (100 * pairs.reduce((s, [b, a]) => s + a.hit - b.hit, 0)) / pairs.length;
    console.log(
      `| ${g} | ${pairs.length} | ${p50.toFixed(3)} | ${p99.toFixed(3)} | ${faster} / ${slower} | ${hit >= 0 ? '+' : ''}${hit.toFixed(2)} |`,
    );
  }
}

/**
 * The goal table's router rows on these seeds: each run with N > 1 routers
 * against the same workload at 1 router (hit ≥ 0.95×, p50 and p99 ≤ 1.05×,
 * goal-rows.ts TARGETS), as runs within / runs and the geometric-mean p99
 * ratio, beside the saved run's when comparing. A change that moves one
 * router's runs moves these ratios even where every absolute figure improves.
 */
function printAgainstOne(after: QualityRow[], beforeRows: Map<string, QualityRow> | undefined): void {
  const afterRows = new Map(after.map((r) => [key(r), r]));
  // Runs at N > 1 routers against their 1-router run in `rows`: runs within / runs, geometric-mean p99 ratio.
  const judge = (rs: QualityRow[], rows: Map<string, QualityRow>): string => {
    const pairs = rs.flatMap((r) => {
      const one = rows.get(key({ ...r, routers: 1 }));
      return one === undefined ? [] : [[r, one] as const];
    });
    if (pairs.length === 0) return '—';
    const within = pairs.filter(
      ([r, one]) =>
        r.hit / one.hit >= TARGETS.routersHit &&
        r.p50 / one.p50 <= TARGETS.routersTtft &&
        r.p99 / one.p99 <= TARGETS.routersTtft,
    ).length;
    const p99 = Math.exp(pairs.reduce((sum, [r, one]) => sum + Math.log(r.p99 / one.p99), 0) / pairs.length);
    return `${within} / ${pairs.length}, p99 ${p99.toFixed(3)}×`;
  };
  const many = after.filter((r) => r.routers > 1 && afterRows.has(key({ ...r, routers: 1 })));
  if (many.length === 0) return;
  const groups = Map.groupBy(many, (r) => `${r.scenario} | ${r.routers} | ${r.l4 ?? 'random'}`);
  const targets = `hit ≥ ${TARGETS.routersHit}×, TTFT ≤ ${TARGETS.routersTtft}×`;
  console.log(`\nAgainst 1 router (the goal rows: ${targets}), runs within / runs:`);
  console.log(
    beforeRows === undefined
      ? '| scenario | routers | L4 | runs within |\n|---|--:|---|---|'
      : '| scenario | routers | L4 | before | after |\n|---|--:|---|---|---|',
  );
  for (const [g, rs] of groups) {
    const now = judge(rs, afterRows);
    if (beforeRows === undefined) console.log(`| ${g} | ${now} |`);
    else {
      const was = rs.flatMap((r) => beforeRows.get(key(r)) ?? []);
      console.log(`| ${g} | ${judge(was, beforeRows)} | ${now} |`);
    }
  }
}
