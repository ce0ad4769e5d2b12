/**
 * The misroute figures: warmpath in the discrete-event simulator on every
 * scenario, at each router count and workload seed, one `warmpath bench`
 * run each; their receipts folded into one JSON (misroutes.ts), which
 * scoreboard.ts renders into docs/OPERATIONS.md ("Receipts").
 *
 *   node packages/bench/bench/misroutes.ts [--scenarios seed,chat,…] [--seeds 101,102,103,104]
 *     [--routers 1,4] [--runs DIR] [--duration S] [--json docs/data/misroutes.json]
 *
 * --runs: where each run's bench JSON goes; a run whose JSON is already
 *   there is not made again (an interrupted sweep resumes).
 * --duration: simulated seconds of arrivals (0 = each scenario's own).
 * Smoke: --scenarios seed --seeds 1 --routers 1 --duration 2 --json /tmp/warmpath-misroutes-smoke.json
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { misroutesJson } from '../src/misroutes.ts';
import type { BenchReport } from '../src/report.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const ROOT = join(import.meta.dirname, '../../..');
const CLI = join(ROOT, 'packages/cli/src/main.ts');
const { values } = scriptArgs(import.meta.url, {
  options: {
    scenarios: { type: 'string', default: 'seed,chat,fanout,lora,pianos,trace,longctx' },
    seeds: { type: 'string', default: '101,102,103,104' },
    routers: { type: 'string', default: '1,4' },
    runs: { type: 'string' },
    duration: { type: 'string', default: '0' },
    json: { type: 'string', default: join(ROOT, 'docs/data/misroutes.json') },
  },
});
const list = (s: string): string[] => s.split(',').filter((x) => x !== '');
const dir = values.runs !== undefined ? resolve(values.runs) : mkdtempSync(join(tmpdir(), 'warmpath-misroutes-'));
mkdirSync(dir, { recursive: true });
const runs: Array<{ report: BenchReport; seed: number }> = [];
for (const scenario of list(values.scenarios))
  for (const routers of list(values.routers))
    for (const seed of list(values.seeds)) {
      const file = join(dir, `${scenario}-r${routers}-s${seed}.json`);
      if (!existsSync(file)) {
        const args = ['bench', '--scenario', scenario, '--mode', 'des', '--policies', 'warmpath'];
        args.push('--routers', routers, '--seed', seed, '--duration', values.duration, '--json', file);
        const r = spawnSync(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
        if (r.status !== 0) throw new Error(`warmpath ${args.join(' ')} exited with ${r.status}`);
      }
      const report = JSON.parse(readFileSync(file, 'utf8')) as BenchReport;
      runs.push({ report, seed: Number(seed) });
      const row = report.results.find((x) => x.policy === 'warmpath')?.receipts;
      console.log(`${scenario}, ${routers} routers, seed ${seed}: ${JSON.stringify(row)}`);
    }
const command = `node packages/bench/bench/misroutes.ts --scenarios ${values.scenarios} --seeds ${values.seeds} --routers ${values.routers}${values.duration !== '0' ? ` --duration ${values.duration}` : ''}`;
writeFileSync(values.json, `${JSON.stringify(misroutesJson(runs, command), null, 1)}\n`);
console.log(`wrote ${values.json}`);
