/**
 * The goals judged from a seed's runs: which runs each goal needs (jobsFor),
 * the runs of one seed and scenario (RunSet), a row per goal (checkRuns), and
 * the table of goals × seeds (goalsTable). The goals themselves, and the
 * command that runs them, are in goals.ts.
 */
import { ALL_POLICIES } from './cli.ts';
import type { L4Mode } from './l4.ts';
import { PEER_POLICIES } from './peers/index.ts';
import type { DesJob } from './pool.ts';
import type { References } from './references.ts';
import type { PolicyResult } from './report.ts';

/** The peers' emulations (peers/index.ts, docs/PEERS.md): the rivals warmpath's goals compare against. */
export { PEER_POLICIES };
export const TUNING_SEEDS = [1, 2, 3] as const;
export const HELD_OUT_SEEDS = [101, 102, 103, 104] as const;
export const GOAL_SCENARIOS = ['seed', 'chat', 'fanout', 'lora', 'pianos', 'trace', 'longctx'] as const;

/** Targets, one place: ratios against the best peer, round-robin, 1 router and the instant variant. */
export const TARGETS = {
  vsPeer: 0.95, // TTFT and adapter loads ≤ 0.95 × the best peer's (the 5% margin)
  vsRoundRobin: 1 / 3,
  routersHit: 0.95, // N routers' hit rate ≥ 0.95 × 1 router's
  routersTtft: 1.05, // N routers' TTFT ≤ 1.05 × 1 router's
  vsInstant: 1.1,
  seedsNeeded: 0.75, // a goal holds on at least 3 of 4 seeds
} as const;

const BASE_ROUTERS = 2;
const ROUTER_COUNTS = [1, 4, 16] as const;
const INSTANT = 'warmpath-instant';

export interface GoalRow {
  scenario: string;
  seed: number;
  goal: string;
  measured: string;
  target: string;
  pass: boolean;
  /** Set when no router could meet this row: the target is under the plan's TTFT bound. */
  beyond?: string;
}

const f0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '∞');
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** TTFT p50 over every request sent (Infinity when unanswered requests reach it); answered-only for reports without it. */
/** TTFT p50 and p99 of `w` against the best of `peers` on each (no peers: no rows), and the target in ms. */
function vsBestPeer(w: PolicyResult, peers: readonly PolicyResult[], who: string) {
  if (peers.length === 0) return [];
  return (
    [
      ['p50', p50AllRequests],
      ['p99', p99AllRequests],
    ] as const
  ).map(([name, of]) => {
    const best = peers.reduce((a, b) => (of(b) < of(a) ? b : a));
    const ratio = of(w) / of(best);
    return {
      name,
      goal: `TTFT ${name} ≤ 0.95 × ${who}`,
      measured: `${f0(of(w))} vs ${best.policy} ${f0(of(best))} ms (${ratio.toFixed(2)}×)`,
      pass: ratio <= TARGETS.vsPeer,
      targetMs: TARGETS.vsPeer * of(best),
    };
  });
}

export function p50AllRequests(r: PolicyResult): number {
  const all = r.detail?.ttftP50AllRequests;
  return all === undefined ? r.ttft_ms.p50 : (all ?? Number.POSITIVE_INFINITY);
}

export function p99AllRequests(r: PolicyResult): number {
  const all = r.detail?.ttftP99AllRequests;
  return all === undefined ? r.ttft_ms.p99 : (all ?? Number.POSITIVE_INFINITY);
}

/** Results of one seed and scenario, by (routers, L4, policy). */
export class RunSet {
  readonly #m = new Map<string, PolicyResult>();
  static key(routers: number, l4: L4Mode, policy: string): string {
    return `${routers}|${l4}|${policy}`;
  }
  set(routers: number, l4: L4Mode, r: PolicyResult): void {
    this.#m.set(RunSet.key(routers, l4, r.policy), r);
  }
  get(routers: number, l4: L4Mode, policy: string): PolicyResult | undefined {
    return this.#m.get(RunSet.key(routers, l4, policy));
  }
  peers(routers: number, l4: L4Mode): PolicyResult[] {
    return PEER_POLICIES.flatMap((p) => this.get(routers, l4, p) ?? []);
  }
}

const combos = (): Array<[number, L4Mode]> =>
  ROUTER_COUNTS.flatMap(
    (n) =>
      (n === 1
        ? [[1, 'random']]
        : [
            [n, 'random'],
            [n, 'sticky'],
          ]) as Array<[number, L4Mode]>,
  );

