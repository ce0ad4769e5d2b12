/**
 * Goodput (src/goodput.ts): the grid's highest rate within the SLO with every
 * lower rate within it, refined by bisection; and the disaggregation goals'
 * rows (src/pd-goals.ts): a ratio against its rival, none met at zero.
 */
import { describe, expect, it } from 'vitest';
import { sweep, type GoodputCase } from '../src/goodput.ts';
import { PD_PLANS, pdBounds, pdCases, pdGoalRows, withBounds, type PdGoalsJson, type PdRun } from '../src/pd-goals.ts';
import type { DesJob, DesPool, JobOutcome } from '../src/pool.ts';
import type { PolicyResult } from '../src/report.ts';

/** A pool whose runs meet the SLO exactly when `within(rate)`; it counts its runs. */
function fakePool(within: (rate: number) => boolean) {
  const rates: number[] = [];
  const pool = {
    run(job: DesJob): Promise<JobOutcome> {
      rates.push(job.rate);
      const ok = within(job.rate);
      const result = { ttft_ms: { p99: ok ? 1_000 : 9_000 }, itl_ms: { p99: 20 } } as unknown as PolicyResult;
      return Promise.resolve({ ok: true, job, result, seconds: 0 });
    },
  } as unknown as DesPool;
  return { pool, rates };
}

const C: GoodputCase = { scenario: 'longdoc', fleet: '4:6', policy: 'warmpath', routers: 2 };

describe('goodput', () => {
  it('the grid, then bisection toward the first rate past the SLO', async () => {
    const { pool, rates } = fakePool((r) => r <= 13.3);
    const s = await sweep(pool, C, { seed: 1, duration: 30, rates: [10, 12, 14, 16], refine: 3 });
    expect(s.goodput).toBe(13.25);
    expect(rates).toEqual([10, 12, 14, 16, 13, 13.5, 13.25]);
    expect(s.cells.map((x) => x.rate)).toEqual([10, 12, 13, 13.25, 13.5, 14, 16]);
  });

  it('a rate within the SLO after one past it does not count; none within is 0', async () => {
    const gap = await sweep(fakePool((r) => r !== 12).pool, C, {
      seed: 1,
      duration: 30,
      rates: [10, 12, 14],
      refine: 0,
    });
    expect(gap.goodput).toBe(10);
    const none = await sweep(fakePool(() => false).pool, C, { seed: 1, duration: 30, rates: [10, 12], refine: 2 });
    expect(none.goodput).toBe(0);
  });
});

describe('the disaggregation goals', () => {
  const LD = PD_PLANS.longdoc.pd;
  const runs = (goodput: (name: string) => number): PdRun[] =>
    pdCases().map(({ name, case: c }) => ({ name, case: c, sweep: { cells: [], goodput: goodput(name) } }));

  it('judges each goal by its ratio; the best peer is named', () => {
    const rows = pdGoalRows(
      101,
      runs((n) =>
        n === 'longdoc warmpath'
          ? 12
          : n === 'longdoc llm-d-precise'
            ? 10
            : n.startsWith('mixed')
              ? n === 'mixed conditional'
                ? 90
                : 80
              : 9,
      ),
    );
    const row = (goal: RegExp) => rows.find((r) => goal.test(r.goal))!;
    expect(row(/best peer/)).toMatchObject({ pass: true, measured: '12 vs 10 req/s (1.20×), llm-d-precise' });
    expect(row(/aggregated/).pass).toBe(true);
    expect(row(/16 routers/).pass).toBe(true);
    expect(row(/always split/)).toMatchObject({ pass: true, measured: '90 vs 80 req/s (1.13×)' });
    expect(row(/best split each/)).toMatchObject({
      pass: true,
      measured: `12 vs 10 req/s (1.20×): warmpath ${LD} vs llm-d-precise ${LD}`,
    });
  });

  it('judges each policy on its own best split: a peer strong on another split fails the margin', () => {
    const rows = pdGoalRows(
      101,
      runs((n) =>
        n === 'longdoc warmpath' ? 12 : n === 'longdoc dynamo-kv 3:7' ? 11 : n.startsWith('mixed') ? 80 : 9,
      ),
    );
    const row = (goal: RegExp) => rows.find((r) => goal.test(r.goal))!;
    expect(row(/best peer P\/D/).pass).toBe(true);
    expect(row(/best split each/)).toMatchObject({
      pass: false,
      measured: `12 vs 11 req/s (1.09×): warmpath ${LD} vs dynamo-kv 3:7`,
    });
  });

  it('marks a row whose target is over the work bound beyond any placement, and only that row', () => {
    const bound = (rate: number) => ({ rate, prefillS: 0, decodeS: 0, fixedS: 0 });
    const rows = pdGoalRows(
      101,
      runs((n) => (n === 'longdoc warmpath' ? 12 : n === 'longdoc dynamo-kv 3:7' ? 11 : 9)),
      { longdoc: bound(13), mixed: bound(1_000) },
    );
    const row = (goal: RegExp) => rows.find((r) => goal.test(r.goal))!;
    // 1.2 × 11 = 13.2 req/s is over 13; 1.2 × 9 = 10.8 on the same fleet is not.
    expect(row(/best split each/).beyond).toMatch(/beyond any placement: 13.2 req\/s is over the work bound 13/);
    expect(row(/best peer P\/D/).beyond).toBeUndefined();
    expect(row(/always split/).beyond).toBeUndefined();
  });

  it('recomputes the bounds and rows of saved runs from the plans, keeping the runs and naming the commit', () => {
    const saved = runs((n) => (n === 'longdoc warmpath' ? 12 : n === 'longdoc dynamo-kv 3:7' ? 11 : 9));
    const stale = {
      longdoc: { rate: 100, prefillS: 0, decodeS: 0, fixedS: 0 },
      mixed: { rate: 1e3, prefillS: 0, decodeS: 0, fixedS: 0 },
    };
    const json: PdGoalsJson = {
      meta: {
        command: 'goodput.ts --goals',
        commit: 'abc1234',
        slo: { ttftMs: 5_000, itlMs: 60 },
        duration: 5,
        refine: 3,
      },
      seeds: [{ seed: 101, runs: saved, bounds: stale }],
      rows: pdGoalRows(101, saved, stale),
    };
    const out = withBounds(json, { command: 'goodput.ts --goals --bounds-only', commit: 'def5678' });
    expect(out.meta).toEqual({
      ...json.meta,
      bounds: { command: 'goodput.ts --goals --bounds-only', commit: 'def5678' },
    });
    expect(out.seeds[0]!.runs).toEqual(saved);
    const fresh = pdBounds(101, 5);
    expect(out.seeds[0]!.bounds).toEqual(fresh);
    expect(out.rows).toEqual(pdGoalRows(101, saved, fresh));
    // 1.2 × 11 = 13.2 req/s is over this short plan's bound, not over the stale one.
    expect(json.rows.some((r) => r.beyond !== undefined)).toBe(false);
    expect(out.rows.find((r) => /best split each/.test(r.goal))!.beyond).toMatch(/beyond any placement/);
  });

  it('a zero goodput meets nothing, even against a zero rival', () => {
    expect(
      pdGoalRows(
        101,
        runs(() => 0),
      ).every((r) => !r.pass),
    ).toBe(true);
  });
});
