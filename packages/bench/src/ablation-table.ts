/**
 * docs/ABLATION.md's tables, written from the saved ablation run
 * (packages/bench/bench/ablation.ts --json docs/data/ablation.json): warmpath
 * with one placement step off against warmpath whole, per scenario, one table
 * per router count.
 * Steps: index the runs by (scenario, seed, routers, step off) → per step and
 * scenario, the geometric mean over seeds of TTFT p50 / p99 off ÷ whole (an
 * unanswered percentile, null, is infinite) and the mean hit-rate change in
 * points → one Markdown row per step. Pure; bench/scoreboard.ts does the I/O.
 */
import type { AblationConfig, AblationRun } from './ablation.ts';
import { provenance } from './scoreboard.ts';

/** One saved run, as bench/ablation.ts writes it (its wall-clock seconds are not read here). */
export type AblationRunJson = Omit<AblationRun, 'seconds'>;

export interface AblationJson {
  /** Every invocation that added runs, with its settings and commit. */
  invocations?: Array<Partial<AblationConfig> & { commit?: string }>;
  runs: AblationRunJson[];
}

const key = (scenario: string, seed: number, routers: number, off: string) => `${scenario}|${seed}|${routers}|${off}`;
const ttft = (x: number | null) => (x === null ? Number.POSITIVE_INFINITY : x);
const fixed = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '∞');
const uniq = <T>(xs: T[]) => [...new Set(xs)];

/** Geometric mean of off ÷ whole (∞ when any pair is ∞ / finite; 1 when both are ∞). */
function geoRatio(pairs: Array<[number, number]>): number {
  const logs = pairs.map(([a, b]) => (a === b ? 0 : Math.log(a / b)));
  return Math.exp(logs.reduce((s, x) => s + x, 0) / logs.length);
}

/** One cell: `=` when no seed's figures moved, else `p50 / p99 ratios, ±hit pt`; `—` without runs to pair. */
function cell(pairs: Array<[AblationRunJson, AblationRunJson]>): string {
  if (pairs.length === 0) return '—';
  if (pairs.every(([o, w]) => o.p50 === w.p50 && o.p99 === w.p99 && o.hitRate === w.hitRate)) return '=';
  const p50 = geoRatio(pairs.map(([o, w]) => [ttft(o.p50), ttft(w.p50)]));
  const p99 = geoRatio(pairs.map(([o, w]) => [ttft(o.p99), ttft(w.p99)]));
  const hit = pairs.reduce((s, [o, w]) => s + ((o.hitRate ?? 0) - (w.hitRate ?? 0)) * 100, 0) / pairs.length;
  const pt = Math.abs(hit) < 0.05 ? '±0.0' : `${hit > 0 ? '+' : '−'}${Math.abs(hit).toFixed(1)}`;
  return `${fixed(p50)} / ${fixed(p99)}, ${pt} pt`;
}

/** The whole policy's figures: medians would hide a seed, so the range over seeds. */
function absolute(runs: AblationRunJson[]): string {
  if (runs.length === 0) return '—';
  const range = (xs: number[], f: (x: number) => string) => {
    const lo = Math.min(...xs);
    const hi = Math.max(...xs);
    return lo === hi ? f(lo) : `${f(lo)}–${f(hi)}`;
  };
  const ms = (x: number) => (Number.isFinite(x) ? String(Math.round(x)) : '∞');
  return `${range(
    runs.map((r) => ttft(r.p50)),
    ms,
  )} / ${range(
    runs.map((r) => ttft(r.p99)),
    ms,
  )} ms, ${range(
    runs.map((r) => (r.hitRate ?? 0) * 100),
    (x) => x.toFixed(1),
  )}%`;
}

/** Every router count's table, with the provenance line above them. */
export function ablationTable(json: AblationJson, path = 'docs/data/ablation.json'): string {
  const ok = json.runs.filter((r) => r.ok);
  const idx = new Map(ok.map((r) => [key(r.scenario, r.seed, r.routers, r.off), r]));
  const scenarios = uniq(json.runs.map((r) => r.scenario));
  const seeds = uniq(json.runs.map((r) => r.seed)).sort((a, b) => a - b);
  const steps = uniq(json.runs.map((r) => r.off)).filter((s) => s !== '');
  const routerCounts = uniq(json.runs.map((r) => r.routers)).sort((a, b) => a - b);
  const commits = uniq((json.invocations ?? []).flatMap((i) => (i.commit !== undefined ? [i.commit.slice(0, 7)] : [])));
  const l4 = uniq((json.invocations ?? []).flatMap((i) => (i.l4 !== undefined ? [i.l4] : [])));
  const replicas = uniq((json.invocations ?? []).flatMap((i) => (i.replicas ? [i.replicas] : [])));
  const fleet = replicas.length > 0 ? `${replicas.join(', ')} replicas, ` : '';
  const failed = json.runs.filter((r) => !r.ok);
  const tables = routerCounts.flatMap((n) => {
    const pairs = (sc: string, off: string) =>
      seeds.flatMap((s) => {
        const o = idx.get(key(sc, s, n, off));
        const w = idx.get(key(sc, s, n, ''));
        return o !== undefined && w !== undefined ? [[o, w] as [AblationRunJson, AblationRunJson]] : [];
      });
    const whole = (sc: string) => ok.filter((r) => r.scenario === sc && r.routers === n && r.off === '');
    return [
      '',
      `**${n} router${n === 1 ? '' : 's'}**`,
      '',
      `| step off | ${scenarios.join(' | ')} |`,
      `|---|${scenarios.map(() => '---|').join('')}`,
      `| (none: warmpath whole) | ${scenarios.map((sc) => absolute(whole(sc))).join(' | ')} |`,
      ...steps.map((off) => `| \`${off}\` | ${scenarios.map((sc) => cell(pairs(sc, off))).join(' | ')} |`),
    ];
  });
  return [
    `DES, ${fleet}${l4.length > 0 ? `${l4.join(', ')} L4` : 'random L4'}, seeds ${seeds.join(', ')}, from ${provenance({ command: `node packages/bench/bench/ablation.ts --json ${path}`, ...(commits.length > 0 ? { commit: commits.join(', ') } : {}) })}; written by packages/bench/bench/scoreboard.ts. The first row is warmpath whole (TTFT p50 / p99 over every request sent, hit rate; ranges over the seeds); each other cell is that step off: TTFT p50 / p99 as ratios to the whole policy's (geometric mean over the seeds; above 1 = worse without the step; ∞: unanswered requests reach the percentile), then the hit rate's change in points; "=" when no figure moved on any seed (the step never changed a placement).`,
    ...tables,
    ...(failed.length > 0
      ? [
          '',
          `Failed runs: ${failed.map((r) => `${r.off || 'whole'} on ${r.scenario}, seed ${r.seed}, ${r.routers} routers`).join('; ')}.`,
        ]
      : []),
  ].join('\n');
}