/** Every DES job one (scenario, seed) needs. */
export function jobsFor(scenario: string, seed: number, trace: string | undefined): DesJob[] {
  const job = (routers: number, l4: L4Mode, policy: string): DesJob => ({
    scenario,
    seed,
    rate: 0,
    duration: 0,
    trace,
    replicas: 0,
    routers,
    l4,
    policy,
  });
  const base = [
    'warmpath',
    'round-robin',
    ...PEER_POLICIES,
    ...((ALL_POLICIES as readonly string[]).includes(INSTANT) ? [INSTANT] : []),
  ];
  const out = base.map((p) => job(BASE_ROUTERS, 'random', p));
  for (const [n, l4] of combos()) for (const p of ['warmpath', ...PEER_POLICIES]) out.push(job(n, l4, p));
  return out;
}

/** The target (ms) is under what no policy can beat (`bound`, the plan's TTFT bound): say so, with the bound. */
function beyondBound(
  target: number,
  name: 'p50' | 'p99',
  bound: Readonly<Record<'p50' | 'p99', number>> | undefined,
): string | undefined {
  const b = bound?.[name];
  return b !== undefined && target < b
    ? `beyond any router: the target ${f0(target)} ms is under the TTFT ${name} bound ${f0(b)} ms`
    : undefined;
}

/** TTFT against the best peer and round-robin, adapter loads, the instant variant (2 routers, random L4). */
function baseRows(scenario: string, seed: number, runs: RunSet, refs: References | undefined): GoalRow[] {
  const row = (goal: string, measured: string, target: string, pass: boolean, beyond?: string): GoalRow => ({
    scenario,
    seed,
    goal,
    measured,
    target,
    pass,
    ...(beyond !== undefined ? { beyond } : {}),
  });
  const underBound = (target: number, name: 'p50' | 'p99') => beyondBound(target, name, refs?.ttftBoundMs);
  const w = runs.get(BASE_ROUTERS, 'random', 'warmpath');
  if (w === undefined) return [row('warmpath ran', 'failed', 'a result', false)];
  const out: GoalRow[] = [];
  const peers = runs.peers(BASE_ROUTERS, 'random');
  for (const v of vsBestPeer(w, peers, 'best peer'))
    out.push(row(v.goal, v.measured, '≤ 0.95×', v.pass, underBound(v.targetMs, v.name)));
  const rr = runs.get(BASE_ROUTERS, 'random', 'round-robin');
  if (rr !== undefined) {
    const ratio = p50AllRequests(w) / p50AllRequests(rr);
    out.push(
      row(
        'TTFT p50 ≤ 1/3 round-robin',
        `${f0(p50AllRequests(w))} vs ${f0(p50AllRequests(rr))} ms (${ratio.toFixed(2)}×)`,
        '≤ 0.33×',
        ratio <= TARGETS.vsRoundRobin,
        underBound(TARGETS.vsRoundRobin * p50AllRequests(rr), 'p50'),
      ),
    );
  }
  const instant = runs.get(BASE_ROUTERS, 'random', INSTANT);
  if (instant !== undefined) {
    const r50 = p50AllRequests(w) / p50AllRequests(instant);
    const r99 = p99AllRequests(w) / p99AllRequests(instant);
    out.push(
      row(
        'within 10% of warmpath-instant',
        `p50 ${r50.toFixed(2)}×, p99 ${r99.toFixed(2)}×`,
        '≤ 1.10×',
        r50 <= TARGETS.vsInstant && r99 <= TARGETS.vsInstant,
      ),
    );
  }
  if (scenario === 'lora' && peers.length > 0) {
    const fewest = peers.reduce((a, b) => (b.adapter_loads < a.adapter_loads ? b : a));
    out.push(
      row(
        'adapter loads ≤ 0.95 × fewest peer',
        `${w.adapter_loads} vs ${fewest.policy} ${fewest.adapter_loads}`,
        '≤ 0.95×',
        w.adapter_loads <= TARGETS.vsPeer * fewest.adapter_loads,
      ),
    );
  }
  return out;
}

