/**
 * Live mode: every policy runs on a fresh fleet of real processes — simulator
 * replicas, agents, routers, real gossip — driven by the HTTP load generator.
 * A fresh fleet per policy means no policy inherits another's warm caches or
 * loaded adapters.
 *
 * Time: the simulators run `timeScale` times faster than wall time, the plan
 * is compressed by the same factor, and client-side times are multiplied back,
 * so every figure is in simulated milliseconds. The routers' receipts
 * (misroutes of their predicted hits) are read from their /metrics at the end.
 *
 * The oracle is not a router: for each request it probes every simulator's
 * true cache and queue (POST /sim/v1/probe) and sends the request straight to
 * the agent of the replica with the lowest predicted TTFT.
 */
import type { ProbeResult } from '@warmpath/sim';
import type { ReceiptCounts } from '@warmpath/router';
import { diffTotals, readSims } from './ground-truth.ts';
import { launchFleet } from '@warmpath/launch';
import { ROUTER_ENTRY_PATH } from './router-entry-path.ts';
import { runLoad, type PlannedRequest, type RequestResult } from './loadgen.ts';
import { summarize, type PolicyResult } from './report.ts';
import { cpuKvTokensOf, type Scenario } from './scenarios.ts';
import { type KvSharing, tierRouterSettings } from './tiers.ts';

export interface LiveOptions {
  scenario: Scenario;
  plan: PlannedRequest[];
  policy: string;
  replicas: number;
  routers: number;
  timeScale: number;
  /** Simulated seconds the plan spans (for throughput). */
  durationS: number;
  onProgress?: (done: number, total: number) => void;
  /** A client gives up on a request after this long, simulated ms (counted as an error). */
  requestTimeoutMs?: number;
  /** Router config overrides (key → value), passed as flags. */
  routerOverrides?: Record<string, string>;
  agentOverrides?: Record<string, string>;
  /** Host-memory KV tier of each replica, × its GPU KV (0 or absent = off). */
  cpuKvRatio?: number;
  /** KV sharing between the simulators (absent = off). */
  kvSharing?: KvSharing;
  /** A disaggregated fleet: replica i's role (`warmpath sim --role`); absent = aggregated. */
  roles?: ReadonlyArray<'prefill' | 'decode'>;
  log?: (line: string) => void;
}

