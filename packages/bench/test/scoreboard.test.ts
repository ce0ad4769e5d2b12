/**
 * The docs' figures come from the saved runs only: the generators on a small
 * fixture, and the committed docs equal to what the committed JSON gives (so
 * a figure edited by hand fails here; rerun packages/bench/bench/scoreboard.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ablationTable, type AblationJson } from '../src/ablation-table.ts';
import { committedInputs, renderDocs } from '../src/docs-data.ts';
import type { GoalRow } from '../src/goals.ts';
import type { PolicyResult } from '../src/report.ts';
import {
  median,
  replaceBetween,
  resultsCharts,
  resultsTable,
  scoreboardMarkdown,
  summarizeScenarios,
  type GoalsJson,
} from '../src/scoreboard.ts';

const ROOT = join(import.meta.dirname, '../../..');

/** A result with the figures the generators read; p99 null = unanswered requests reach it. */
function result(policy: string, p50: number, p99: number | null, hit: number): PolicyResult {
  return {
    policy,
    routers: 2,
    replicas: 4,
    requests: 100,
    completed: 100,
    errors: 0,
    ttft_ms: { p50, p90: p50, p99: p99 ?? 9e9, mean: p50 },
    itl_ms: { p50: 1, p99: 1 },
    e2e_ms: { p50: 1, p99: 1 },
    output_tokens_per_s: 1,
    cache_hit_rate: hit,
    preemptions: 0,
    spills: 0,
    adapter_loads: 0,
    detail: { errorsByCode: {}, branches: {}, ttftSamples: [], ttftP50AllRequests: p50, ttftP99AllRequests: p99 },
  };
}

const entry = (seed: number, r: PolicyResult, routers = 2) => ({
  job: { scenario: 'chat', seed, routers, l4: 'random', policy: r.policy },
  result: r,
});
const row = (seed: number, goal: string, pass: boolean, beyond?: string): GoalRow => ({
  scenario: 'chat',
  seed,
  goal,
  measured: `m${seed}`,
  target: 't',
  pass,
  ...(beyond !== undefined ? { beyond } : {}),
});

const FIXTURE: GoalsJson = {
  meta: { commit: 'abc1234', command: 'warmpath goals --json x.json' },
  results: [
    entry(101, result('warmpath', 50, 100, 0.8)),
    entry(102, result('warmpath', 70, 140, 0.6)),
    entry(103, result('warmpath', 60, 120, 0.7)),
    // Not the base deployment (1 router): never in the medians.
    entry(101, result('warmpath', 1, 1, 1), 1),
    entry(101, result('llm-d-precise', 80, 300, 0.5)),
    entry(102, result('llm-d-precise', 80, 300, 0.5)),
    entry(101, result('sglang-cache-aware', 90, 200, 0.5)),
    entry(102, result('sglang-cache-aware', 95, 210, 0.5)),
    entry(101, result('round-robin', 400, null, 0.3)),
    entry(102, result('round-robin', 500, null, 0.3)),
    { job: { scenario: 'chat', seed: 103, routers: 2, l4: 'random', policy: 'dynamo-kv' }, error: 'out of memory' },
  ],
  references: {},
  rows: [
    row(101, 'TTFT p50 ≤ 0.95 × best peer', true),
    row(102, 'TTFT p50 ≤ 0.95 × best peer', true),
    row(103, 'TTFT p50 ≤ 0.95 × best peer', true),
    row(101, 'TTFT p50 ≤ 1/3 round-robin', false, 'beyond any router: under the bound'),
    row(102, 'TTFT p50 ≤ 1/3 round-robin', false, 'beyond any router: under the bound'),
    row(103, 'TTFT p50 ≤ 1/3 round-robin', true),
  ],
};