/** Hit rate against every peer at 1, 4 and 16 routers (random and sticky L4), and N routers against 1. */
function routerRows(scenario: string, seed: number, runs: RunSet, refs: References | undefined): GoalRow[] {
  const out: GoalRow[] = [];
  const ceiling = refs?.hitRateCeiling.belady;
  const one = runs.get(1, 'random', 'warmpath');
  for (const [n, l4] of combos()) {
    const w = runs.get(n, l4, 'warmpath');
    const at = n === 1 ? '1 router' : `${n} routers, ${l4} L4`;
    if (w === undefined) {
      out.push({
        scenario,
        seed,
        goal: `hit rate ≥ every peer (${at})`,
        measured: 'warmpath failed',
        target: '≥',
        pass: false,
      });
      continue;
    }
    const peers = runs.peers(n, l4);
    const best = peers.length > 0 ? peers.reduce((a, b) => (b.cache_hit_rate > a.cache_hit_rate ? b : a)) : undefined;
    const ofCeiling =
      ceiling !== undefined && ceiling > 0
        ? ` (${pct(w.cache_hit_rate / ceiling)} of the ceiling ${pct(ceiling)})`
        : '';
    const vs = best === undefined ? '' : ` vs ${best.policy} ${pct(best.cache_hit_rate)}`;
    out.push({
      scenario,
      seed,
      goal: `hit rate ≥ every peer (${at})`,
      measured: `${pct(w.cache_hit_rate)}${vs}${ofCeiling}`,
      target: '≥',
      pass: best === undefined || w.cache_hit_rate >= best.cache_hit_rate,
    });
    if (n === 1 || one === undefined) continue;
    const hit = w.cache_hit_rate / Math.max(1e-9, one.cache_hit_rate);
    const p50 = p50AllRequests(w) / p50AllRequests(one);
    const p99 = p99AllRequests(w) / p99AllRequests(one);
    const pass = hit >= TARGETS.routersHit && p50 <= TARGETS.routersTtft && p99 <= TARGETS.routersTtft;
    out.push({
      scenario,
      seed,
      goal: `${at} within 5% of 1 router`,
      measured: `hit ${hit.toFixed(3)}×, p50 ${p50.toFixed(2)}×, p99 ${p99.toFixed(2)}×`,
      target: 'hit ≥ 0.95×, TTFT ≤ 1.05×',
      pass,
    });
  }
  return out;
}

/**
 * The tiered goals (`warmpath goals --tiers`): every engine with host memory
 * TIERS.cpuKvRatio × its GPU KV and KV sharing on, for every policy alike,
 * on TIERS.scenarios; warmpath against the tier-aware peers (2 routers,
 * random L4) and against itself at 1 router.
 */
export const TIERS = {
  scenarios: ['trace', 'chat', 'longctx'],
  peers: ['llm-d-precise', 'dynamo-kv'],
  cpuKvRatio: 4,
  kvSharing: 'peer',
  ofCeiling: 0.9, // hit rate ≥ 0.9 × the tiered ceiling
  ofTieredTtft: 1.3, // TTFT p50 ≤ 1.3 × the tiered TTFT reference
} as const;

/** Every DES job one (scenario, seed) of the tiered goals needs. */
export function tierJobsFor(scenario: string, seed: number, trace: string | undefined): DesJob[] {
  const job = (routers: number, policy: string): DesJob => ({
    scenario,
    seed,
    rate: 0,
    duration: 0,
    trace,
    replicas: 0,
    routers,
    l4: 'random',
    policy,
    cpuKvRatio: TIERS.cpuKvRatio,
    kvSharing: TIERS.kvSharing,
  });
  return [
    ...['warmpath', ...TIERS.peers].map((p) => job(BASE_ROUTERS, p)),
    ...ROUTER_COUNTS.map((n) => job(n, 'warmpath')),
  ];
}

const beyondOf = (beyond: string | undefined) => (beyond !== undefined ? { beyond } : {});

