/**
 * The soak (src/soak.ts): a live fleet of 2 simulators, 2 agents and one
 * router under mixed streaming traffic, then a burst of 1,000 streams at
 * once; prints each process's RSS, open fds and active handles every sample
 * period, then their drift and every request's fate. Not part of the test
 * suite (packages/bench/test/soak.test.ts runs it for a few seconds).
 *
 *   node packages/bench/bench/soak.ts [--seconds 600] [--concurrency 32] [--burst 1000] [--sample-every-sec 10] [--json FILE]
 *
 * Smoke: --seconds 1 --concurrency 2 --burst 4 --sample-every-sec 1
 */
import { writeFileSync } from 'node:fs';
import { configFromProcess, type Schema } from '@warmpath/shared/runtime';
import { runSoak, SOAK_DEFAULTS } from '../src/soak.ts';

const d = SOAK_DEFAULTS;
const schema = {
  seconds: { type: 'number', default: d.seconds, min: 1, doc: 'seconds of mixed traffic' },
  concurrency: { type: 'number', default: d.concurrency, min: 1, integer: true, doc: 'requests in flight at once' },
  burst: {
    type: 'number',
    default: d.burst,
    min: 0,
    integer: true,
    doc: 'streams opened at once through the router after the soak (0 = none)',
  },
  sampleEverySec: { type: 'number', default: d.sampleEverySec, min: 0.1, doc: 'seconds between samples' },
  replicas: { type: 'number', default: d.replicas, min: 1, integer: true, doc: 'simulator replicas (h100-llama3-8b)' },
  speed: { type: 'number', default: d.speed, min: 0.01, doc: 'simulated time per wall time' },
  seed: { type: 'number', default: d.seed, integer: true, doc: 'seed of the request mix' },
  json: { type: 'string', default: '', doc: 'write the report (every sample) here' },
} as const satisfies Schema;

const { json, ...o } = configFromProcess('soak', schema, process.argv.slice(2));
const report = await runSoak(o);
if (json !== '') writeFileSync(json, JSON.stringify(report, null, 2));
const errors =
  Object.values(report.soak.errors).reduce((a, b) => a + b, 0) +
  Object.values(report.burst?.errors ?? {}).reduce((a, b) => a + b, 0);
process.exit(errors === 0 ? 0 : 1);
