/**
 * What bounds a disaggregated fleet's goodput, per policy, in one DES run
 * (docs/DISAGGREGATION.md, "What bounds longdoc"): per pool, how busy its
 * engines are and how many prompt tokens they compute per second, the
 * decode replicas' KV in use (distinct blocks held by running sequences,
 * so a prefix shared by two requests counts once), and where a request's
 * time to first token goes inside the engines — the prefill leg's wait
 * for the scheduler, the decode leg's.
 *
 *   node packages/bench/bench/pd-steps.ts [--scenario longdoc] [--pd 4:6] [--rate 15] [--seed 2]
 *     [--duration 30] [--policies warmpath,llm-d-precise,sglang-cache-aware]
 *
 * Smoke: --rate 4 --duration 5 --policies warmpath
 */
import { parseArgs } from 'node:util';
import { PROFILES, type Sequence } from '@warmpath/sim';
import { runDes } from '../src/des/run.ts';
import { assignRouters } from '../src/l4.ts';
import { planFor } from '../src/pool.ts';
import { SCENARIOS } from '../src/scenarios.ts';
import { pdRolesOf } from '../src/des/pd.ts';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'longdoc' },
    pd: { type: 'string', default: '4:6' },
    rate: { type: 'string', default: '15' },
    seed: { type: 'string', default: '2' },
    duration: { type: 'string', default: '30' },
    routers: { type: 'string', default: '2' },
    policies: { type: 'string', default: 'warmpath,llm-d-precise,sglang-cache-aware' },
  },
});
const scenario = SCENARIOS[values.scenario]!;
const seed = Number(values.seed);
const routers = Number(values.routers);
const roles = pdRolesOf(values.pd)!;
const profile = PROFILES[scenario.fleet.profile as keyof typeof PROFILES];
const capacity = profile.numGpuBlocks;
/** Arrivals start after the DES's warm-up (run.ts); the window judged is the arrivals' span. */
const WARMUP_MS = 2_000;

const quantile = (xs: number[], p: number): number => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor(p * a.length))] ?? Number.NaN;
};
const spread = (xs: number[]): string =>
  `p50 ${quantile(xs, 0.5).toFixed(0)}, p90 ${quantile(xs, 0.9).toFixed(0)}, p99 ${quantile(xs, 0.99).toFixed(0)}`;
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

interface PerReplica {
  busyMs: number;
  prefill: number;
  live: Set<Sequence>;
  kvSamples: number[];
  nextSample: number;
}

async function run(policy: string): Promise<void> {
  const { plan: built, duration } = planFor({
    scenario: values.scenario,
    seed,
    rate: Number(values.rate),
    duration: Number(values.duration),
  });
  const plan = assignRouters(built, routers, 'random', seed);
  const from = WARMUP_MS + 5_000;
  const to = WARMUP_MS + duration * 1000;
  const replicas = new Map<string, PerReplica>();
  const seqs: Sequence[] = [];
  const refused = new Map<string, number>();
  const at = (id: string): PerReplica => {
    let r = replicas.get(id);
    if (r === undefined)
      replicas.set(id, (r = { busyMs: 0, prefill: 0, live: new Set(), kvSamples: [], nextSample: from }));
    return r;
  };
  const result = await runDes({
    scenario,
    plan,
    policy,
    replicas: roles.length,
    routers,
    durationS: duration,
    seed,
    pd: values.pd,
    onSubmitted: (seq) => void seqs.push(seq),
    onRefused: (x) => {
      const k = `${roles[Number(x.replica.split('-')[1])]} ${x.reason}`;
      refused.set(k, (refused.get(k) ?? 0) + 1);
    },
    onStep: (id, res) => {
      const r = at(id);
      const start = res.endMs - res.durationMs;
      if (start >= from && start < to) {
        r.busyMs += res.durationMs;
        let decoding = 0;
        for (const s of res.emitted) if (s.generated > 1) decoding++;
        r.prefill += res.scheduledTokens - decoding;
      }
      for (const s of res.emitted) r.live.add(s);
      for (const s of res.finished) r.live.delete(s);
      for (const s of res.preempted) r.live.delete(s);
      if (start >= r.nextSample && start < to) {
        r.nextSample = start + 250;
        const blocks = new Set<number>();
        for (const s of r.live) for (const b of s.blocks) blocks.add(b);
        r.kvSamples.push(blocks.size / capacity);
      }
    },
  });
  const spanS = (to - from) / 1000;
  const pool = (role: 'prefill' | 'decode') => {
    const ids = roles.flatMap((x, i) => (x === role ? [`replica-${i}`] : []));
    const rs = ids.map(at);
    const busy = mean(rs.map((r) => r.busyMs / (to - from)));
    const tokS = rs.reduce((a, r) => a + r.prefill, 0) / spanS;
    const kv = rs.flatMap((r) => r.kvSamples);
    return `${role}: busy ${(100 * busy).toFixed(0)}%, prompt tokens computed ${(tokS / 1000).toFixed(1)}k/s, KV in use ${spread(kv.map((x) => 100 * x))} %`;
  };
  const legs = { prefill: [] as number[], decode: [] as number[], local: [] as number[] };
  for (const s of seqs) {
    if (s.arrivalMs < from || s.arrivalMs >= to || !Number.isFinite(s.admittedMs)) continue;
    const kind = s.maxTokens === 1 ? 'prefill' : s.kvReceived ? 'decode' : 'local';
    legs[kind].push(s.admittedMs - s.readyAtMs);
  }
  const d = result.detail as {
    errorsByCode?: Record<string, number>;
    pd?: unknown;
    ttftP99AllRequests?: number | null;
  };
  console.log(
    `${policy}: ${result.completed}/${result.requests} answered ${JSON.stringify(d.errorsByCode ?? {})}, TTFT p99 ${d.ttftP99AllRequests ?? '∞'} ms (answered ${result.ttft_ms.p99}), ITL p99 ${result.itl_ms.p99} ms, preemptions ${result.preemptions}, hit rate ${(100 * result.cache_hit_rate).toFixed(1)}%, ${JSON.stringify(d.pd)}`,
  );
  console.log(`  refusals: ${JSON.stringify(Object.fromEntries(refused))}`);
  console.log(`  ${pool('prefill')}`);
  console.log(`  ${pool('decode')}`);
  for (const [k, xs] of Object.entries(legs))
    if (xs.length > 0) console.log(`  ${k} legs: ${xs.length}, wait for the scheduler ms ${spread(xs)}`);
}

for (const policy of values.policies.split(',')) await run(policy);
