/**
 * The `tenants` scenario's workload and tenants file (issue: many teams on
 * one fleet). Four tenants, each request carrying its tenant's API key and
 * priority band, tagged with the tenant's name:
 *  - `chat-a`, `chat-b`: interactive chat sessions (2–6 turns), about `rate`
 *    requests per second each — the steady tenants;
 *  - `flood`: standard band, single 600–1,000-token prompts from 8 clients
 *    (sticky L4 keeps each on one router), sending five times its share: `rate` requests per second is its share, and its
 *    tokens-per-minute limit is that share's tokens;
 *  - `batch`: batch band, long prompts, `rate` / 2 per second, no limit — it
 *    absorbs the shedding.
 * Variants (the goals' comparisons) filter the plan by tenant: without the
 * flood, interactive only (the unloaded fleet).
 * The tenants file gives each tenant's limit once per fleet; a deployment
 * without a shared limit (a peer) is given it divided by its router count.
 * Complexity: O(requests).
 */
import { HEADERS } from '@warmpath/shared/wire';
import type { PlannedRequest } from './loadgen.ts';
import { arrivals, chat, session, uniform, type PlanParams } from './plan-kit.ts';
import { rng, textOf } from './text.ts';

export type Band = 'interactive' | 'standard' | 'batch';

export interface ScenarioTenant {
  readonly name: string;
  readonly band: Band;
  readonly key: string;
}

export const TENANT_NAMES = ['chat-a', 'chat-b', 'flood', 'batch'] as const;
export type TenantName = (typeof TENANT_NAMES)[number];

export const SCENARIO_TENANTS: Readonly<Record<TenantName, ScenarioTenant>> = {
  'chat-a': { name: 'chat-a', band: 'interactive', key: 'sk-chat-a' },
  'chat-b': { name: 'chat-b', band: 'interactive', key: 'sk-chat-b' },
  flood: { name: 'flood', band: 'standard', key: 'sk-flood' },
  batch: { name: 'batch', band: 'batch', key: 'sk-batch' },
};

/** How many times its share the flooding tenant sends. */
export const FLOOD_FACTOR = 5;
/** The flooding tenant's clients: each keeps its connection to one router under sticky L4. */
const FLOOD_CLIENTS = 8;
/** The flood's requests: prompt tokens (uniform) and output tokens, as the simulator counts them. */
const FLOOD_PROMPT = [600, 1_000] as const;
const FLOOD_OUTPUT = 150;

/** The flood tenant's tokens-per-minute limit at this rate: its share, `rate` requests a second of mean size. */
export function floodTokensPerMinute(rate: number): number {
  return Math.round(rate * 60 * ((FLOOD_PROMPT[0] + FLOOD_PROMPT[1]) / 2 + FLOOD_OUTPUT));
}

export interface TenantsFileOptions {
  rate: number;
  /** Divide each limit by this many router instances (a deployment without a shared limit); default 1. */
  perInstance?: number;
  /** Every tenant in the standard band with weight 1, no objectives, limits kept: fairness off. */
  flat?: boolean;
  /** Each band's TTFT objective, ms, given to every tenant using the band (SLO admission); default SCENARIO_SLO. */
  slo?: Partial<Record<Band, number>>;
  /** Share of the replicas set apart for the interactive band (the file's `reserve`); 0: none; default SCENARIO_RESERVE. */
  reserve?: number;
}

/**
 * The share of the fleet set apart for the interactive band
 * (docs/TENANTS.md, "Interactive reserve"): the interactive tenants'
 * share of the fleet's work in this scenario, rounded to whole replicas.
 */
export const SCENARIO_RESERVE = 0.5;

/** The flood's limit is paced (docs/TENANTS.md, "Pacing"): a burst of this many seconds of its rate. */
const FLOOD_BURST_S = 2;

/**
 * The scenario's objectives (docs/TENANTS.md, "SLO admission"): none. On
 * the tuning seeds an interactive objective only made interactive requests
 * wait longer, and tight ones for the standard and batch bands made the
 * flood's held requests time out in the queue, below its limit
 * (docs/TENANTS.md, "The tenants scenario").
 */
export const SCENARIO_SLO: Readonly<Partial<Record<Band, number>>> = {};

