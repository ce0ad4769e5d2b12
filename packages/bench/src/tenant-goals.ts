/**
 * The `tenants` scenario's goals in the DES (the goals, held-out
 * seeds): one seed's runs and a goal row per goal.
 *
 * Runs (warmpath, random L4, the scenario's fleet, its engines scheduling
 * by the bands unless `schedulingPolicy` says fcfs): the whole plan with its
 * tenants file at 1, 4 and 16 routers (the limit held at each count); at
 * BASE_ROUTERS routers, the flood at its share instead of five times it (the
 * noisy neighbour's baseline), fairness off (every tenant one band, weight
 * 1, the same limits), and the interactive tenants alone (the unloaded
 * fleet).
 * Rows:
 *  - noisy neighbour: each steady tenant's TTFT p99 ≤ 1.2 × its p99 with the
 *    flood at its share; the fleet's completed tokens/s ≥ 0.95 × fairness
 *    off's (work-conserving);
 *  - overload: interactive TTFT p99 ≤ 1.2 × the unloaded fleet's; no
 *    interactive request refused (other than by its own limit) while a batch
 *    request was in flight;
 *  - global token limit at 1, 4, 16 routers: the flood's admitted tokens per
 *    minute within ±5% of its limit (mean over 60 s windows).
 * Complexity: six DES runs per seed.
 */
import { runDes } from './des/run.ts';
import type { GoalRow } from './goal-rows.ts';
import { assignRouters } from './l4.ts';
import type { RequestResult } from './loadgen.ts';
import { DEFAULT_MODEL, SCENARIOS, type Scenario } from './scenarios.ts';
import {
  admissionsOf,
  LIMIT_REFUSED,
  limitHeld,
  tenantRows,
  type LimitHeld,
  type TenantRow,
} from './tenant-figures.ts';
import { floodTokensPerMinute, TENANT_NAMES, tenantsFile, tenantsPlan, type TenantName } from './tenants-plan.ts';

export const TENANT_TARGETS = { ttftRatio: 1.2, workConserving: 0.95, limitTolerance: 0.05 } as const;
const BASE_ROUTERS = 4;
const LIMIT_ROUTERS = [1, 4, 16] as const;
const STEADY: readonly TenantName[] = ['chat-a', 'chat-b'];

export type Variant = 'tenants' | 'flood-at-share' | 'fairness-off' | 'interactive-only';

export interface TenantRun {
  variant: Variant;
  routers: number;
  rows: TenantRow[];
  /** The flood's admitted tokens per 60 s against its limit. */
  limit: LimitHeld;
  /** Completed prompt + completion tokens per second, every tenant. */
  fleetTokensPerS: number;
  /** Interactive requests refused, not by their own limit, while a batch request was in flight. */
  interactiveRefusedWhileBatch: number;
}

export interface TenantsRunOptions {
  seed: number;
  rate?: number;
  duration?: number;
  /** The engines' scheduling policy; default the scenario fleet's (priority: the agents pass the band on). */
  schedulingPolicy?: 'fcfs' | 'priority';
  /** Share of the replicas set apart for the interactive band; default the scenario's (SCENARIO_RESERVE); 0: none. */
  reserve?: number;
  onRun?: (r: TenantRun) => void;
}

/** The scenario with the engines' scheduling policy of a run. */
export function tenantsScenario(schedulingPolicy?: 'fcfs' | 'priority'): Scenario {
  const scenario = SCENARIOS.tenants!;
  return schedulingPolicy === undefined ? scenario : { ...scenario, fleet: { ...scenario.fleet, schedulingPolicy } };
}

/** One seed's runs. */
export async function tenantRuns(o: TenantsRunOptions): Promise<TenantRun[]> {
  const scenario = tenantsScenario(o.schedulingPolicy);
  const rate = o.rate ?? scenario.defaults.rate;
  const duration = o.duration ?? scenario.defaults.duration;
  const one = async (variant: Variant, routers: number): Promise<TenantRun> => {
    const plan = assignRouters(
      tenantsPlan(
        {
          seed: o.seed,
          rate,
          duration,
          model: DEFAULT_MODEL,
          ...(variant === 'flood-at-share' ? { floodFactor: 1 } : {}),
        },
        variant === 'interactive-only' ? STEADY : TENANT_NAMES,
      ),
      routers,
      'random',
      o.seed,
    );
    const results: RequestResult[] = [];
    await runDes({
      scenario,
      plan,
      policy: 'warmpath',
      replicas: scenario.fleet.replicas,
      routers,
      durationS: duration,
      seed: o.seed,
      onResult: (r) => results.push(r),
      tenants: {
        file: JSON.stringify(
          tenantsFile({
            rate,
            flat: variant === 'fairness-off',
            ...(o.reserve !== undefined ? { reserve: o.reserve } : {}),
          }),
        ),
        shared: true,
      },
    });
    const rows = tenantRows(results, duration, TENANT_NAMES);
    const run: TenantRun = {
      variant,
      routers,
      rows,
      limit: limitHeld(admissionsOf(results, 'flood'), floodTokensPerMinute(rate), duration),
      fleetTokensPerS: rows.reduce((s, r) => s + r.completedTokensPerS, 0),
      interactiveRefusedWhileBatch: refusedWhileBatch(results),
    };
    o.onRun?.(run);
    return run;
  };
  const runs: TenantRun[] = [];
  for (const n of LIMIT_ROUTERS) runs.push(await one('tenants', n));
  for (const v of ['flood-at-share', 'fairness-off', 'interactive-only'] as const)
    runs.push(await one(v, BASE_ROUTERS));
  return runs;
}

