// Temporary analysis: per-request tail of one DES run (not committed).
import { runDes } from '../src/des/run.ts';
import { assignRouters } from '../src/l4.ts';
import { planFor } from '../src/pool.ts';
import { SCENARIOS } from '../src/scenarios.ts';
import type { RequestResult } from '../src/loadgen.ts';

const [scen = 'seed', seedS = '1', routersS = '4', ...sets] = process.argv.slice(2);
const seed = Number(seedS), routers = Number(routersS);
const routerOverrides: Record<string, string> = {};
for (const s of sets) { const [k, v] = s.split('='); routerOverrides[k!] = v!; }
const { plan: built, duration } = planFor({ scenario: scen, seed, rate: 0, duration: 0 });
const plan = assignRouters(built, routers, 'random', seed);
// Map body identity → session/turn for analysis.
const sessOf = new Map<number, { session: string | undefined; turn: number }>();
const turnCount = new Map<string, number>();
plan.forEach((p, i) => { const s = p.session ?? `x${i}`; const t = turnCount.get(s) ?? 0; turnCount.set(s, t + 1); sessOf.set(Math.round(p.at * 1000), { session: p.session, turn: t }); });
const res: RequestResult[] = [];
const r = await runDes({ scenario: SCENARIOS[scen]!, plan, policy: 'warmpath', replicas: SCENARIOS[scen]!.fleet.replicas, routers, durationS: duration, seed, routerOverrides, onResult: (x) => res.push(x) });
console.log(`p50 ${r.ttft_ms.p50.toFixed(1)} p99 ${r.ttft_ms.p99.toFixed(1)} hit ${(100 * r.cache_hit_rate).toFixed(2)}%`, JSON.stringify(r.detail?.branches));
res.sort((a, b) => b.ttftMs - a.ttftMs);
const top = res.slice(0, Math.ceil(res.length / 100));
const agg = (f: (x: RequestResult) => string) => { const m = new Map<string, number>(); for (const x of top) m.set(f(x), (m.get(f(x)) ?? 0) + 1); return [...m].sort((a, b) => b[1] - a[1]).slice(0, 12); };
console.log('route', agg((x) => x.route ?? '?'));
console.log('replica', agg((x) => x.replica ?? '?'));
console.log('tag', agg((x) => x.tag ?? '?'));
console.log('first-turn (prompt<2700)', agg((x) => (x.promptTokens < 2700 ? 'first' : 'later')));
console.log('cached frac', agg((x) => (x.cachedTokens / Math.max(1, x.promptTokens)).toFixed(1)));
console.log('sent at s', agg((x) => String(Math.floor(x.sentAt / 5000) * 5)));
