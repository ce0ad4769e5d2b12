/**
 * docs/TENANTS.md's 'Global limits' table and the runs behind it: the
 * `tenants` scenario's flooding tenant through 1, 4 and 16 routers, random
 * and sticky L4, in the admission DES (des/limits.ts), and 4 routers one of
 * which is cut off from the others after the first minute.
 * Steps: per (L4, routers, seed) build the plan, assign routers, run, measure
 * admitted tokens per 60 s ÷ the limit (tenant-figures.ts) → JSON; the table
 * gives, per row, the mean over seeds of the mean window and the lowest and
 * highest window of any seed. Pure but for the runs; bench/limits.ts writes
 * the JSON, bench/scoreboard.ts the doc.
 */
import { runLimits } from './des/limits.ts';
import type { GossipModel } from './des/gossip.ts';
import { assignRouters, L4_MODES, type L4Mode } from './l4.ts';
import { DEFAULT_MODEL } from './scenarios.ts';
import { admissionsOf, limitHeld } from './tenant-figures.ts';
import { floodTokensPerMinute, tenantsFile, tenantsPlan } from './tenants-plan.ts';

export interface LimitsRun {
  l4: L4Mode;
  routers: number;
  seed: number;
  /** One router cut off from the others after the first minute. */
  partitioned: boolean;
  /** How the limit was deployed: shared over gossip (the product), or divided by the router count with nothing shared (as a gateway without a store is deployed). */
  deployment: Deployment;
  limit: number;
  windows: number;
  mean: number;
  min: number;
  max: number;
}

export type Deployment = 'shared' | 'per-instance';

export interface LimitsJson {
  meta: { command: string; commit?: string | undefined };
  config: { duration: number; rate: number; gossip: GossipModel };
  runs: LimitsRun[];
}

export interface LimitsMatrix {
  seeds: readonly number[];
  routers: readonly number[];
  duration: number;
  rate: number;
  gossip: GossipModel;
}

const DEPLOYMENTS: readonly Deployment[] = ['shared', 'per-instance'];
/** Routers of the partition row. */
const PARTITION_ROUTERS = 4;

export function limitsMatrix(m: LimitsMatrix): Omit<LimitsJson, 'meta'> {
  const limit = floodTokensPerMinute(m.rate);
  const runs: LimitsRun[] = [];
  const one = (l4: L4Mode, routers: number, seed: number, partitioned: boolean, deployment: Deployment): void => {
    const shared = deployment === 'shared';
    const file = JSON.stringify(tenantsFile({ rate: m.rate, perInstance: shared ? 1 : routers }));
    const plan = assignRouters(
      tenantsPlan({ seed, rate: m.rate, duration: m.duration, model: DEFAULT_MODEL }, ['flood']),
      routers,
      l4,
      seed,
    );
    const results = runLimits({
      plan,
      routers,
      file,
      shared,
      gossip: m.gossip,
      seed,
      ...(partitioned ? { partition: { router: 0, fromMs: 60_000 } } : {}),
    });
    runs.push({
      l4,
      routers,
      seed,
      partitioned,
      deployment,
      ...limitHeld(admissionsOf(results, 'flood'), limit, m.duration),
    });
  };
  for (const deployment of DEPLOYMENTS)
    for (const l4 of L4_MODES)
      for (const routers of m.routers)
        if (deployment === 'shared' || routers > 1)
          for (const seed of m.seeds) one(l4, routers, seed, false, deployment);
  for (const seed of m.seeds) one('random', PARTITION_ROUTERS, seed, true, 'shared');
  return { config: { duration: m.duration, rate: m.rate, gossip: m.gossip }, runs };
}

const f3 = (x: number): string => x.toFixed(3);

/** The Markdown table: one row per (L4, routers), the partition row last; `source` names the JSON. */
export function limitsTable(json: LimitsJson, source: string): string {
  const rows: string[] = [
    '| limit | L4 | routers | admitted ÷ limit, mean of 60 s windows | lowest window | highest window | seeds |',
    '|---|---|---|---|---|---|---|',
  ];
  const groups = new Map<string, LimitsRun[]>();
  for (const r of json.runs) {
    const key = `${r.deployment}|${r.partitioned ? 'partition' : r.l4}|${r.routers}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  for (const [key, runs] of groups) {
    const [deployment, l4, routers] = key.split('|');
    const mean = runs.reduce((s, r) => s + r.mean, 0) / runs.length;
    const label = l4 === 'partition' ? `random, one router cut off after 60 s` : l4;
    const how = deployment === 'shared' ? 'shared over gossip' : 'divided per router, not shared';
    rows.push(
      `| ${how} | ${label} | ${routers} | ${f3(mean)} | ${f3(Math.min(...runs.map((r) => r.min)))} | ${f3(Math.max(...runs.map((r) => r.max)))} | ${runs.map((r) => r.seed).join(', ')} |`,
    );
  }
  const c = json.config;
  return [
    `From \`${source}\` (${json.meta.command}${json.meta.commit !== undefined ? `, commit ${json.meta.commit}` : ''}): the flooding tenant sends ${5}× its limit of ${json.runs[0]?.limit ?? '—'} tokens per minute for ${c.duration} s (rate ${c.rate}); gossip delay ${c.gossip.delay}, loss ${c.gossip.loss}.`,
    '',
    ...rows,
  ].join('\n');
}

/** The live run (bench/limits-live.ts): router processes over real gossip, one tenant flooding at 5× its limit. */
export interface LiveLimitsJson {
  meta: { command: string; commit?: string | undefined };
  routers: number;
  seconds: number;
  limit: number;
  requests: number;
  refused: number;
  failed: number;
  windows: number;
  mean: number;
  min: number;
  max: number;
}

/** The live run in one sentence; `source` names the JSON. */
export function liveLimitsLine(json: LiveLimitsJson, source: string): string {
  return (
    `Live, from \`${source}\` (${json.meta.command}${json.meta.commit !== undefined ? `, commit ${json.meta.commit}` : ''}): ` +
    `${json.routers} router processes, ${json.requests} requests in ${json.seconds} s at five times a limit of ` +
    `${json.limit} tokens per minute, ${json.refused} refused by the limit, ${json.failed} failed otherwise; ` +
    `admitted ÷ limit over ${json.windows} windows of 60 s: mean ${f3(json.mean)}, lowest ${f3(json.min)}, highest ${f3(json.max)}.`
  );
}
