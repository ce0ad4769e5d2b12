/**
 * The misroute figures (docs/OPERATIONS.md, "Receipts"): warmpath's
 * receipts on every scenario in the discrete-event simulator, per router
 * count and workload seed, folded from the bench JSONs into one saved file
 * (docs/data/misroutes.json) and rendered from it as the doc's table.
 *
 * Steps: `misroutesJson` keeps, from each bench report, warmpath's receipts
 * row and hit rate under (scenario, routers, seed) → `misrouteTable` prints
 * one line per (scenario, routers): the misroute rate per seed (misroutes of
 * predicted hits) and the worst, the mean prediction error.
 * Complexity: O(reports).
 */
import type { BenchReport, ReceiptsRow } from './report.ts';

export interface MisrouteRow extends ReceiptsRow {
  scenario: string;
  routers: number;
  seed: number;
  hit_rate: number;
}

export interface MisroutesJson {
  meta: { command: string; policy: string };
  rows: MisrouteRow[];
}

/** The rows of `policy` in each (report, its seed). */
export function misroutesJson(
  runs: ReadonlyArray<{ report: BenchReport; seed: number }>,
  command: string,
  policy = 'warmpath',
): MisroutesJson {
  const rows: MisrouteRow[] = [];
  for (const { report, seed } of runs)
    for (const r of report.results)
      if (r.policy === policy && r.receipts !== undefined)
        rows.push({ scenario: report.scenario, routers: r.routers, seed, hit_rate: r.cache_hit_rate, ...r.receipts });
  return { meta: { command, policy }, rows };
}

const pct = (x: number): string => `${(x * 100).toFixed(2)}%`;

/** The doc's table from the saved JSON (`path`: where it is, named under the table). */
export function misrouteTable(json: MisroutesJson, path: string): string {
  const seeds = [...new Set(json.rows.map((r) => r.seed))].sort((a, b) => a - b);
  const groups = new Map<string, MisrouteRow[]>();
  for (const r of json.rows) {
    const k = `${r.scenario}\u0000${r.routers}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const lines = [
    `| scenario | routers | ${seeds.map((s) => `seed ${s}`).join(' | ')} | worst | mean \\|expected − cached\\| |`,
    `|---|--:|${seeds.map(() => '--:|').join('')}--:|--:|`,
  ];
  for (const rows of groups.values()) {
    const bySeed = new Map(rows.map((r) => [r.seed, r]));
    const cells = seeds.map((s) => {
      const r = bySeed.get(s);
      return r === undefined ? '—' : `${pct(r.misroute_rate)} (${r.misroutes}/${r.expected_hits})`;
    });
    const worst = Math.max(...rows.map((r) => r.misroute_rate));
    const judged = rows.reduce((n, r) => n + r.judged, 0);
    const error = rows.reduce((n, r) => n + r.mean_abs_error_tokens * r.judged, 0) / Math.max(1, judged);
    lines.push(
      `| ${rows[0]!.scenario} | ${rows[0]!.routers} | ${cells.join(' | ')} | ${pct(worst)} | ${error.toFixed(0)} tokens |`,
    );
  }
  lines.push(
    '',
    `Misroutes of the predicted hits (${json.meta.policy}, DES), from \`${path}\`, made by \`${json.meta.command}\`.`,
  );
  return lines.join('\n');
}
