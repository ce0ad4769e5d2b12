/**
 * The docs' figures, written from the saved goals run (`warmpath goals --json`)
 * so each figure exists in one place: docs/SCOREBOARD.md (every goal row) and
 * the README's results table and plot (medians over the held-out seeds).
 * Steps: read the JSON → group results by (scenario, seed) at the goals' base
 * deployment (2 routers, random L4) → median per scenario and policy → Markdown.
 * Every function is pure (text in, text out); bench/scoreboard.ts does the I/O.
 * Trade-off: medians over seeds hide the spread between seeds; the scoreboard
 * keeps every seed's row for that.
 */
import { goalsTable, type GoalRow, p50AllRequests, p99AllRequests, PEER_POLICIES, TARGETS } from './goals.ts';
import type { ChartSpec } from './figures.ts';
import type { PolicyResult } from './report.ts';

/** Who produced a saved run: written by `goals --json`, or stamped by bench/scoreboard.ts. */
export interface RunMeta {
  commit?: string;
  command?: string;
}

/** The file `warmpath goals --json` writes (results as they arrive, references and goal rows per finished pair). */
export interface GoalsJson {
  meta?: RunMeta;
  results: Array<{
    job: { scenario: string; seed: number; routers: number; l4: string; policy: string };
    result?: PolicyResult;
    error?: string;
  }>;
  references: Record<string, unknown>;
  rows: GoalRow[];
}

/** One policy's medians over the seeds of one scenario. */
export interface PolicySummary {
  policy: string;
  p50: number;
  p99: number;
  hit: number;
  seeds: number;
}

export interface ScenarioSummary {
  scenario: string;
  seeds: number[];
  warmpath?: PolicySummary | undefined;
  bestPeer?: PolicySummary | undefined;
  roundRobin?: PolicySummary | undefined;
  met: number;
  goals: number;
}

const BASE_ROUTERS = 2;

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Scenarios in the order they first appear among the finished goal rows. */
export function scenariosOf(json: GoalsJson): string[] {
  return [...new Set(json.rows.map((r) => r.scenario))];
}

/** The seeds among a run's goal rows, ascending. */
export function seedsOf(json: { rows: readonly { seed: number }[] }): number[] {
  return [...new Set(json.rows.map((r) => r.seed))].sort((a, b) => a - b);
}

/** The medians over the finished seeds of one policy at the goals' base deployment (2 routers, random L4). */
function summarize(
  json: GoalsJson,
  scenario: string,
  seeds: readonly number[],
  policy: string,
): PolicySummary | undefined {
  const rs = json.results
    .filter(
      (r) =>
        r.job.scenario === scenario &&
        seeds.includes(r.job.seed) &&
        r.job.routers === BASE_ROUTERS &&
        r.job.l4 === 'random' &&
        r.job.policy === policy,
    )
    .flatMap((r) => r.result ?? []);
  if (rs.length === 0) return undefined;
  return {
    policy,
    p50: median(rs.map(p50AllRequests)),
    p99: median(rs.map(p99AllRequests)),
    hit: median(rs.map((r) => r.cache_hit_rate)),
    seeds: rs.length,
  };
}

/** Per scenario: warmpath, the best peer (lowest median TTFT p99; ties by p50) and round-robin, and the goals met. */
export function summarizeScenarios(json: GoalsJson): ScenarioSummary[] {
  return scenariosOf(json).map((scenario) => {
    const seeds = [...new Set(json.rows.filter((r) => r.scenario === scenario).map((r) => r.seed))].sort(
      (a, b) => a - b,
    );
    const peers = PEER_POLICIES.flatMap((p) => summarize(json, scenario, seeds, p) ?? []);
    const bestPeer = peers.reduce<PolicySummary | undefined>(
      (a, b) => (a === undefined || b.p99 < a.p99 || (b.p99 === a.p99 && b.p50 < a.p50) ? b : a),
      undefined,
    );
    const { met, total } = goalsTable(
      json.rows.filter((r) => r.scenario === scenario),
      seeds,
    );
    return {
      scenario,
      seeds,
      warmpath: summarize(json, scenario, seeds, 'warmpath'),
      bestPeer,
      roundRobin: summarize(json, scenario, seeds, 'round-robin'),
      met,
      goals: total,
    };
  });
}

const ms = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '∞');
const cell = (s: PolicySummary | undefined, named = false): string =>
  s === undefined ? '—' : `${named ? `${s.policy}: ` : ''}${ms(s.p50)} / ${ms(s.p99)} ms, ${(s.hit * 100).toFixed(1)}%`;