describe('the goals generators', () => {
  it('takes medians over the seeds at 2 routers, and the peer with the lowest median p99 as the best', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([1, 2, 3, 4])).toBe(2.5);
    const [chat] = summarizeScenarios(FIXTURE);
    expect(chat!.seeds).toEqual([101, 102, 103]);
    expect(chat!.warmpath).toMatchObject({ p50: 60, p99: 120, hit: 0.7, seeds: 3 });
    expect(chat!.bestPeer).toMatchObject({ policy: 'sglang-cache-aware', p50: 92.5, p99: 205 });
    expect(chat!.roundRobin?.p99).toBe(Number.POSITIVE_INFINITY);
    expect(chat).toMatchObject({ met: 1, goals: 2 });
  });

  it('writes the README table with its provenance, ∞ for an unanswered percentile and the goals met', () => {
    const t = resultsTable(FIXTURE);
    expect(t).toContain('`warmpath goals --json x.json` at commit `abc1234`');
    expect(t).toContain(
      '| chat | 60 / 120 ms, 70.0% | sglang-cache-aware: 93 / 205 ms, 50.0% | 450 / ∞ ms, 30.0% | 1 of 2 |',
    );
    expect(t).toContain('**1 of 2**');
  });

  it('writes every goal row per seed, the count met, the goals beyond any router and the failed runs', () => {
    const md = scoreboardMarkdown(FIXTURE);
    expect(md).toContain('**1 of 2 goals met**; 1 of the other 1 are beyond any router');
    expect(md).toContain('| TTFT p50 ≤ 0.95 × best peer | t | ✓ m101 | ✓ m102 | ✓ m103 | ✓ 3/3 |');
    expect(md).toContain('✗ 1/3, beyond any router');
    expect(md).toContain('- dynamo-kv on chat, seed 103, 2 routers (random): out of memory');
  });

  it('draws no bar for an unanswered percentile', () => {
    const [, p99] = resultsCharts(FIXTURE) as [
      unknown,
      { data: { datasets: Array<{ label: string; data: unknown[] }> } },
    ];
    expect(p99.data.datasets.map((d) => [d.label, d.data[0]])).toEqual([
      ['warmpath', 120],
      ['best peer', 205],
      ['round-robin', null],
    ]);
  });

  it('replaces only the text between the markers, and refuses a doc without them', () => {
    const doc = 'a\n<!-- x:begin -->\nold\n<!-- x:end -->\nb\n';
    expect(replaceBetween(doc, 'x', 'new')).toBe('a\n<!-- x:begin -->\nnew\n<!-- x:end -->\nb\n');
    expect(replaceBetween(replaceBetween(doc, 'x', 'new'), 'x', 'new')).toBe(replaceBetween(doc, 'x', 'new'));
    expect(() => replaceBetween('no markers', 'x', 'new')).toThrow(/x:begin/);
  });
});

describe('the ablation generator', () => {
  const run = (seed: number, routers: number, off: string, p50: number, p99: number | null, hit: number) => ({
    scenario: 'seed',
    seed,
    routers,
    off,
    ok: true,
    p50,
    p99,
    hitRate: hit,
  });
  const json: AblationJson = {
    invocations: [{ commit: 'abcdef0123456789', l4: 'random' }],
    runs: [
      run(1, 1, '', 100, 400, 0.8),
      run(2, 1, '', 100, 400, 0.82),
      run(1, 1, 'balance', 100, 400, 0.79),
      run(2, 1, 'balance', 400, 1600, 0.79),
      run(1, 1, 'horizon', 100, 400, 0.8),
      run(2, 1, 'horizon', 100, 400, 0.82),
      run(1, 4, '', 100, 400, 0.8),
      run(1, 4, 'balance', 100, null, 0.8),
      {
        scenario: 'seed',
        seed: 1,
        routers: 4,
        off: 'slice',
        ok: false,
        p50: null,
        p99: null,
        hitRate: null,
        error: 'heap',
      },
    ],
  };

  it('gives the whole policy as ranges, each step as geometric-mean ratios and points, "=" when nothing moved', () => {
    const t = ablationTable(json);
    expect(t).toContain('at commit `abcdef0`');
    expect(t).toContain('**1 router**');
    expect(t).toContain('| (none: warmpath whole) | 100 / 400 ms, 80.0–82.0% |');
    // Seeds: 1× and 4× → geometric mean 2×; hit −1 and −3 points → −2.
    expect(t).toContain('| `balance` | 2.00 / 2.00, −2.0 pt |');
    expect(t).toContain('| `horizon` | = |');
    expect(t).toContain('**4 routers**');
    expect(t).toContain('| `balance` | 1.00 / ∞, ±0.0 pt |');
    expect(t).toContain('| `slice` | — |');
    expect(t).toContain('Failed runs: slice on seed, seed 1, 4 routers.');
  });
});

describe('the committed docs', () => {
  it('are what the committed JSON gives (rerun packages/bench/bench/scoreboard.ts after a new run)', () => {
    const docs = renderDocs(ROOT, committedInputs(ROOT));
    expect(docs.size).toBeGreaterThanOrEqual(2);
    for (const [path, text] of docs) expect(readFileSync(join(ROOT, path), 'utf8'), path).toBe(text);
  });
});
