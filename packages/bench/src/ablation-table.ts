/**
 * docs/ABLATION.md's table, written from the saved ablation run
 * (packages/bench/bench/ablation.ts, docs/data/ablation.json): warmpath with
 * one placement step off against warmpath whole, per scenario.
 * Steps: pair each run with the whole policy's run of the same (scenario,
 * seed) → ratios of TTFT p50 / p99 (over every request sent) and the hit
 * rate's difference in points → medians over the seeds → one Markdown row per
 * step. Pure; bench/scoreboard.ts does the I/O.
 */
import { p50AllRequests, p99AllRequests } from './goals.ts';
import type { PolicyResult } from './report.ts';
import { median, provenance, type RunMeta } from './scoreboard.ts';

/** One saved ablation job: the DES job (its `routerOverrides.placementOff` names the step off) and its outcome. */
export interface AblationEntry {
  job: { scenario: string; seed: number; routerOverrides?: { placementOff?: string } };
  result?: PolicyResult;
  error?: string;
}

export interface AblationJson {
  meta?: RunMeta;
  results: AblationEntry[];
}

const offOf = (e: AblationEntry): string => e.job.routerOverrides?.placementOff ?? '';
const ratio = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '∞');

/** The whole policy's absolute figures per scenario, then one row per step: median ratios and hit-rate change. */
export function ablationTable(json: AblationJson): string {
  const ok = json.results.filter((e): e is AblationEntry & { result: PolicyResult } => e.result !== undefined);
  const scenarios = [...new Set(json.results.map((e) => e.job.scenario))];
  const seeds = [...new Set(json.results.map((e) => e.job.seed))].sort((a, b) => a - b);
  const steps = [...new Set(json.results.map(offOf))].filter((s) => s !== '');
  const whole = new Map(ok.filter((e) => offOf(e) === '').map((e) => [`${e.job.scenario}|${e.job.seed}`, e.result]));
  const absolute = scenarios.map((sc) => {
    const rs = ok.filter((e) => e.job.scenario === sc && offOf(e) === '').map((e) => e.result);
    if (rs.length === 0) return 'failed';
    const p50 = median(rs.map(p50AllRequests));
    const p99 = median(rs.map(p99AllRequests));
    return `${Math.round(p50)} / ${Number.isFinite(p99) ? Math.round(p99) : '∞'} ms, ${(median(rs.map((r) => r.cache_hit_rate)) * 100).toFixed(1)}%`;
  });
  const row = (step: string) =>
    scenarios.map((sc) => {
      const pairs = ok.flatMap((e) => {
        const w = whole.get(`${sc}|${e.job.seed}`);
        return e.job.scenario === sc && offOf(e) === step && w !== undefined ? [[e.result, w] as const] : [];
      });
      if (pairs.length === 0) return 'failed';
      const p50 = median(pairs.map(([r, w]) => p50AllRequests(r) / p50AllRequests(w)));
      const p99 = median(pairs.map(([r, w]) => p99AllRequests(r) / p99AllRequests(w)));
      const hit = median(pairs.map(([r, w]) => (r.cache_hit_rate - w.cache_hit_rate) * 100));
      const same = pairs.every(
        ([r, w]) => JSON.stringify(r.ttft_ms) === JSON.stringify(w.ttft_ms) && r.cache_hit_rate === w.cache_hit_rate,
      );
      return same ? '=' : `${ratio(p50)} / ${ratio(p99)}, ${hit >= 0 ? '+' : '−'}${Math.abs(hit).toFixed(1)} pt`;
    });
  return [
    `Warmpath with one step off, against warmpath whole: DES, 2 routers, random L4, medians over seeds ${seeds.join(', ')}. The first row is warmpath whole (TTFT p50 / p99 over every request sent, hit rate); each other cell is TTFT p50 / p99 as a ratio to the whole policy's, then the hit rate's change in points; "=" when the step never changed a placement. From ${provenance(json.meta)}; written by packages/bench/bench/scoreboard.ts.`,
    '',
    `| step off | ${scenarios.join(' | ')} |`,
    `|---|${scenarios.map(() => '---|').join('')}`,
    `| (none: absolute) | ${absolute.join(' | ')} |`,
    ...steps.map((s) => `| \`${s}\` | ${row(s).join(' | ')} |`),
  ].join('\n');
}