/** Interactive requests refused (not by a limit) at a moment some batch request was in flight. */
function refusedWhileBatch(results: readonly RequestResult[]): number {
  const batch = results
    .filter((r) => r.tag === 'batch' && Number.isFinite(r.e2eMs))
    .map((r) => [r.sentAt, r.sentAt + r.e2eMs] as const)
    .sort((a, b) => a[0] - b[0]);
  const inFlight = (t: number): boolean => batch.some(([from, to]) => from <= t && t <= to);
  return results.filter(
    (r) => STEADY.includes(r.tag as TenantName) && !r.ok && r.error !== LIMIT_REFUSED && inFlight(r.sentAt),
  ).length;
}

const ms = (x: number | null): string => (x === null ? '∞' : `${Math.round(x)} ms`);
const ratio = (a: number | null, b: number | null): number =>
  a === null ? Number.POSITIVE_INFINITY : b === null || b === 0 ? Number.NaN : a / b;

/** The goal rows of one seed's runs. */
export function tenantGoalRows(seed: number, runs: readonly TenantRun[]): GoalRow[] {
  const row = (goal: string, measured: string, target: string, pass: boolean): GoalRow => ({
    scenario: 'tenants',
    seed,
    goal,
    measured,
    target,
    pass,
  });
  const get = (v: Variant, n = BASE_ROUTERS) => runs.find((r) => r.variant === v && r.routers === n);
  const main = get('tenants');
  const share = get('flood-at-share');
  const off = get('fairness-off');
  const alone = get('interactive-only');
  const out: GoalRow[] = [];
  if (main === undefined || share === undefined || off === undefined || alone === undefined)
    return [row('tenants runs', 'missing', 'every run', false)];
  const p99 = (r: TenantRun, t: string) => r.rows.find((x) => x.tenant === t)?.ttftP99Ms ?? null;
  for (const t of STEADY) {
    const x = ratio(p99(main, t), p99(share, t));
    out.push(
      row(
        `noisy neighbour: ${t} TTFT p99 vs the flood at its share`,
        `${ms(p99(main, t))} vs ${ms(p99(share, t))} (${x.toFixed(2)}×)`,
        `≤ ${TENANT_TARGETS.ttftRatio}×`,
        x <= TENANT_TARGETS.ttftRatio,
      ),
    );
  }
  const wc = main.fleetTokensPerS / off.fleetTokensPerS;
  out.push(
    row(
      'noisy neighbour: fleet completed tokens/s vs fairness off',
      `${main.fleetTokensPerS.toLocaleString('en-US')} vs ${off.fleetTokensPerS.toLocaleString('en-US')} (${(wc * 100).toFixed(1)}%)`,
      `≥ ${TENANT_TARGETS.workConserving * 100}%`,
      wc >= TENANT_TARGETS.workConserving,
    ),
  );
  const worst = (r: TenantRun) => Math.max(...STEADY.map((t) => p99(r, t) ?? Number.POSITIVE_INFINITY));
  const over = worst(main) / worst(alone);
  out.push(
    row(
      'overload: interactive TTFT p99 vs an unloaded fleet',
      `${ms(worst(main))} vs ${ms(worst(alone))} (${over.toFixed(2)}×)`,
      `≤ ${TENANT_TARGETS.ttftRatio}×`,
      over <= TENANT_TARGETS.ttftRatio,
    ),
  );
  out.push(
    row(
      'overload: interactive refused while batch is served',
      String(main.interactiveRefusedWhileBatch),
      '0',
      main.interactiveRefusedWhileBatch === 0,
    ),
  );
  for (const n of LIMIT_ROUTERS) {
    const l = get('tenants', n)?.limit;
    const ok = l !== undefined && Math.abs(l.mean - 1) <= TENANT_TARGETS.limitTolerance;
    out.push(
      row(
        `global token limit, ${n} router${n === 1 ? '' : 's'}, random L4`,
        l === undefined
          ? 'missing'
          : `${(l.mean * 100).toFixed(1)}% of the limit (windows ${(l.min * 100).toFixed(0)}–${(l.max * 100).toFixed(0)}%)`,
        `100 ± ${TENANT_TARGETS.limitTolerance * 100}%`,
        ok,
      ),
    );
  }
  return out;
}
