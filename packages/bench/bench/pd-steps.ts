/**
 * What bounds a disaggregated fleet's goodput, per policy, in one DES run
 * (docs/DISAGGREGATION.md, "What bounds longdoc"): per pool, how busy its
 * engines are and how many prompt tokens they compute per second, the KV
 * in use (distinct blocks held by running sequences, so a prefix two
 * requests share counts once), and how long each kind of leg waits in its
 * engine's queue before the scheduler takes it — the prefill leg, the
 * decode leg (its KV by transfer), a request prefilled on its decode
 * replica (local) or on a prefill replica (overflow: no decode replica
 * had room) — and the inter-token gaps each pool's streams get, with the
 * share slower than the SLO's ITL (a step longer than it), and how the
 * requests in the TTFT tail were served. The window is the arrivals' span
 * less its first sixth (the fleet filling up). Over the whole run, the work
 * bound's terms against it (src/work-bound.ts): the GPU seconds a request
 * the bound counts and the fleet's steps took, and the most KV the
 * sequences emitting in one step held alone (the fixed cost's charge
 * holds while that stays within a replica's KV).
 *
 *   node packages/bench/bench/pd-steps.ts [--scenario longdoc] [--pd 4:6] [--rate 15] [--seed 2]
 *     [--duration 30] [--routers 2] [--policies warmpath,llm-d-precise,sglang-cache-aware] [--router-set k=v,…]
 *
 * Smoke: --rate 4 --duration 6 --policies warmpath
 */
import { PROFILES, type Sequence, type StepResult } from '@warmpath/sim';
import { runDes } from '../src/des/run.ts';
import type { RequestResult } from '../src/loadgen.ts';
import { SLO } from '../src/goodput.ts';
import { pdRolesOf } from '../src/des/pd.ts';
import { assignRouters } from '../src/l4.ts';
import { planFor } from '../src/pool.ts';
import { planRequests } from '../src/references.ts';
import { SCENARIOS } from '../src/scenarios.ts';
import { sharedBlocksOf, workBoundOf } from '../src/work-bound.ts';
import { keyValues, scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    scenario: { type: 'string', default: 'longdoc' },
    pd: { type: 'string', default: '4:6' },
    rate: { type: 'string', default: '15' },
    seed: { type: 'string', default: '2' },
    duration: { type: 'string', default: '30' },
    routers: { type: 'string', default: '2' },
    policies: { type: 'string', default: 'warmpath,llm-d-precise,sglang-cache-aware' },
    'router-set': { type: 'string', default: '' },
  },
});
const scenario = SCENARIOS[values.scenario];
if (scenario === undefined) throw new Error(`unknown scenario ${values.scenario}`);
const seed = Number(values.seed);
const routers = Number(values.routers);
const roles = pdRolesOf(values.pd)!;
const overrides = keyValues('--router-set', values['router-set']);
const profile = PROFILES[scenario.fleet.profile as keyof typeof PROFILES];
const blocks = profile.numGpuBlocks;
/** The DES's warm-up before the first arrival (des/run.ts). */
const WARMUP_MS = 2_000;
/** How often each replica's KV in use is sampled, simulated ms. */
const SAMPLE_MS = 250;

const quantile = (xs: number[], p: number): number => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor(p * a.length))] ?? Number.NaN;
};
const spread = (xs: number[]): string =>
  `p50 ${quantile(xs, 0.5).toFixed(0)}, p90 ${quantile(xs, 0.9).toFixed(0)}, p99 ${quantile(xs, 0.99).toFixed(0)}`;

