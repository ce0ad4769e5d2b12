/**
 * Where a request's time to first token goes on a tiered fleet (host memory
 * 4× and KV sharing on, as `warmpath goals --tiers` runs it), per policy, in
 * the DES (docs/TIERS.md, "What the TTFT reference leaves out"):
 *
 *   alone(ref)  the request alone on an idle replica holding its pooled
 *               ceiling hit on its GPU (the tiered reference's own figure,
 *               before the reload it adds)
 *   miss        alone(what it got) − alone(ref): prefill the placement left
 *   load        engine TTFT − alone(what it got): the engine queue, the other
 *               sequences' context in every step, peers' fetches charged to
 *               the steps, its own host reload's wait for the link
 *
 * each averaged over every request and over the slowest 1%; and per engine
 * step, its mean duration, running sequences and the share of peer fetches
 * charged to it (host reloads run beside the steps). Then the prefill on a
 * request's replica when it arrived (ahead of it, arriving after it before
 * its first token, and the least ahead on any other replica) and, for
 * warmpath, the prefill queue its router saw there and on the least queued
 * other row when it placed it (docs/TIERS.md, "Chat against llm-d-precise").
 *
 *   node packages/bench/bench/tiers-ttft.ts [--scenario chat] [--seed 1] [--routers 2]
 *     [--policies warmpath,llm-d-precise] [--router-set k=v,…] [--duration S]
 *
 * Smoke: --scenario chat --seed 1 --policies warmpath --duration 5
 */
import { createPolicy, type Policy, registerPolicy } from '@warmpath/router';
import { PROFILES, type Sequence } from '@warmpath/sim';
import { runDes } from '../src/des/run.ts';
import { assignRouters } from '../src/l4.ts';
import { TIERS } from '../src/goal-rows.ts';
import { lastArrivalMs } from '../src/loadgen.ts';
import { planFor } from '../src/pool.ts';
import { aloneTtfts, hitCeiling, planRequests, type PlanRequest } from '../src/references.ts';
import { SCENARIOS } from '../src/scenarios.ts';
import { keyValues, scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    scenario: { type: 'string', default: 'chat' },
    seed: { type: 'string', default: '1' },
    routers: { type: 'string', default: '2' },
    duration: { type: 'string', default: '0' },
    policies: { type: 'string', default: 'warmpath,llm-d-precise' },
    'router-set': { type: 'string', default: '' },
  },
});
const seed = Number(values.seed);
const routers = Number(values.routers);
const named = SCENARIOS[values.scenario];
if (named === undefined) throw new Error(`unknown scenario ${values.scenario}`);
const scenario = { ...named, fleet: { ...named.fleet, cpuKvRatio: TIERS.cpuKvRatio, kvSharing: TIERS.kvSharing } };
const profile = PROFILES[scenario.fleet.profile as keyof typeof PROFILES];
const adapters = scenario.fleet.adapters ?? [];
const maxLoras = scenario.fleet.maxLoras ?? 0;
const overrides = keyValues('--router-set', values['router-set']);

// --duration shortens the plan (0: the scenario's); the goals run the scenario's.
const job = { scenario: values.scenario, seed, rate: 0, duration: Number(values.duration), trace: undefined };
const { plan: built, duration } = planFor(job);
const plan = assignRouters(built, routers, 'random', seed);
const reqs = planRequests(plan, new Set(adapters));
const pooled = hitCeiling(reqs, profile.blockSize, poolBlocks());
const refAlone = aloneTtfts(reqs, pooled.cachedTokens, profile, adapters, maxLoras);

function poolBlocks(): number {
  return Math.round(scenario.fleet.replicas * profile.numGpuBlocks * (1 + TIERS.cpuKvRatio));
}

/** The DES names an engine request `req-<plan index>-<attempt>` (des/replica.ts). */
const planIndex = (s: Sequence): number => Number(/^req-(\d+)-/.exec(s.id)![1]);

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const quantile = (xs: readonly number[], p: number): number => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor(p * a.length))] ?? Number.NaN;
};

interface Parts {
  ttft: number;
  front: number;
  queue: number;
  ref: number;
  miss: number;
  load: number;
  cachedShare: number;
}

interface Observed {
  seqs: Sequence[];
  steps: { n: number; ms: number; kvMs: number; seqs: number };
  log: Map<string, StepLog[]>;
  where: Map<Sequence, string>;
}

/** What a router saw when it placed a request: the chosen row's prefill queue (and its parts), the least on another row. */
interface View {
  at: number;
  replica: string;
  queue: number;
  published: number;
  own: number;
  expected: number;
  least: number;
}

/** Every placement's view, for the run of VIEWED (warmpath, wrapped: its choices are unchanged). */
const views: View[] = [];
const VIEWED = 'warmpath';
registerPolicy(`${VIEWED}-viewed`, {
  params: (config, random) => ({ config, random }),
  create: ({ config, random }) => {
    const p: Policy = createPolicy(VIEWED, config, random);
    return {
      ...p,
      select(req, t, warmth) {
        const placed = p.select(req, t, warmth);
        const id = placed.replica?.id;
        const row = t.rows.find((r) => r.replica.id === id);
        if (row === undefined) return placed;
        const least = Math.min(...t.rows.filter((r) => r !== row).map((r) => r.queue));
        const published = row.replica.state.load.prefillTokens;
        const [own, expected] = [row.added, row.expected];
        views.push({ at: req.now, replica: id!, queue: row.queue, published, own, expected, least });
        return placed;
      },
    };
  },
});

