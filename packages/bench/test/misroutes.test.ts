/**
 * The misroute figures: the rows kept from bench reports, and the doc's
 * table rendered from them.
 */
import { describe, expect, it } from 'vitest';
import { misroutesJson, misrouteTable } from '../src/misroutes.ts';
import { receiptsRow, type BenchReport, type PolicyResult } from '../src/report.ts';

function report(scenario: string, routers: number, misroutes: number, hits: number): BenchReport {
  const row = (policy: string): PolicyResult =>
    ({
      policy,
      routers,
      cache_hit_rate: 0.5,
      receipts: receiptsRow({ judged: 2 * hits, expectedHits: hits, misroutes, errorTokens: 100 * hits }),
    }) as PolicyResult;
  return { scenario, mode: 'des', config: {}, results: [row('warmpath'), row('round-robin')] };
}

describe('misroute figures', () => {
  it("keeps warmpath's receipts per scenario, routers and seed, and renders each seed's rate and the worst", () => {
    const json = misroutesJson(
      [
        { report: report('chat', 1, 1, 200), seed: 101 },
        { report: report('chat', 1, 3, 100), seed: 102 },
        { report: report('trace', 4, 0, 50), seed: 101 },
      ],
      'node packages/bench/bench/misroutes.ts',
    );
    expect(json.rows).toHaveLength(3);
    expect(json.rows[1]).toMatchObject({ scenario: 'chat', seed: 102, misroutes: 3, misroute_rate: 0.03 });
    const table = misrouteTable(json, 'docs/data/misroutes.json');
    expect(table).toContain('| chat | 1 | 0.50% (1/200) | 3.00% (3/100) | 3.00% | 50 tokens |');
    expect(table).toContain('| trace | 4 | 0.00% (0/50) | — | 0.00% | 50 tokens |');
    expect(table).toContain('from `docs/data/misroutes.json`, made by `node packages/bench/bench/misroutes.ts`');
  });
});
