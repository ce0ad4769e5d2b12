import { describe, expect, it } from 'vitest';
import { checkReport, checkRouters, goalsTable, p50AllRequests, seedsSummary } from '../src/goals.ts';
import { p50OverAllRequests, type BenchReport, type PolicyResult } from '../src/report.ts';

function result(policy: string, o: { p50?: number; p99?: number; hit?: number; loads?: number; errors?: number; preemptions?: number; routers?: number } = {}): PolicyResult {
  const errors = o.errors ?? 0;
  return {
    policy,
    routers: o.routers ?? 2,
    replicas: 4,
    requests: 100,
    completed: 100 - errors,
    errors,
    ttft_ms: { p50: o.p50 ?? 100, p90: 200, p99: o.p99 ?? 300, mean: 120 },
    itl_ms: { p50: 10, p99: 20 },
    e2e_ms: { p50: 500, p99: 900 },
    output_tokens_per_s: 1000,
    cache_hit_rate: o.hit ?? 0.5,
    preemptions: o.preemptions ?? 0,
    spills: 0,
    adapter_loads: o.loads ?? 0,
  };
}

const report = (scenario: string, results: PolicyResult[]): BenchReport => ({ scenario, mode: 'des', config: {}, results });

describe('benchmark goals', () => {
  it('passes and fails each goal on the numbers', () => {
    const good = checkReport(
      report('seed', [
        result('warmpath', { p50: 100, p99: 400, hit: 0.8 }),
        result('round-robin', { p50: 310, p99: 3000, hit: 0.6 }),
        result('sglang-cache-aware', { p99: 500 }),
        result('kubeai-prefix-hash', { p99: 450 }),
        result('oracle', { hit: 0.82 }),
      ]),
    );
    expect(good.map((g) => [g.goal, g.pass])).toEqual([
      ['hit rate ≥ 95% of oracle', true],
      ['TTFT p50 ≤ 1/3 round-robin', true],
      ['TTFT p99 below every peer', true],
      ['no preemptions, all answered', true],
    ]);
    const bad = checkReport(
      report('seed', [
        result('warmpath', { p50: 150, p99: 460, hit: 0.7, errors: 1 }),
        result('round-robin', { p50: 310 }),
        result('kubeai-prefix-hash', { p99: 450 }),
        result('oracle', { hit: 0.8 }),
      ]),
    );
    expect(bad.every((g) => !g.pass)).toBe(true);
    expect(goalsTable(bad)).toContain('✗');
  });

  it('lora counts adapter loads against every peer; routers compare 1 and 4 by relative hit rate', () => {
    const lora = checkReport(report('lora', [result('warmpath', { loads: 10 }), result('dynamo-kv', { loads: 11 }), result('llm-d-approx', { loads: 10 })]));
    expect(lora.find((g) => g.goal.startsWith('fewer adapter loads'))).toMatchObject({ pass: false, measured: '10 vs llm-d-approx 10' });
    const one = report('chat', [result('warmpath', { hit: 0.8, routers: 1 }), result('sglang-cache-aware', { hit: 0.8, routers: 1 })]);
    const four = (hit: number) => report('chat', [result('warmpath', { hit, routers: 4 }), result('sglang-cache-aware', { hit: 0.5, routers: 4 })]);
    expect(checkRouters(one, four(0.79))[0]!.pass).toBe(true);
    expect(checkRouters(one, four(0.77))[0]!.pass).toBe(false);
    expect(checkRouters(one, four(0.79))[0]!.measured).toContain('sglang 80.0%→50.0%');
  });
});

describe('p50 over every request sent', () => {
  it('counts unanswered requests as the slowest', () => {
    const answered = Array.from({ length: 60 }, (_, i) => 60 - i);
    expect(p50OverAllRequests(answered, 100)).toBe(50); // the 50th of 100 requests: the 50th-fastest answered one
    expect(p50OverAllRequests(answered.slice(0, 40), 100)).toBe(Number.POSITIVE_INFINITY);
    expect(p50OverAllRequests([3, 1, 2], 3)).toBe(2);
    // Reports carry it (null in JSON when more than half went unanswered); without it, answered only.
    const base = result('round-robin', { p50: 30, errors: 40 });
    expect(p50AllRequests({ ...base, detail: { errorsByCode: {}, branches: {}, ttftSamples: [], ttftP50AllRequests: 50 } })).toBe(50);
    expect(p50AllRequests({ ...base, detail: { errorsByCode: {}, branches: {}, ttftSamples: [], ttftP50AllRequests: null } })).toBe(Number.POSITIVE_INFINITY);
    expect(p50AllRequests(base)).toBe(30);
  });

  it('summarizes goals across seeds, naming the seeds that missed', () => {
    const row = (pass: boolean, measured: string) => ({ scenario: 'chat', goal: 'TTFT p50 ≤ 1/3 round-robin', measured, target: '≤ 0.33×', pass });
    const table = seedsSummary([
      { seed: 1, rows: [row(true, '0.28×')] },
      { seed: 2, rows: [row(false, '0.35×')] },
      { seed: 3, rows: [row(true, '0.30×')] },
    ]);
    expect(table).toContain('| chat | TTFT p50 ≤ 1/3 round-robin | 2/3; missed on seed 2 (0.35×) |');
  });
});