/** One DES run of `policy`, every engine sequence and step observed. */
async function observe(policy: string): Promise<Observed> {
  const seqs: Sequence[] = [];
  const steps = { n: 0, ms: 0, kvMs: 0, seqs: 0 };
  const log = new Map<string, StepLog[]>();
  const where = new Map<Sequence, string>();
  await runDes({
    scenario,
    plan,
    policy: policy === VIEWED ? `${VIEWED}-viewed` : policy,
    replicas: scenario.fleet.replicas,
    routers,
    durationS: Math.max(duration, lastArrivalMs(plan) / 1000),
    seed,
    routerOverrides: overrides,
    onSubmitted: (seq) => seqs.push(seq),
    onStep: (r, res) => {
      if (res.durationMs === 0) return;
      const at = res.endMs - res.durationMs;
      let l = log.get(r);
      if (l === undefined) log.set(r, (l = []));
      l.push({ at, ms: res.durationMs, tokens: res.scheduledTokens, kvMs: res.kvLoadMs, seqs: res.scheduledSeqs });
      for (const e of res.emitted) if (e.generated === 1) where.set(e, r);
      steps.n++;
      steps.ms += res.durationMs;
      steps.kvMs += res.kvLoadMs;
      steps.seqs += res.scheduledSeqs;
    },
  });
  return { seqs, steps, log, where };
}

async function run(policy: string): Promise<void> {
  views.length = 0;
  const { seqs, steps, log, where } = await observe(policy);
  const done = seqs.filter((s) => Number.isFinite(s.firstTokenMs));
  const got = new Int32Array(reqs.length);
  const mine: PlanRequest[] = [];
  for (const s of done) {
    got[mine.length] = s.cachedTokens;
    mine.push(reqs[planIndex(s)]!);
  }
  const alone = aloneTtfts(mine, got.subarray(0, mine.length), profile, adapters, maxLoras);
  const parts: Parts[] = done.map((s, k) => {
    const ttft = s.firstTokenMs - s.arrivalMs;
    const ref = refAlone[planIndex(s)]!;
    return {
      ttft,
      front: s.readyAtMs - s.arrivalMs,
      queue: s.admittedMs - s.readyAtMs,
      ref,
      miss: alone[k]! - ref,
      load: ttft - alone[k]!,
      cachedShare: s.cachedTokens / s.promptTokens,
    };
  });
  const ttfts = parts.map((p) => p.ttft);
  const cut = quantile(ttfts, 0.99);
  const slow = parts.filter((p) => p.ttft >= cut);
  const slowSeqs = done.filter((s) => s.firstTokenMs - s.arrivalMs >= cut);
  const line = (label: string, ps: readonly Parts[]): string =>
    `  ${label} (${ps.length}): TTFT ${mean(ps.map((p) => p.ttft)).toFixed(1)} = alone(ref) ${mean(ps.map((p) => p.ref)).toFixed(1)} + miss ${mean(ps.map((p) => p.miss)).toFixed(1)} + load ${mean(ps.map((p) => p.load)).toFixed(1)} (of which engine queue ${mean(ps.map((p) => p.queue)).toFixed(1)}); front end ${mean(ps.map((p) => p.front)).toFixed(1)}; cached ${(mean(ps.map((p) => p.cachedShare)) * 100).toFixed(1)}% of the prompt`;
  console.log(`${policy} (${values.scenario}, seed ${seed}, ${routers} routers, engine TTFT ms):`);
  console.log(`  p50 ${quantile(ttfts, 0.5).toFixed(1)}, p99 ${quantile(ttfts, 0.99).toFixed(1)}`);
  console.log(line('every request', parts));
  const less = done.filter((s) => s.cachedTokens < pooled.cachedTokens[planIndex(s)]!).length;
  const more = done.filter((s) => s.cachedTokens > pooled.cachedTokens[planIndex(s)]!).length;
  console.log(`  cached less than the reference's hit: ${less} requests; more: ${more}`);
  console.log(line('slowest 1%', slow));
  console.log(
    `  slowest 1%, the steps of its replica from its arrival to its first token: ${stepsDuring(slowSeqs, where, log)}`,
  );
  for (const [label, set] of [
    ['every request', done],
    ['slowest 1%', slowSeqs],
  ] as const) {
    console.log(`  ${label}, prefill on its replica at its arrival: ${queuedAt(set, done, where)}`);
    if (views.length > 0) console.log(`  ${label}, the router's view at placement: ${viewed(set, views, where)}`);
  }
  console.log(`  ${balance(log)}`);
  console.log(
    `  steps: ${steps.n}, mean ${(steps.ms / steps.n).toFixed(2)} ms (idle step ${(profile.stepOverheadMs + (profile.weightsBytes / (profile.hbmBytesPerS * profile.hbmEfficiency)) * 1e3).toFixed(2)} ms), ${(steps.seqs / steps.n).toFixed(1)} sequences; peer fetches ${((steps.kvMs / steps.ms) * 100).toFixed(2)}% of step time`,
  );
}