/** The tiered goals' rows for one (scenario, seed): against the tiered references, the tier-aware peers, 1 router. */
export function tierRows(scenario: string, seed: number, runs: RunSet, refs: References | undefined): GoalRow[] {
  const row = (goal: string, measured: string, target: string, pass: boolean): GoalRow => ({
    scenario,
    seed,
    goal: `tiered: ${goal}`,
    measured,
    target,
    pass,
  });
  const w = runs.get(BASE_ROUTERS, 'random', 'warmpath');
  if (w === undefined) return [row('warmpath ran', 'failed', 'a result', false)];
  const out: GoalRow[] = [];
  const ceiling = refs?.hitRateCeiling.tiered?.belady;
  if (ceiling !== undefined && ceiling > 0) {
    const of = w.cache_hit_rate / ceiling;
    out.push(
      row(
        'hit rate ≥ 90% of the tiered ceiling',
        `${pct(w.cache_hit_rate)} of ${pct(ceiling)} (${pct(of)})`,
        '≥ 90%',
        of >= TIERS.ofCeiling,
      ),
    );
  }
  const ref = refs?.ttftTieredMs?.p50;
  if (ref !== undefined && ref > 0) {
    const r = p50AllRequests(w) / ref;
    out.push(
      row(
        'TTFT p50 ≤ 1.3 × tiered reference',
        `${f0(p50AllRequests(w))} vs ${f0(ref)} ms (${r.toFixed(2)}×)`,
        '≤ 1.3×',
        r <= TIERS.ofTieredTtft,
      ),
    );
  }
  const peers = TIERS.peers.flatMap((p) => runs.get(BASE_ROUTERS, 'random', p) ?? []);
  // Beyond any router under the plan's TTFT bound: tiers only add reloads and transfers to what it assumes.
  for (const v of vsBestPeer(w, peers, 'best tier-aware peer'))
    out.push({
      ...row(v.goal, v.measured, '≤ 0.95×', v.pass),
      ...beyondOf(beyondBound(v.targetMs, v.name, refs?.ttftBoundMs)),
    });
  const one = runs.get(1, 'random', 'warmpath');
  for (const n of [4, 16]) {
    const m = runs.get(n, 'random', 'warmpath');
    if (one === undefined || m === undefined) continue;
    const hit = m.cache_hit_rate / Math.max(1e-9, one.cache_hit_rate);
    const p50 = p50AllRequests(m) / p50AllRequests(one);
    const p99 = p99AllRequests(m) / p99AllRequests(one);
    const pass = hit >= TARGETS.routersHit && p50 <= TARGETS.routersTtft && p99 <= TARGETS.routersTtft;
    out.push(
      row(
        `${n} routers within 5% of 1 router`,
        `hit ${hit.toFixed(3)}×, p50 ${p50.toFixed(2)}×, p99 ${p99.toFixed(2)}×`,
        'hit ≥ 0.95×, TTFT ≤ 1.05×',
        pass,
      ),
    );
  }
  return out;
}

export function checkRuns(scenario: string, seed: number, runs: RunSet, refs: References | undefined): GoalRow[] {
  return [...baseRows(scenario, seed, runs, refs), ...routerRows(scenario, seed, runs, refs)];
}

/**
 * One row per (scenario, goal): ✓/✗ per seed and whether it holds on enough seeds; `beyond` counts the
 * goals no router could meet (beyond the TTFT bound on so many seeds that too few remain).
 */
export function goalsTable(
  rows: readonly GoalRow[],
  seeds: readonly number[],
): { table: string; met: number; total: number; beyond: number } {
  const goals = new Map<string, Map<number, GoalRow>>();
  for (const r of rows) {
    const k = `${r.scenario}\u0000${r.goal}`;
    (goals.get(k) ?? goals.set(k, new Map()).get(k)!).set(r.seed, r);
  }
  const need = Math.ceil(TARGETS.seedsNeeded * seeds.length);
  const lines = [
    `| scenario | goal | ${seeds.map((s) => `seed ${s}`).join(' | ')} | met |`,
    `|---|---|${seeds.map(() => '---|').join('')}:-:|`,
  ];
  let met = 0;
  let beyond = 0;
  for (const [k, bySeed] of goals) {
    const [scenario, goal] = k.split('\u0000') as [string, string];
    const passes = seeds.filter((s) => bySeed.get(s)?.pass === true).length;
    const ok = passes >= need;
    const reachable = seeds.filter((s) => bySeed.get(s)?.beyond === undefined).length;
    const out = !ok && reachable < need;
    if (ok) met++;
    if (out) beyond++;
    const cells = seeds.map((s) => {
      const r = bySeed.get(s);
      return r === undefined
        ? '—'
        : `${r.pass ? '✓' : '✗'} ${r.measured}${r.beyond !== undefined ? `; ${r.beyond}` : ''}`;
    });
    lines.push(
      `| ${scenario} | ${goal} | ${cells.join(' | ')} | ${ok ? '✓' : '✗'} ${passes}/${seeds.length}${out ? ', beyond any router' : ''} |`,
    );
  }
  return { table: lines.join('\n'), met, total: goals.size, beyond };
}