/** The scenario's tenants file (docs/TENANTS.md's format), as JSON. */
export function tenantsFile(o: TenantsFileOptions): {
  tenants: Array<Record<string, unknown>>;
  reserve?: { interactive: number };
} {
  const n = Math.max(1, o.perInstance ?? 1);
  const t = SCENARIO_TENANTS;
  const objectives = o.slo ?? SCENARIO_SLO;
  const withSlo = (x: Record<string, unknown>): Record<string, unknown> => {
    const slo = Object.fromEntries(
      (x.priorities as Band[]).flatMap((b) => (objectives[b] !== undefined ? [[b, { ttftMs: objectives[b] }]] : [])),
    );
    return Object.keys(slo).length > 0 ? { ...x, slo } : x;
  };
  const flat = (x: Record<string, unknown>): Record<string, unknown> =>
    o.flat === true ? { ...x, weight: 1, priorities: ['standard'] } : withSlo(x);
  const reserve = o.reserve ?? SCENARIO_RESERVE;
  return {
    ...(reserve > 0 ? { reserve: { interactive: reserve } } : {}),
    tenants: [
      { name: 'chat-a', keys: [t['chat-a'].key], weight: 1, priorities: ['interactive', 'standard'] },
      { name: 'chat-b', keys: [t['chat-b'].key], weight: 1, priorities: ['interactive', 'standard'] },
      {
        name: 'flood',
        keys: [t.flood.key],
        weight: 1,
        priorities: ['standard', 'batch'],
        limits: { tokensPerMinute: Math.round(floodTokensPerMinute(o.rate) / n), burstSeconds: FLOOD_BURST_S },
      },
      { name: 'batch', keys: [t.batch.key], weight: 1, priorities: ['batch'] },
    ].map(flat),
  };
}

/** The request as its tenant sends it: its key, its band, its name as the tag. */
function as(tenant: ScenarioTenant, r: PlannedRequest): PlannedRequest {
  r.tag = tenant.name;
  r.headers = { ...r.headers, authorization: `Bearer ${tenant.key}`, [HEADERS.priority]: tenant.band };
  return r;
}

/** What a plan is built from; `floodFactor` (default FLOOD_FACTOR): how many times its share the flood sends. */
export type TenantsParams = PlanParams & { rate: number; floodFactor?: number };

/** The whole plan, or the tenants named in `only`, in arrival order. */
export function tenantsPlan(p: TenantsParams, only: readonly TenantName[] = TENANT_NAMES): PlannedRequest[] {
  const out: PlannedRequest[] = [];
  for (const name of only) out.push(...TENANT_PLANS[name](p));
  return out.sort((a, b) => a.at - b.at);
}

type TenantPlan = (p: TenantsParams) => PlannedRequest[];

/** A steady chat tenant: sessions of 2–6 turns (mean 4), so `rate` requests a second. */
function chatTenant(name: 'chat-a' | 'chat-b', salt: number): TenantPlan {
  return (p) => {
    const tenant = SCENARIO_TENANTS[name];
    const r = rng(p.seed ^ salt);
    const system = textOf(`tenants/${name}/system`, 400);
    return arrivals(
      p,
      r,
      () => p.rate / 4,
      (at, s) =>
        session(
          p,
          `tenants/${name}/s${p.seed}/${s}`,
          at,
          system,
          2 + Math.floor(r() * 5),
          { user: uniform(r, 100, 400), reply: uniform(r, 50, 150), gapMs: uniform(r, 2000, 5000) },
          () => name,
        ).map((req) => as(tenant, req)),
    );
  };
}

const TENANT_PLANS: Readonly<Record<TenantName, TenantPlan>> = {
  'chat-a': chatTenant('chat-a', 0x7e1a),
  'chat-b': chatTenant('chat-b', 0x7e1b),
  flood: (p) => {
    const r = rng(p.seed ^ 0xf100d);
    const prompt = uniform(r, FLOOD_PROMPT[0], FLOOD_PROMPT[1]);
    return arrivals(
      p,
      r,
      () => (p.floodFactor ?? FLOOD_FACTOR) * p.rate,
      (at, i) =>
        as(
          SCENARIO_TENANTS.flood,
          chat(
            p,
            at,
            [{ role: 'user', content: textOf(`tenants/flood/${p.seed}/${i}`, prompt()) }],
            FLOOD_OUTPUT,
            '',
            {},
            `tenants/flood/client-${Math.floor(r() * FLOOD_CLIENTS)}`,
          ),
        ),
    );
  },
  batch: (p) => {
    const r = rng(p.seed ^ 0xba7c);
    const system = textOf('tenants/batch/system', 1000);
    return arrivals(
      p,
      r,
      () => p.rate / 2,
      (at, i) =>
        as(
          SCENARIO_TENANTS.batch,
          chat(
            p,
            at,
            [
              { role: 'system', content: system },
              { role: 'user', content: textOf(`tenants/batch/${p.seed}/${i}`, 500 + Math.round(r() * 1000)) },
            ],
            300,
            '',
          ),
        ),
    );
  },
};