interface StepLog {
  at: number;
  ms: number;
  tokens: number;
  kvMs: number;
  seqs: number;
}

/** Means over `seqs` of the steps their replica ran from their arrival to their first token: count, longest, tokens, peer fetches charged to them. */
function stepsDuring(seqs: readonly Sequence[], where: Map<Sequence, string>, log: Map<string, StepLog[]>): string {
  const n: number[] = [];
  const longest: number[] = [];
  const tokens: number[] = [];
  const kv: number[] = [];
  const running: number[] = [];
  for (const s of seqs) {
    const during = (log.get(where.get(s) ?? '') ?? []).filter(
      (x) => x.at + x.ms > s.arrivalMs && x.at < s.firstTokenMs,
    );
    n.push(during.length);
    longest.push(Math.max(0, ...during.map((x) => x.ms)));
    tokens.push(during.reduce((a, x) => a + x.tokens, 0));
    kv.push(during.reduce((a, x) => a + x.kvMs, 0));
    running.push(mean(during.map((x) => x.seqs)));
  }
  return `${mean(n).toFixed(1)} steps, longest ${mean(longest).toFixed(1)} ms, ${mean(tokens).toFixed(0)} tokens, peer fetches ${mean(kv).toFixed(1)} ms, ${mean(running).toFixed(1)} sequences a step`;
}

/**
 * Means over `seqs` of the uncached prompt tokens on their replica not yet
 * at their first token when they arrived (ahead), of those arriving after
 * them before their first token (later), and the least ahead on any other
 * replica at that moment.
 */
function queuedAt(seqs: readonly Sequence[], all: readonly Sequence[], where: Map<Sequence, string>): string {
  const by = new Map<string, Sequence[]>();
  for (const s of all) {
    const r = where.get(s) ?? '';
    let l = by.get(r);
    if (l === undefined) by.set(r, (l = []));
    l.push(s);
  }
  const left = (o: Sequence) => o.promptTokens - o.cachedTokens;
  const ahead: number[] = [];
  const later: number[] = [];
  const least: number[] = [];
  for (const s of seqs) {
    const r = where.get(s) ?? '';
    const at = s.arrivalMs;
    const pending = (l: readonly Sequence[]) =>
      l.filter((o) => o !== s && o.arrivalMs <= at && o.firstTokenMs > at).reduce((a, o) => a + left(o), 0);
    ahead.push(pending(by.get(r) ?? []));
    later.push(
      (by.get(r) ?? [])
        .filter((o) => o.arrivalMs > at && o.arrivalMs < s.firstTokenMs)
        .reduce((a, o) => a + left(o), 0),
    );
    let m = Infinity;
    for (const [k, l] of by) if (k !== r) m = Math.min(m, pending(l));
    least.push(m);
  }
  return `${mean(ahead).toFixed(0)} tokens ahead, ${mean(later).toFixed(0)} arriving later, ${mean(least).toFixed(0)} ahead on the least busy other`;
}

/**
 * Means over `seqs` of the view their router placed them on (the latest
 * placement on their replica before their arrival there, within 20 ms).
 */
function viewed(seqs: readonly Sequence[], all: readonly View[], where: Map<Sequence, string>): string {
  const byReplica = Map.groupBy(all, (v) => v.replica);
  const got: View[] = [];
  for (const s of seqs) {
    let best: View | undefined;
    for (const v of byReplica.get(where.get(s) ?? '') ?? [])
      if (v.at <= s.arrivalMs && s.arrivalMs - v.at < 20 && (best === undefined || v.at > best.at)) best = v;
    if (best !== undefined) got.push(best);
  }
  const m = (f: (v: View) => number) => mean(got.map(f)).toFixed(0);
  return `queue there ${m((v) => v.queue)} tokens (published ${m((v) => v.published)}, its own since ${m((v) => v.own)}, the others' expected ${m((v) => v.expected)}), the least on another ${m((v) => v.least)}; ${got.length} of ${seqs.length} matched`;
}

/** Per replica, its sequences a step weighted by the step's duration: the spread of the decode load. */
function balance(log: Map<string, StepLog[]>): string {
  const per = [...log.values()].map((l) => {
    const ms = l.reduce((a, x) => a + x.ms, 0);
    return l.reduce((a, x) => a + x.seqs * x.ms, 0) / ms;
  });
  return `sequences a step, time-weighted, per replica: ${per
    .sort((a, b) => a - b)
    .map((x) => x.toFixed(0))
    .join(', ')}`;
}

console.log(
  `reference alone(ref): p50 ${quantile(refAlone, 0.5).toFixed(1)}, p99 ${quantile(refAlone, 0.99).toFixed(1)}`,
);
for (const p of values.policies.split(',')) await run(p);
