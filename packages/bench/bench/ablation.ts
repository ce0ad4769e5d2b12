/**
 * Ablation: warmpath with each placement step switched off in turn
 * (`placementOff`), against warmpath whole, on every scenario (DES, 2 routers,
 * random L4). Prints one Markdown table per metric row: TTFT p50 / p99 over
 * every request sent and the hit rate, as ratios to the whole policy.
 * Tune on seeds 1–3 only; judge on 101–104.
 *
 *   node packages/bench/bench/ablation.ts [--seed N] [--scenarios a,b] [--steps a,b] [--duration S]
 *
 * --duration: simulated seconds per run (default: each scenario's own).
 * Smoke: --scenarios seed --steps warm --duration 2
 */
import { SWITCHABLE_STEP_NAMES } from '@warmpath/router';
import { p50AllRequests, p99AllRequests, GOAL_SCENARIOS } from '../src/goals.ts';
import { DesPool, type DesJob, type JobOutcome } from '../src/pool.ts';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const seed = Number(opt('--seed') ?? 1);
const scenarios = opt('--scenarios')?.split(',') ?? [...GOAL_SCENARIOS];
const steps = opt('--steps')?.split(',') ?? [...SWITCHABLE_STEP_NAMES];
const duration = Number(opt('--duration') ?? 0);
const pool = new DesPool();
const job = (scenario: string, off: string | undefined): DesJob => ({
  scenario,
  seed,
  rate: 0,
  duration,
  replicas: 0,
  routers: 2,
  l4: 'random',
  policy: 'warmpath',
  ...(off !== undefined ? { routerOverrides: { placementOff: off } } : {}),
});
const runs = new Map<string, Promise<JobOutcome>>();
// One scenario's runs share one description of its plan (DesPool.runShared).
for (const sc of scenarios) {
  const offs = [undefined, ...steps];
  pool.runShared(offs.map((off) => job(sc, off))).outcomes.forEach((o, i) => runs.set(`${sc}|${offs[i] ?? ''}`, o));
}
const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '∞');
console.log(
  `Warmpath with one step off, as a ratio to warmpath whole (DES, seed ${seed}, 2 routers, random L4): TTFT p50 / p99 over every request sent, hit rate.\n`,
);
console.log(`| step off | ${scenarios.join(' | ')} |`);
console.log(`|---|${scenarios.map(() => '---|').join('')}`);
const whole = new Map<string, JobOutcome>();
for (const sc of scenarios) whole.set(sc, await runs.get(`${sc}|`)!);
console.log(
  `| (none: absolute) | ${scenarios
    .map((sc) => {
      const w = whole.get(sc)!;
      return w.ok
        ? `${p50AllRequests(w.result).toFixed(0)} / ${p99AllRequests(w.result).toFixed(0)} ms, ${(w.result.cache_hit_rate * 100).toFixed(1)}%`
        : 'failed';
    })
    .join(' | ')} |`,
);
for (const off of steps) {
  const cells: string[] = [];
  for (const sc of scenarios) {
    const r = await runs.get(`${sc}|${off}`)!;
    const w = whole.get(sc)!;
    if (!r.ok || !w.ok) {
      cells.push('failed');
      continue;
    }
    const same =
      r.result.detail?.branches !== undefined &&
      JSON.stringify(r.result.ttft_ms) === JSON.stringify(w.result.ttft_ms) &&
      r.result.cache_hit_rate === w.result.cache_hit_rate;
    cells.push(
      same
        ? '='
        : `${f(p50AllRequests(r.result) / p50AllRequests(w.result))} / ${f(p99AllRequests(r.result) / p99AllRequests(w.result))}, ${((r.result.cache_hit_rate - w.result.cache_hit_rate) * 100).toFixed(1)} pt`,
    );
  }
  console.log(`| ${off} | ${cells.join(' | ')} |`);
}
await pool.close();