/** One replica's steps within the window [from, to). */
class Meter {
  busyMs = 0;
  prefill = 0;
  /** Inter-token gaps the step produced (streams past their first token), and those in a step longer than the SLO's ITL. */
  gaps = 0;
  slow = 0;
  readonly kv: number[] = [];
  readonly #live = new Set<Sequence>();
  readonly from: number;
  readonly to: number;
  #next: number;
  constructor(from: number, to: number) {
    this.from = from;
    this.to = to;
    this.#next = from;
  }
  step(res: StepResult): void {
    const start = res.endMs - res.durationMs;
    for (const s of res.emitted) this.#live.add(s);
    for (const s of [...res.finished, ...res.preempted]) this.#live.delete(s);
    if (start < this.from || start >= this.to) return;
    this.busyMs += res.durationMs;
    // A step's tokens are one per decoding sequence, the rest prompt (a chunk's last token is its first output).
    let decoding = 0;
    for (const s of res.emitted) if (s.generated > 1) decoding++;
    this.prefill += res.scheduledTokens - decoding;
    this.gaps += decoding;
    if (res.durationMs > SLO.itlMs) this.slow += decoding;
    if (start < this.#next) return;
    this.#next = start + SAMPLE_MS;
    const held = new Set<number>();
    for (const s of this.#live) for (const b of s.blocks) held.add(b);
    this.kv.push((100 * held.size) / blocks);
  }
}

const poolMeters = (role: 'prefill' | 'decode', meters: Map<string, Meter>): Meter[] =>
  roles.flatMap((x, i) => (x === role ? [meters.get(`replica-${i}`)] : [])).filter((m) => m !== undefined);

function poolLine(role: 'prefill' | 'decode', meters: Map<string, Meter>, spanMs: number): string {
  const ms = poolMeters(role, meters);
  const all = [...meters.values()].reduce((a, m) => a + m.gaps, 0);
  const gaps = ms.reduce((a, m) => a + m.gaps, 0);
  const slow = ms.reduce((a, m) => a + m.slow, 0);
  const busy = ms.reduce((a, m) => a + m.busyMs, 0) / Math.max(1, ms.length) / spanMs;
  const tokS = ms.reduce((a, m) => a + m.prefill, 0) / (spanMs / 1000);
  const kv = ms.flatMap((m) => m.kv);
  const pct = (x: number, of: number): string => `${((100 * x) / Math.max(1, of)).toFixed(2)}%`;
  return (
    `${role}: busy ${(100 * busy).toFixed(0)}%, prompt tokens computed ${(tokS / 1000).toFixed(1)}k/s, KV in use ${spread(kv)} %, ` +
    `gaps ${pct(gaps, all)} of all, ${pct(slow, gaps)} of them over ${SLO.itlMs} ms (${pct(slow, all)} of all)`
  );
}

/** A request as it was served: `transfer`, `local` (on a decode replica), `overflow` (whole on a prefill replica), `failed`. */
function servedAs(r: RequestResult): string {
  if (!r.ok) return 'failed';
  if (r.pd === 'transfer') return 'transfer';
  return roles[Number(r.replica?.slice('replica-'.length))] === 'prefill' ? 'overflow' : 'local';
}

/** The TTFT tail (at least 0.8 × p99, an unanswered request the slowest) by how each request was served. */
function tailLine(answers: readonly RequestResult[]): string {
  const ttft = (r: RequestResult): number => (r.ok ? r.ttftMs : Infinity);
  const p99 = quantile(answers.map(ttft), 0.99);
  const count = (xs: readonly RequestResult[]): string => {
    const n = new Map<string, number>();
    for (const r of xs) n.set(servedAs(r), (n.get(servedAs(r)) ?? 0) + 1);
    return [...n].map(([k, v]) => `${k} ${v}`).join(', ');
  };
  return `TTFT tail (≥ 0.8 × p99): ${count(answers.filter((r) => ttft(r) >= 0.8 * p99))}; all requests: ${count(answers)}`;
}

/** The work bound against the whole run's steps (module header). */
class BoundCheck {
  busyMs = 0;
  /** The most tokens the sequences emitting in one step held alone. */
  most = 0;
  readonly #shared: (hashes: BigUint64Array) => number;
  readonly #reqs: ReturnType<typeof planRequests>;
  constructor(plan: Parameters<typeof planRequests>[0]) {
    this.#reqs = planRequests(plan, new Set(scenario!.fleet.adapters ?? []));
    this.#shared = sharedBlocksOf(this.#reqs);
  }
  step(res: StepResult): void {
    this.busyMs += res.durationMs;
    let own = 0;
    for (const s of res.emitted)
      own += s.promptTokens - this.#shared(s.blockHashes) * profile.blockSize + s.generated - 1;
    this.most = Math.max(this.most, own);
  }
  line(): string {
    const b = workBoundOf(this.#reqs, profile, roles.length);
    const n = Math.max(1, this.#reqs.length);
    return (
      `work bound: ${(b.prefillS + b.decodeS + b.fixedS).toFixed(3)} GPU-s a request (prefill ${b.prefillS.toFixed(3)}, KV read ${b.decodeS.toFixed(3)}, fixed ${b.fixedS.toFixed(3)}; ${b.rate.toFixed(2)} req/s), ` +
      `the steps ${(this.busyMs / 1e3 / n).toFixed(3)} a request sent; the most KV held alone by one step's emitting sequences ` +
      `${((100 * this.most) / (blocks * profile.blockSize)).toFixed(2)}% of a replica's`
    );
  }
}

async function run(policy: string): Promise<void> {
  const rate = Number(values.rate);
  const { plan: built, duration } = planFor({
    scenario: values.scenario,
    seed,
    rate,
    duration: Number(values.duration),
  });
  const plan = assignRouters(built, routers, 'random', seed);
  const from = WARMUP_MS + (duration * 1000) / 6;
  const to = WARMUP_MS + duration * 1000;
  const meters = new Map<string, Meter>();
  const check = new BoundCheck(built);
  const seqs: Sequence[] = [];
  const answers: RequestResult[] = [];
  // Sequences that decoded on a prefill replica (their second token came from one).
  const onPrefill = new Set<Sequence>();
  const result = await runDes({
    scenario: scenario!,
    plan,
    policy,
    replicas: roles.length,
    routers,
    durationS: duration,
    seed,
    pd: values.pd,
    routerOverrides: overrides,
    onSubmitted: (seq) => void seqs.push(seq),
    onResult: (r) => void answers.push(r),
    onStep: (id, res) => {
      if (roles[Number(id.slice('replica-'.length))] === 'prefill')
        for (const q of res.emitted) if (q.generated === 2) onPrefill.add(q);
      let m = meters.get(id);
      if (m === undefined) meters.set(id, (m = new Meter(from, to)));
      m.step(res);
      check.step(res);
    },
  });
  const legs = { prefill: [] as number[], decode: [] as number[], local: [] as number[], overflow: [] as number[] };
  for (const s of seqs) {
    if (s.arrivalMs < from || s.arrivalMs >= to || !Number.isFinite(s.admittedMs)) continue;
    const kind = s.maxTokens === 1 ? 'prefill' : s.kvReceived ? 'decode' : onPrefill.has(s) ? 'overflow' : 'local';
    legs[kind].push(s.admittedMs - s.readyAtMs);
  }
  const d = result.detail as { errorsByCode?: object; pd?: object; ttftP99AllRequests?: number | null };
  console.log(
    `${policy} at ${rate} req/s, seed ${seed}: ${result.completed}/${result.requests} answered ${JSON.stringify(d.errorsByCode ?? {})}, ` +
      `TTFT p99 ${d.ttftP99AllRequests ?? '∞'} ms (answered ${result.ttft_ms.p99}), ITL p99 ${result.itl_ms.p99} ms, ` +
      `preemptions ${result.preemptions}, ${JSON.stringify(d.pd ?? {})}`,
  );
  console.log(`  ${poolLine('prefill', meters, to - from)}`);
  console.log(`  ${poolLine('decode', meters, to - from)}`);
  console.log(`  ${tailLine(answers)}`);
  console.log(`  ${check.line()}`);
  for (const [k, xs] of Object.entries(legs))
    if (xs.length > 0) console.log(`  ${k} legs: ${xs.length}, wait in the engine's queue ms ${spread(xs)}`);
}

for (const policy of values.policies.split(',')) await run(policy);
