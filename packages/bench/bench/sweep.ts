/**
 * Load sweep: warmpath against round-robin as the arrival rate grows (DES).
 * The p50 ratio depends on load: at light load every router is near the
 * engine's floor and a warm hit saves one prefill; as round-robin starts to
 * queue, the gap widens. Prints one Markdown row per (scenario, rate).
 *
 *   node packages/bench/bench/sweep.ts [seed:60,80,100,120 chat:10,15,20 fanout:2,3,4,5]
 */
import { p50AllRequests } from '../src/goals.ts';
import { runDes } from '../src/des/run.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../src/scenarios.ts';

const specs = process.argv.length > 2 ? process.argv.slice(2) : ['seed:60,80,100,120', 'chat:10,15,20,25', 'fanout:2,3,4,5,6'];
console.log('| scenario | rate | warmpath p50 / p99 | round-robin p50 (all requests) | ratio | warmpath answered | round-robin answered |');
console.log('|---|--:|--:|--:|--:|--:|--:|');
for (const spec of specs) {
  const [name, rates] = spec.split(':') as [string, string];
  const scenario = SCENARIOS[name];
  if (scenario === undefined) throw new Error(`unknown scenario "${name}"`);
  for (const rate of rates.split(',').map(Number)) {
    const duration = scenario.defaults.duration;
    const plan = scenario.build({ seed: 1, rate, duration, model: DEFAULT_MODEL });
    const run = (policy: string) => runDes({ scenario, plan, policy, replicas: scenario.fleet.replicas, routers: 2, durationS: duration });
    const w = await run('warmpath');
    const rr = await run('round-robin');
    const wp = p50AllRequests(w);
    const rp = p50AllRequests(rr);
    const mark = rate === scenario.defaults.rate ? ' (default)' : '';
    console.log(`| ${name} | ${rate}${mark} | ${wp.toFixed(0)} / ${w.ttft_ms.p99.toFixed(0)} | ${Number.isFinite(rp) ? rp.toFixed(0) : '∞'} | ${(wp / rp).toFixed(2)}× | ${w.completed}/${w.requests} | ${rr.completed}/${rr.requests} |`);
  }
}
