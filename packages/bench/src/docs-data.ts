/**
 * Which docs are written from which saved run, and how: the one list both
 * bench/scoreboard.ts (writes them) and the docs test (checks the committed
 * docs equal what the committed JSON gives) use.
 * Steps: read each JSON present → render each generated text → splice the
 * README's, ABLATION's, TENANTS' (global limits, the tenants scenario's goals), OPERATIONS's,
 * TIERS' and DISAGGREGATION's between their markers. No figure is typed by hand.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ablationTable, type AblationJson } from './ablation-table.ts';
import { goalsTable, TARGETS, type GoalRow } from './goal-rows.ts';
import { limitsTable, liveLimitsLine, type LimitsJson, type LiveLimitsJson } from './limits-table.ts';
import { misrouteTable, type MisroutesJson } from './misroutes.ts';
import { pdGoalsTable, type PdGoalsJson } from './pd-goals.ts';
import { provenance, replaceBetween, resultsTable, scoreboardMarkdown, seedsOf, type GoalsJson } from './scoreboard.ts';

/** Paths relative to the repository root. */
export const DOC_DATA = {
  goals: 'docs/data/goals.json',
  ablation: 'docs/data/ablation.json',
  /** The multi-router rules at 1,000 replicas (ablation.ts --replicas 1000). */
  ablationScale: 'docs/data/ablation-1000.json',
  /** Warmpath's receipts on every scenario (bench/misroutes.ts). */
  misroutes: 'docs/data/misroutes.json',
  operations: 'docs/OPERATIONS.md',
  scoreboard: 'docs/SCOREBOARD.md',
  readme: 'README.md',
  ablationDoc: 'docs/ABLATION.md',
  /** The global-limit runs (bench/limits.ts) and the doc they are tabled in. */
  limits: 'docs/data/limits.json',
  limitsLive: 'docs/data/limits-live.json',
  /** The tenants scenario's goal runs (bench/tenants.ts). */
  tenants: 'docs/data/tenants.json',
  tenantsDoc: 'docs/TENANTS.md',
  /** The tiered goals (`warmpath goals --tiers --json`) and the doc they are tabled in. */
  tiers: 'docs/data/tiers.json',
  tiersDoc: 'docs/TIERS.md',
  /** The disaggregation goals (bench/goodput.ts --goals) and the doc they are tabled in. */
  pdGoals: 'docs/data/pd-goals.json',
  disaggregationDoc: 'docs/DISAGGREGATION.md',
  plot: 'docs/plots/results.png',
} as const;

/** The marker names: `<!-- NAME:begin -->` … `<!-- NAME:end -->`. */
export const MARKERS = {
  results: 'results',
  ablation: 'ablation',
  ablationScale: 'ablation-scale',
  limits: 'global-limits',
  misroutes: 'misroutes',
  limitsLive: 'global-limits-live',
  tenants: 'tenants-goals',
  tiers: 'tiered-goals',
  pdGoals: 'pd-goals',
} as const;

export interface DocInputs {
  goals: string;
  ablation?: string;
  ablationScale?: string;
  limits?: string;
  misroutes?: string;
  limitsLive?: string;
  tenants?: string;
  tiers?: string;
  pdGoals?: string;
}

/** What bench/tenants.ts writes that the doc reads. */
interface TenantsJson {
  meta: { command: string; commit: string };
  rows: GoalRow[];
}

/** The tenants scenario's goal table, with where it came from. */
function tenantsGoals(json: TenantsJson, source: string): string {
  const seeds = seedsOf(json);
  const { table, met, total } = goalsTable(json.rows, seeds);
  const need = Math.ceil(TARGETS.seedsNeeded * seeds.length);
  return `From \`${source}\` (${json.meta.command}, commit ${json.meta.commit}): ${met} of ${total} goals met on at least ${need} of the ${seeds.length} seeds.\n\n${table}`;
}