async function oracleTarget(simUrls: string[], agentUrls: string[], p: PlannedRequest): Promise<string> {
  const body = JSON.stringify(p.body);
  const probes = await Promise.all(
    simUrls.map(async (u) => {
      try {
        const res = await fetch(`${u}/sim/v1/probe`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        return res.ok ? ((await res.json()) as ProbeResult) : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  let best = 0;
  let bestT = Infinity;
  probes.forEach((pr, i) => {
    if (pr !== undefined && pr.predictedTtftMs < bestT) {
      bestT = pr.predictedTtftMs;
      best = i;
    }
  });
  return agentUrls[best]!;
}

export async function runLive(o: LiveOptions): Promise<PolicyResult> {
  const shape = o.scenario.fleet;
  const oracle = o.policy === 'oracle';
  const tiered = { ...shape, cpuKvRatio: o.cpuKvRatio ?? 0, ...(o.kvSharing ? { kvSharing: o.kvSharing } : {}) };
  const cpuKvTokens = cpuKvTokensOf(tiered);
  const byPriority = shape.schedulingPolicy === 'priority';
  const fleet = await launchFleet({
    ...(o.roles !== undefined ? { roles: o.roles } : {}),
    replicas: o.replicas,
    routers: oracle ? 0 : o.routers,
    profile: shape.profile,
    speed: o.timeScale,
    ...(shape.adapters !== undefined ? { adapters: shape.adapters } : {}),
    ...(shape.maxLoras !== undefined ? { maxLoras: shape.maxLoras } : {}),
    policy: oracle ? 'warmpath' : o.policy,
    // `warmpath router` with the peers' emulations registered (router-entry.ts).
    routerScript: ROUTER_ENTRY_PATH,
    // The tier costs an operator sets from the hardware, as in the DES (tiers.ts); the overrides win.
    routerArgs: flags({ ...stringValues(tierRouterSettings(tiered)), ...o.routerOverrides }),
    // Engines that schedule by priority, their agents passing the band on (docs/TENANTS.md, "Priority bands").
    agentArgs: [...flags(o.agentOverrides), ...(byPriority ? ['--engine-priority'] : [])],
    simArgs: [
      ...(cpuKvTokens > 0 ? ['--cpu-kv-tokens', String(cpuKvTokens)] : []),
      ...(byPriority ? ['--scheduling-policy', 'priority'] : []),
    ],
    ...(o.kvSharing === 'peer' ? { kvSharing: true } : {}),
  });
  try {
    if (!oracle) await fleet.waitConverged(30_000);
    const simUrls = fleet.sims.map((s) => s.info.url!);
    const agentUrls = fleet.agents.map((a) => a.info.proxy!);
    const before = await readSims(simUrls);
    const load: Array<{ t: number; running: number[] }> = [];
    const t0 = Date.now();
    const sampler = setInterval(
      () => {
        readSims(simUrls).then(
          (r) => load.push({ t: (Date.now() - t0) * o.timeScale, running: r.running }),
          () => {},
        );
      },
      Math.max(100, 1000 / o.timeScale),
    );
    const plan = o.plan.map((p) => ({ ...p, at: p.at / o.timeScale }));
    let results: RequestResult[];
    try {
      results = await runLoad(plan, fleet.routerUrls, {
        timeoutMs: (o.requestTimeoutMs ?? 60_000) / o.timeScale,
        onResult: (_r, done, total) => o.onProgress?.(done, total),
        ...(oracle ? { chooseTarget: (p: PlannedRequest) => oracleTarget(simUrls, agentUrls, p) } : {}),
      });
    } finally {
      clearInterval(sampler);
    }
    for (const r of results) {
      r.ttftMs *= o.timeScale;
      r.e2eMs *= o.timeScale;
      for (let i = 0; i < r.itlMs.length; i++) r.itlMs[i]! *= o.timeScale;
    }
    const totals = diffTotals((await readSims(simUrls)).totals, before.totals);
    const routersEstimate = oracle ? undefined : await Promise.all(fleet.routerUrls.map(readRoutersEstimate));
    const receipts = oracle ? undefined : sumReceipts(await Promise.all(fleet.routerUrls.map(readReceipts)));
    return summarize(
      o.policy,
      { routers: oracle ? 0 : o.routers, replicas: o.replicas },
      results,
      totals,
      o.durationS,
      { perReplicaLoad: load, ...(routersEstimate ? { routersEstimate } : {}), ...(receipts ? { receipts } : {}) },
    );
  } finally {
    await fleet.stop();
  }
}

/** Numeric settings as the overrides' strings. */
function stringValues(o: Record<string, number>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]));
}

/** Config overrides as command-line flags (loadFactor=1.5 → --load-factor 1.5). */
function flags(overrides: Record<string, string> | undefined): string[] {
  return Object.entries(overrides ?? {}).flatMap(([k, v]) => [
    `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
    v,
  ]);
}

/** A router's warmpath_router_traffic_routers gauge (NaN when unreadable). */
async function readRoutersEstimate(routerUrl: string): Promise<number> {
  try {
    const res = await fetch(`${routerUrl}/metrics`);
    const m = /^warmpath_router_traffic_routers (\S+)$/m.exec(await res.text());
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** The receipt counters (packages/router/src/metrics.ts, receiptCounters) and the field each sums into. */
const RECEIPT_COUNTERS = {
  warmpath_router_receipts_total: 'judged',
  warmpath_router_expected_hits_total: 'expectedHits',
  warmpath_router_misroutes_total: 'misroutes',
  warmpath_router_prediction_error_tokens_total: 'errorTokens',
} as const satisfies Record<string, keyof ReceiptCounts>;

/** A router's receipts over every replica, from its /metrics (zeros when it cannot be read). */
async function readReceipts(routerUrl: string): Promise<ReceiptCounts> {
  const c: ReceiptCounts = { judged: 0, expectedHits: 0, misroutes: 0, errorTokens: 0 };
  try {
    const text = await (await fetch(`${routerUrl}/metrics`)).text();
    for (const m of text.matchAll(/^(warmpath_router_\w+_total)\{replica="[^"]*"\} (\S+)$/gm)) {
      const field = RECEIPT_COUNTERS[m[1] as keyof typeof RECEIPT_COUNTERS];
      if (field !== undefined) c[field] += Number(m[2]);
    }
  } catch {
    // A router gone before the scrape: its receipts are lost, not invented.
  }
  return c;
}

function sumReceipts(all: readonly ReceiptCounts[]): ReceiptCounts {
  const t: ReceiptCounts = { judged: 0, expectedHits: 0, misroutes: 0, errorTokens: 0 };
  for (const c of all) for (const k of Object.keys(t) as Array<keyof ReceiptCounts>) t[k] += c[k];
  return t;
}
