/**
 * A router's memory per tenant is bounded: 10,000 tenants in the file, each
 * with two keys and limits, every one of them having sent a request (its
 * window allocated, its usage booked), cost under 50 MB of heap
 * (docs/TENANTS.md, "Memory").
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { parseTenants } from '../src/tenants/file.ts';
import { Tenancy } from '../src/tenants/tenancy.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** A tenants file of `n` tenants, as JSON (what a file of thousands should be: docs/TENANTS.md, "Memory"). */
function tenantsJson(n: number): string {
  const tenants = [];
  for (let i = 0; i < n; i++)
    tenants.push({
      name: `tenant-${i}`,
      keys: [`sk-tenant-${i}-a-0123456789abcdef`, `sk-tenant-${i}-b-0123456789abcdef`],
      weight: 1 + (i % 3),
      priorities: ['standard', 'batch'],
      limits: { requestsPerMinute: 600, tokensPerMinute: 100_000, concurrent: 16 },
    });
  return JSON.stringify({ tenants });
}

describe('tenant memory', () => {
  it('10,000 tenants, all active, cost under 50 MB', () => {
    const text = tenantsJson(10_000);
    const before = heap();
    const tenancy = new Tenancy(parseTenants(text, 'mem'));
    for (const t of tenancy.tenants.values()) {
      const v = tenancy.limiter.admit(t, 500, 5_000);
      if (!v.ok) throw new Error('refused');
      tenancy.limiter.release(v.ticket);
      tenancy.usage.record(t.name, 'model-a', { promptTokens: 300, cachedTokens: 100, completionTokens: 200 }, 5_000);
    }
    const grown = heap() - before;
    expect(tenancy.tenants.size).toBe(10_000);
    expect(tenancy.byKey('sk-tenant-9999-b-0123456789abcdef')?.name).toBe('tenant-9999');
    console.log(`10,000 tenants: ${(grown / 2 ** 20).toFixed(1)} MiB of heap`);
    expect(grown).toBeLessThan(50 * 2 ** 20);
  });
});