/** Where the figures came from, one line. */
export function provenance(meta: RunMeta | undefined): string {
  const command = meta?.command ?? 'warmpath goals --json FILE';
  return `\`${command}\` at commit ${meta?.commit !== undefined ? `\`${meta.commit}\`` : '(not recorded)'}`;
}

/** The README's results table (between its `results` markers): medians over the held-out seeds. */
export function resultsTable(json: GoalsJson): string {
  const sums = summarizeScenarios(json);
  const met = sums.reduce((a, s) => a + s.met, 0);
  const goals = sums.reduce((a, s) => a + s.goals, 0);
  return [
    `Medians over the held-out seeds of each scenario (${seedsOf(json).join(', ')}), DES, 2 routers, random L4: TTFT p50 / p99 over every request sent (∞: unanswered requests reach the percentile), then the hit rate. The best peer is the peer emulation with the lowest median p99. Goals met: goal rows holding on at least 3 of 4 seeds ([docs/SCOREBOARD.md](docs/SCOREBOARD.md) has each). From ${provenance(json.meta)}; written by packages/bench/bench/scoreboard.ts.`,
    '',
    '| scenario | warmpath | best peer | round-robin | goals met |',
    '|---|---|---|---|--:|',
    ...sums.map(
      (s) =>
        `| ${s.scenario} | ${cell(s.warmpath)} | ${cell(s.bestPeer, true)} | ${cell(s.roundRobin)} | ${s.met} of ${s.goals} |`,
    ),
    `| **all** | | | | **${met} of ${goals}** |`,
  ].join('\n');
}

/** goalsTable's rows with each goal's target beside it, without the scenario column (the section names it). */
function withTargets(table: string, rows: readonly GoalRow[], seeds: readonly number[]): string {
  const target = new Map(rows.map((r) => [r.goal, r.target]));
  const body = table
    .split('\n')
    .slice(2)
    .map((line) => {
      const [, goal = '', ...rest] = line.slice(2, -2).split(' | ');
      return `| ${goal} | ${target.get(goal) ?? ''} | ${rest.join(' | ')} |`;
    });
  return [
    `| goal | target | ${seeds.map((s) => `seed ${s}`).join(' | ')} | met |`,
    `|---|---|${seeds.map(() => '---|').join('')}:-:|`,
    ...body,
  ].join('\n');
}

/** docs/SCOREBOARD.md: the summary, then every goal row per scenario (one column per seed), then failed jobs. */
export function scoreboardMarkdown(json: GoalsJson): string {
  const seeds = seedsOf(json);
  const all = goalsTable(json.rows, seeds);
  const beyond = all.beyond > 0 ? `; ${all.beyond} of the other ${all.total - all.met} are beyond any router` : '';
  const sections = scenariosOf(json).flatMap((sc) => {
    const rows = json.rows.filter((r) => r.scenario === sc);
    const { met, total } = goalsTable(rows, seeds);
    return [`## ${sc}`, '', `${met} of ${total} met.`, '', withTargets(goalsTable(rows, seeds).table, rows, seeds), ''];
  });
  const failed = json.results.filter((r) => r.error !== undefined);
  return [
    '# Scoreboard',
    '',
    '<!-- Written by packages/bench/bench/scoreboard.ts from docs/data/goals.json: do not edit by hand. -->',
    '',
    `Every goal of \`warmpath goals\` (packages/bench/src/goals.ts states them) on the held-out seeds ${seeds.join(', ')}, from ${provenance(json.meta)} (the JSON: [data/goals.json](data/goals.json)).`,
    `A cell is ✓ or ✗ with what was measured on that seed; a goal is met when it holds on at least ${Math.ceil(TARGETS.seedsNeeded * seeds.length)} of the ${seeds.length} seeds (three quarters, rounded up).`,
    '"Beyond any router": the target lies under the plan\'s TTFT bound, which no placement can beat (packages/bench/src/references.ts).',
    '',
    `**${all.met} of ${all.total} goals met**${beyond}.`,
    '',
    ...sections,
    ...(failed.length > 0
      ? [
          '## Failed runs',
          '',
          ...failed.map(
            (f) =>
              `- ${f.job.policy} on ${f.job.scenario}, seed ${f.job.seed}, ${f.job.routers} routers (${f.job.l4}): ${f.error?.split('\n')[0]}`,
          ),
          '',
        ]
      : []),
  ].join('\n');
}

/** Replaces the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` (both kept); throws when a marker is missing. */
export function replaceBetween(doc: string, name: string, body: string): string {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end);
  if (i < 0 || j < i) throw new Error(`markers ${begin} … ${end} not found`);
  return `${doc.slice(0, i + begin.length)}\n${body}\n${doc.slice(j)}`;
}

/** The README's figure: TTFT p50 and p99 by scenario (medians over the seeds), warmpath, best peer and round-robin. */
export function resultsCharts(json: GoalsJson): ChartSpec[] {
  const sums = summarizeScenarios(json);
  const labels = sums.map((s) => s.scenario);
  const series = [
    { label: 'warmpath', color: '#d62728', of: (s: ScenarioSummary) => s.warmpath },
    { label: 'best peer', color: '#1f77b4', of: (s: ScenarioSummary) => s.bestPeer },
    { label: 'round-robin', color: '#7f7f7f', of: (s: ScenarioSummary) => s.roundRobin },
  ];
  return (['p50', 'p99'] as const).map((q) => ({
    type: 'bar',
    data: {
      labels,
      datasets: series.map((x) => ({
        label: x.label,
        backgroundColor: x.color,
        // An unanswered percentile (∞) is drawn as no bar; the table says ∞.
        data: sums.map((s) => {
          const v = x.of(s)?.[q];
          return v !== undefined && Number.isFinite(v) ? Math.round(v) : null;
        }),
      })),
    },
    options: {
      plugins: { title: { display: true, text: `TTFT ${q}, ms (median over held-out seeds; log scale; no bar: ∞)` } },
      scales: { y: { type: 'logarithmic', title: { display: true, text: 'ms' } } },
    },
  }));
}