/** Every generated doc's full text, by path relative to `root`, from the JSON files given. */
export function renderDocs(root: string, inputs: DocInputs): Map<string, string> {
  const out = new Map<string, string>();
  const goals = JSON.parse(readFileSync(join(root, inputs.goals), 'utf8')) as GoalsJson;
  out.set(DOC_DATA.scoreboard, scoreboardMarkdown(goals));
  const readme = readFileSync(join(root, DOC_DATA.readme), 'utf8');
  out.set(DOC_DATA.readme, replaceBetween(readme, MARKERS.results, resultsTable(goals)));
  let doc = readFileSync(join(root, DOC_DATA.ablationDoc), 'utf8');
  for (const [input, marker] of [
    [inputs.ablation, MARKERS.ablation],
    [inputs.ablationScale, MARKERS.ablationScale],
  ] as const) {
    if (input === undefined) continue;
    const ablation = JSON.parse(readFileSync(join(root, input), 'utf8')) as AblationJson;
    doc = replaceBetween(doc, marker, ablationTable(ablation, input));
    out.set(DOC_DATA.ablationDoc, doc);
  }
  let tenants = readFileSync(join(root, DOC_DATA.tenantsDoc), 'utf8');
  if (inputs.limits !== undefined) {
    const limits = JSON.parse(readFileSync(join(root, inputs.limits), 'utf8')) as LimitsJson;
    tenants = replaceBetween(tenants, MARKERS.limits, limitsTable(limits, inputs.limits));
    if (inputs.limitsLive !== undefined) {
      const live = JSON.parse(readFileSync(join(root, inputs.limitsLive), 'utf8')) as LiveLimitsJson;
      tenants = replaceBetween(tenants, MARKERS.limitsLive, liveLimitsLine(live, inputs.limitsLive));
    }
    out.set(DOC_DATA.tenantsDoc, tenants);
  }
  if (inputs.tenants !== undefined) {
    const json = JSON.parse(readFileSync(join(root, inputs.tenants), 'utf8')) as TenantsJson;
    out.set(DOC_DATA.tenantsDoc, replaceBetween(tenants, MARKERS.tenants, tenantsGoals(json, inputs.tenants)));
  }
  if (inputs.misroutes !== undefined) {
    const json = JSON.parse(readFileSync(join(root, inputs.misroutes), 'utf8')) as MisroutesJson;
    const ops = readFileSync(join(root, DOC_DATA.operations), 'utf8');
    out.set(DOC_DATA.operations, replaceBetween(ops, MARKERS.misroutes, misrouteTable(json, inputs.misroutes)));
  }
  if (inputs.tiers !== undefined) {
    const json = JSON.parse(readFileSync(join(root, inputs.tiers), 'utf8')) as GoalsJson;
    const doc = readFileSync(join(root, DOC_DATA.tiersDoc), 'utf8');
    out.set(DOC_DATA.tiersDoc, replaceBetween(doc, MARKERS.tiers, tieredGoals(json, inputs.tiers)));
  }
  if (inputs.pdGoals !== undefined) {
    const json = JSON.parse(readFileSync(join(root, inputs.pdGoals), 'utf8')) as PdGoalsJson;
    const doc = readFileSync(join(root, DOC_DATA.disaggregationDoc), 'utf8');
    out.set(DOC_DATA.disaggregationDoc, replaceBetween(doc, MARKERS.pdGoals, pdGoalsTable(json, inputs.pdGoals)));
  }
  return out;
}

/** TIERS.md's goal table: which run, how many goals met, every row per seed. */
function tieredGoals(json: GoalsJson, source: string): string {
  const seeds = seedsOf(json);
  const { table, met, total, beyond } = goalsTable(json.rows, seeds);
  const out = beyond > 0 ? ` (beyond any router: ${beyond} of the other ${total - met})` : '';
  return [
    `From ${provenance(json.meta)} (the JSON: [${source.replace('docs/', '')}](${source.replace('docs/', '')})). **${met} of ${total} met**${out}.`,
    '',
    table,
  ].join('\n');
}

/** The committed inputs: the goals JSON, and the ablation JSON when it is there. */
export function committedInputs(root: string): DocInputs {
  return {
    goals: DOC_DATA.goals,
    ...(existsSync(join(root, DOC_DATA.ablation)) ? { ablation: DOC_DATA.ablation } : {}),
    ...(existsSync(join(root, DOC_DATA.ablationScale)) ? { ablationScale: DOC_DATA.ablationScale } : {}),
    ...(existsSync(join(root, DOC_DATA.limits)) ? { limits: DOC_DATA.limits } : {}),
    ...(existsSync(join(root, DOC_DATA.misroutes)) ? { misroutes: DOC_DATA.misroutes } : {}),
    ...(existsSync(join(root, DOC_DATA.limitsLive)) ? { limitsLive: DOC_DATA.limitsLive } : {}),
    ...(existsSync(join(root, DOC_DATA.tenants)) ? { tenants: DOC_DATA.tenants } : {}),
    ...(existsSync(join(root, DOC_DATA.tiers)) ? { tiers: DOC_DATA.tiers } : {}),
    ...(existsSync(join(root, DOC_DATA.pdGoals)) ? { pdGoals: DOC_DATA.pdGoals } : {}),
  };
}
