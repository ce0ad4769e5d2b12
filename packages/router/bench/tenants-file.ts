/**
 * Tenants file bench: a file of N tenants (two keys each, limits), as JSON
 * and as YAML: the time to parse and validate it, and the heap it holds once
 * every tenant has sent a request (window allocated, usage booked), after
 * forced collections (docs/TENANTS.md, "Memory").
 *
 *   node_modules/.bin/node packages/router/bench/tenants-file.ts [--tenants 10000] [--format json|yaml]
 *
 * Smoke: --tenants 500
 *
 * One format per process, so neither run's garbage or shared strings blur the other's heap.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { stringify } from 'yaml';
import { parseTenants } from '../src/tenants/file.ts';
import { Tenancy } from '../src/tenants/tenancy.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: { tenants: { type: 'string', default: '10000' }, format: { type: 'string', default: 'json' } },
});
const n = Number(values.tenants);
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const doc = {
  tenants: Array.from({ length: n }, (_, i) => ({
    name: `tenant-${i}`,
    keys: [`sk-tenant-${i}-a-0123456789abcdef`, `sk-tenant-${i}-b-0123456789abcdef`],
    weight: 1 + (i % 3),
    priorities: ['standard', 'batch'],
    limits: { requestsPerMinute: 600, tokensPerMinute: 100_000, concurrent: 16 },
  })),
};

function heap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const format = values.format;
const text = format === 'yaml' ? stringify(doc) : JSON.stringify(doc);
{
  const before = heap();
  const t0 = performance.now();
  const tenancy = new Tenancy(parseTenants(text, format));
  const parseMs = performance.now() - t0;
  for (const t of tenancy.tenants.values()) {
    const v = tenancy.limiter.admit(t, 500, 5_000);
    if (v.ok) tenancy.limiter.release(v.ticket);
    tenancy.usage.record(t.name, 'model-a', { promptTokens: 300, cachedTokens: 100, completionTokens: 200 }, 5_000);
  }
  const mib = (heap() - before) / 2 ** 20;
  console.log(
    `${format}: ${n} tenants, parse and validate ${(parseMs / 1e3).toFixed(2)} s, heap ${mib.toFixed(1)} MiB`,
  );
  if (tenancy.tenants.size !== n) throw new Error('lost tenants');
}
