/**
 * The ablation bench (bench/ablation.ts, src/ablation.ts): which jobs it
 * runs, how it reads them, and one tiny run end to end (one scenario, one
 * seed, one router, two simulated seconds) that writes its JSON.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ablationGroups,
  type AblationConfig,
  type AblationRun,
  runKey,
  seedRatio,
  summarize,
} from '../src/ablation.ts';

const CFG: AblationConfig = {
  scenarios: ['seed', 'chat'],
  seeds: [1, 2],
  routers: [1, 4],
  steps: ['slice', 'queue-limit'],
  l4: 'random',
  duration: 0,
};

const run = (
  scenario: string,
  seed: number,
  routers: number,
  off: string,
  p50: number,
  p99 = 2 * p50,
): AblationRun => ({
  scenario,
  seed,
  routers,
  off,
  ok: true,
  p50,
  p99,
  hitRate: 0.5,
  seconds: 1,
});

describe('ablationGroups', () => {
  it('lists one group per workload, seed-major, whole first, skipping the runs already done', () => {
    const groups = ablationGroups(CFG, new Set([runKey({ scenario: 'seed', seed: 1, routers: 4, off: 'slice' })]));
    expect(groups.map((g) => `${g[0]!.scenario}/${g[0]!.seed}`)).toEqual(['seed/1', 'chat/1', 'seed/2', 'chat/2']);
    expect(groups[0]!.map((j) => `${j.routers}:${j.routerOverrides?.placementOff ?? ''}`)).toEqual([
      '1:',
      '1:slice',
      '1:queue-limit',
      '4:',
      '4:queue-limit',
    ]);
    expect(groups.every((g) => g.every((j) => j.policy === 'warmpath' && j.l4 === 'random'))).toBe(true);
  });

  it("switches several steps off together for 'a+b'", () => {
    const [job] = ablationGroups({ ...CFG, routers: [4], steps: ['slice+share'] }, new Set())[0]!.slice(1);
    expect(job!.routerOverrides).toEqual({ placementOff: 'slice,share' });
  });

  it('runs at 1 router only the steps asked for there', () => {
    const groups = ablationGroups({ ...CFG, oneRouterSteps: ['queue-limit'] }, new Set());
    expect(groups[0]!.filter((j) => j.routers === 1).map((j) => j.routerOverrides?.placementOff ?? '')).toEqual([
      '',
      'queue-limit',
    ]);
  });
});

describe('seedRatio', () => {
  it('is the geometric mean over seeds, counting the seeds above and under 1', () => {
    const r = seedRatio([
      [2, 1],
      [1, 2],
      [4, 4],
    ])!;
    expect(r.mean).toBeCloseTo(1, 9);
    expect(r).toMatchObject({ worse: 1, better: 1, seeds: 3 });
  });

  it('counts an unanswered TTFT as infinite, and has nothing to say without a pair', () => {
    expect(seedRatio([[null, 100]])!.mean).toBe(Infinity);
    expect(seedRatio([[null, null]])).toBeUndefined();
  });
});

describe('summarize', () => {
  it('gives off / whole per router count and the N/1 ratio with and without the step', () => {
    const runs = [1, 2].flatMap((seed) => [
      run('seed', seed, 1, '', 100),
      run('seed', seed, 4, '', 110),
      run('seed', seed, 4, 'slice', 121),
    ]);
    const cells = summarize(runs, { ...CFG, scenarios: ['seed'], steps: ['slice'], oneRouterSteps: [] });
    // slice was not run at 1 router: it reads as whole there.
    expect(cells.map((c) => [c.routers, c.p50!.mean])).toEqual([
      [1, 1],
      [4, expect.closeTo(1.1, 9)],
    ]);
    const four = cells[1]!;
    expect(four.p50).toMatchObject({ worse: 2, better: 0, seeds: 2 });
    expect(four.scaleWhole!.p50!.mean).toBeCloseTo(1.1, 9);
    expect(four.scaleOff!.p50!.mean).toBeCloseTo(1.21, 9);
    expect(four.hitPt).toBe(0);
  });
});

describe('bench/ablation.ts', () => {
  it('runs a tiny ablation and saves every run with its configuration', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ablation-'));
    try {
      const json = join(dir, 'a.json');
      const script = new URL('../bench/ablation.ts', import.meta.url).pathname;
      const args = ['--scenarios', 'seed', '--seeds', '1', '--routers', '1', '--steps', 'slice', '--duration', '2'];
      const out = execFileSync(process.execPath, [script, ...args, '--json', json], { encoding: 'utf8' });
      const file = JSON.parse(readFileSync(json, 'utf8')) as {
        invocations: Array<AblationConfig & { commit: string; finished?: string }>;
        runs: AblationRun[];
      };
      expect(file.invocations).toHaveLength(1);
      expect(file.invocations[0]).toMatchObject({ scenarios: ['seed'], seeds: [1], routers: [1], steps: ['slice'] });
      expect(file.invocations[0]!.finished).toBeDefined();
      expect(file.runs.map((r) => [r.off, r.ok])).toEqual(
        expect.arrayContaining([
          ['', true],
          ['slice', true],
        ]),
      );
      expect(file.runs.every((r) => r.p50! > 0 && r.p99! >= r.p50! && r.hitRate! >= 0)).toBe(true);
      // With one router, slice does nothing: the same figures.
      const [a, b] = file.runs;
      expect([a!.p50, a!.p99, a!.hitRate]).toEqual([b!.p50, b!.p99, b!.hitRate]);
      expect(out).toContain('| slice | seed | 1 | 1.000 (0↑0↓/1) | 1.000 (0↑0↓/1) | 0.00 |');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
