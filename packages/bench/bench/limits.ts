/**
 * How close routers that share usage only over gossip hold a global token
 * limit: the `tenants` scenario's flooding tenant (five times its limit)
 * through 1, 4 and 16 routers, random and sticky L4, in the admission DES
 * (packages/bench/src/des/limits.ts), per seed; and a router cut off from
 * the others (its 1/N fallback). Writes the JSON docs/TENANTS.md's
 * 'Global limits' table is generated from (bench/scoreboard.ts).
 *
 *   node packages/bench/bench/limits.ts [--seeds 101,102,103,104] [--routers 1,4,16]
 *     [--duration 180] [--rate 16] [--gossip-delay uniform:5:20] [--loss 0] [--json docs/data/limits.json]
 *
 * Tune on seeds 1–3; report on the held-out seeds 101–104 (the default).
 * Smoke: --seeds 1 --routers 1,4 --duration 70
 */
import { writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { limitsMatrix, type LimitsJson } from '../src/limits-table.ts';
import { SCENARIOS } from '../src/scenarios.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    seeds: { type: 'string', default: '101,102,103,104' },
    routers: { type: 'string', default: '1,4,16' },
    duration: { type: 'string', default: String(SCENARIOS.tenants!.defaults.duration) },
    rate: { type: 'string', default: String(SCENARIOS.tenants!.defaults.rate) },
    'gossip-delay': { type: 'string', default: 'uniform:5:20' },
    loss: { type: 'string', default: '0' },
    json: { type: 'string' },
  },
});
const list = (s: string): number[] => s.split(',').map(Number);
const started = performance.now();
const json: LimitsJson = {
  meta: {
    command: `node packages/bench/bench/limits.ts ${process.argv.slice(2).join(' ')}`.trim(),
    commit: commit(),
  },
  ...limitsMatrix({
    seeds: list(values.seeds),
    routers: list(values.routers),
    duration: Number(values.duration),
    rate: Number(values.rate),
    gossip: { delay: values['gossip-delay'], loss: Number(values.loss) },
  }),
};
for (const r of json.runs)
  console.log(
    `${r.l4.padEnd(6)} routers ${String(r.routers).padStart(2)} seed ${r.seed}: admitted/limit mean ${r.mean.toFixed(4)} min ${r.min.toFixed(4)} max ${r.max.toFixed(4)}${r.partitioned ? ' (partitioned)' : ''}`,
  );
console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`);
if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(json, null, 1)}\n`);

function commit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}
