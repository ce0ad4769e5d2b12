/**
 * Load sweep: warmpath against round-robin as the arrival rate grows (DES,
 * held-out seed 101 unless told, random L4, 2 routers). The p50 ratio depends
 * on load: at light load every router is near the engine's floor and a warm
 * hit saves one prefill; as round-robin starts to queue, the gap widens.
 * Prints one Markdown row per (scenario, rate); TTFT over every request sent.
 *
 *   node packages/bench/bench/sweep.ts [--seed N] [--duration S] [seed:60,80,100,120 chat:10,15,20 …]
 *
 * --duration: simulated seconds per run (default: each scenario's own).
 * Smoke: --duration 2 seed:60
 */
import { p50AllRequests, p99AllRequests } from '../src/goals.ts';
import { DesPool, type DesJob } from '../src/pool.ts';
import { SCENARIOS } from '../src/scenarios.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values: o, positionals } = scriptArgs(import.meta.url, {
  allowPositionals: true,
  options: { seed: { type: 'string', default: '101' }, duration: { type: 'string', default: '0' } },
});
const seed = Number(o.seed);
const duration = Number(o.duration);
const specs =
  positionals.length > 0
    ? positionals
    : [
        'seed:60,80,100,120',
        'chat:10,15,20,25',
        'fanout:2,3,4,5,6',
        'lora:10,20,30',
        'pianos:10,20,30',
        'longctx:7,10,14,18',
        'trace:1,2,3',
      ];
const pool = new DesPool();
const rows = specs.flatMap((spec) => {
  const [name, rates] = spec.split(':') as [string, string];
  const scenario = SCENARIOS[name];
  if (scenario === undefined) throw new Error(`unknown scenario "${name}"`);
  return rates
    .split(',')
    .map(Number)
    .map(async (rate) => {
      const job = (policy: string): DesJob => ({
        scenario: name,
        seed,
        rate,
        duration,
        replicas: 0,
        routers: 2,
        l4: 'random',
        policy,
      });
      const [w, rr] = await Promise.all([pool.run(job('warmpath')), pool.run(job('round-robin'))]);
      if (!w.ok || !rr.ok) return `| ${name} | ${rate} | failed: ${!w.ok ? w.error : !rr.ok ? rr.error : ''} |`;
      const wp = p50AllRequests(w.result);
      const rp = p50AllRequests(rr.result);
      const mark = rate === scenario.defaults.rate ? ' (default)' : '';
      const f = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '∞');
      return `| ${name} | ${rate}${mark} | ${f(wp)} / ${f(p99AllRequests(w.result))} | ${f(rp)} / ${f(p99AllRequests(rr.result))} | ${(wp / rp).toFixed(2)}× | ${w.result.completed}/${w.result.requests} | ${rr.result.completed}/${rr.result.requests} |`;
    });
});
console.log(
  `| scenario | rate | warmpath p50 / p99 | round-robin p50 / p99 | p50 ratio | warmpath answered | round-robin answered |  (seed ${seed})`,
);
console.log('|---|--:|--:|--:|--:|--:|--:|');
for (const row of await Promise.all(rows)) console.log(row);
await pool.close();
