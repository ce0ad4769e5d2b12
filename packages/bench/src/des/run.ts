/**
 * Discrete-event fleet simulator: the same engine model (packages/sim), the
 * same agent logic and the same router core (placement, retries, queue) as
 * the live fleet, driven in virtual time by one event queue — so thousands of
 * replicas and many routers fit on one core, and policies compare in seconds.
 *
 * What is modelled, per request: client → router core (placement, retries on
 * an agent's refusal, the bounded router queue) → agent (admission, in-flight
 * work) → engine (batching, prefix cache, preemption, LoRA) → tokens back.
 * How routers learn the engines' state is the policy's deployment
 * (feeds.ts): Warmpath's gossip (agents scrape every 250 ms, publish on a
 * change placement reads and at a floor when quiet; each router receives each message after a
 * gossip delay drawn from a distribution, or loses it: gossip.ts), or the
 * peer's own cadence (llm-d's 50 ms scrapes, KV events within milliseconds),
 * with or without the agents' admission control; a router that sees a gap
 * pulls the digest snapshot (instantly). The oracle is a router policy over
 * the engines' true state (oracle.ts).
 * Network hops cost `hopMs`. What is not: HTTP parsing CPU, TCP, engine failures.
 *
 * Steps: build every replica and router → schedule arrivals (a request's
 * record and description are made when it arrives: the main thread's, from
 * `prepared`, or described here), scrapes, publishes and sweeps → run the
 * queue in slices, waiting for the main thread's descriptions when they are
 * behind and yielding to the microtask queue when snapshot pulls are pending
 * → fold results into one policy row.
 * Complexity: O(events log events); an engine step is one event per replica.
 */
import { routerConfig, RouterCore, type RouterConfig, type Send, type SendResult } from '@warmpath/router';
import { bandRank, encodeSnapshot, ERRORS, type RequestInfo } from '@warmpath/shared/wire';
import { mulberry32 } from '@warmpath/shared/runtime';
import { PROFILES, type EngineProfile } from '@warmpath/sim';
import { lastArrivalMs, type RequestResult } from '../loadgen.ts';
import { summarize, type DesGossipDetail, type EngineTotals, type PolicyResult } from '../report.ts';
import { tierRouterSettings } from '../tiers.ts';
import { deploymentOf, feedHooks } from './feeds.ts';
import { DEFAULT_GOSSIP } from './gossip.ts';
import { createOraclePolicy } from './oracle.ts';
import { registerPeers } from '../peers/index.ts';
import { EventQueue } from './queue.ts';
import { desReplicas, DesReplica, type ReplicaHooks } from './replica.ts';
import { pdRolesOf, sendPair } from './pd.ts';
import type { PreparedInbox } from './prepared-feed.ts';
import { describeSettingsKey, newRec, prepare, type Prepared, type Rec } from './request.ts';
import { desTenants, type DesTenants } from './tenants.ts';
import type { DesOptions } from './options.ts';

export type { DesGroups, DesOptions, DesRefusal } from './options.ts';

/** Arrivals start once every router has heard every replica (as live runs wait for convergence), ms. */
const WARMUP_MS = 2_000;
/** Simulated time allowed after the last arrival for the fleet to drain, ms. */
const DRAIN_MS = 600_000;

export async function runDes(o: DesOptions): Promise<PolicyResult> {
  const shape = o.scenario.fleet;
  const profile: EngineProfile = PROFILES[shape.profile as keyof typeof PROFILES];
  if (profile === undefined) throw new Error(`unknown simulator profile ${shape.profile}`);
  const hop = o.hopMs ?? 0.3;
  const q = new EventQueue();
  // Gossip jitter, scrape/publish phases and randomized policies: one seeded stream per run
  // (seed 1 keeps the stream the published figures were measured on).
  const random = mulberry32((0x9e3779b9 + (o.seed ?? 1) - 1) >>> 0);
  const results: RequestResult[] = [];
  // Requests not finished yet, by plan index (a finished one is dropped, with its description: the hour's hashes alone are gigabytes).
  let recs: Array<Rec | undefined> = [];
  const finish = (rec: Rec): void => {
    recs[rec.i] = undefined;
    results.push(rec.result);
    o.onResult?.(rec.result);
    o.onProgress?.(results.length, o.plan.length);
  };
  const fail = (rec: Rec, code: string, status: number): void => {
    rec.result.error = code;
    rec.result.status = status;
    rec.result.e2eMs = q.now + hop - rec.arrivedAt;
    finish(rec);
  };

  const prepared = new WeakMap<RequestInfo, Prepared>();
  const fleet = buildFleet(o, q, profile, hop, random, { finish, fail }, prepared);
  const endAt = WARMUP_MS + lastArrivalMs(o.plan) + 1;

  // The main thread's descriptions, when they were made with this run's settings.
  const inbox =
    o.prepared !== undefined && o.prepared.settings === describeSettingsKey(fleet.routers[0]!.config)
      ? o.prepared
      : undefined;
  recs = scheduleArrivals(o, q, hop, fleet, prepared, inbox);
  fleet.tenants?.start(endAt);
  // Per-replica load over time, once a simulated second.
  const perReplicaLoad: Array<{ t: number; running: number[] }> = [];
  const sample = () => {
    perReplicaLoad.push({ t: q.now, running: fleet.replicas.map((r) => r.model.snapshot().running) });
    if (results.length < o.plan.length) q.after(1000, sample);
  };
  q.at(0, sample);

  // Run; let snapshot pulls (promises) settle whenever some are pending.
  const horizon = endAt + DRAIN_MS;
  while (results.length < o.plan.length && q.size > 0 && q.now < horizon) {
    // Slices of 50 virtual ms from the next event (never from `now` alone: a gap longer
    // than the slice would otherwise never be crossed).
    const until = q.nextAt + 50;
    // Every request arriving within the slice must be described: wait for the main thread's stream if it is behind.
    if (inbox !== undefined && !inbox.ready(until - WARMUP_MS - hop)) await inbox.until(until - WARMUP_MS - hop);
    q.run(until);
    if (fleet.pulls() > 0) await new Promise((r) => setImmediate(r));
  }
  // Whatever has not finished by the horizon is lost to the client: count it, never drop it.
  if (results.length < o.plan.length)
    for (const rec of recs)
      if (rec !== undefined && !rec.result.ok && rec.result.error === undefined && Number.isNaN(rec.result.e2eMs))
        fail(rec, 'timeout', 504);

  return runResult(o, fleet, q.now, results, perReplicaLoad);
}

/** With model groups: what each router serves and the state bytes it received per simulated second. */
function routersHeld(o: DesOptions, fleet: Fleet, endMs: number): Partial<DesGossipDetail> {
  if (o.groups === undefined) return {};
  return {
    routerGroups: fleet.routers.map((rt) => (rt.view.served.all ? ['*'] : [...rt.view.served.names])),
    receivedBytesPerRouterS: fleet.routers.map((_, i) => Math.round((fleet.received[i] ?? 0) / (endMs / 1000))),
  };
}

/** The policy's result: the requests' figures, the engines' totals, what gossip carried, the routers' estimates. */
function runResult(
  o: DesOptions,
  fleet: Fleet,
  endMs: number,
  results: RequestResult[],
  perReplicaLoad: Array<{ t: number; running: number[] }>,
): PolicyResult {
  const totals: EngineTotals = {
    promptTokens: 0,
    cachedTokens: 0,
    preemptions: 0,
    adapterLoads: 0,
    evictedBlocks: 0,
    evictedAgeMs: 0,
  };
  for (const r of fleet.replicas) {
    const s = r.model.snapshot();
    totals.promptTokens += s.prefixQueriesTokens;
    // Both tiers: the engine counts a host reload as cached (vLLM's num_cached_tokens).
    totals.cachedTokens += s.prefixHitsTokens + s.hostHitsTokens;
    totals.preemptions += s.preemptions;
    totals.adapterLoads += s.lora.loads;
    totals.evictedBlocks! += s.evictedBlocks;
    totals.evictedAgeMs! += s.evictedAgeMs;
  }
  // Per agent per simulated second of the whole run (warm-up and drain included): what gossip carried.
  const perS = (n: number): number => Math.round((10 * n) / fleet.replicas.length / Math.max(1e-9, endMs / 1000)) / 10;
  const published = fleet.replicas.reduce(
    (a, r) => {
      const p = r.core.publisher;
      return {
        messages: a.messages + p.messages,
        bytes: a.bytes + p.bytes,
        hashes: a.hashes + p.hashes,
        full: a.full + p.full,
      };
    },
    { messages: 0, bytes: 0, hashes: 0, full: 0 },
  );
  const view = fleet.routers[0]!.view;
  let viewHashes = 0;
  for (const r of view.replicas.values()) viewHashes += r.digestSize;
  const pulls = fleet.routers.reduce((n, rt) => n + rt.view.pulls.ok + rt.view.pulls.failed, 0);
  const gossip =
    published.messages > 0
      ? {
          messagesPerReplicaS: perS(published.messages),
          bytesPerReplicaS: perS(published.bytes),
          hashesPerMessage: Math.round((10 * published.hashes) / published.messages) / 10,
          fullShare: Math.round((100 * published.full) / published.messages) / 100,
          pulls,
          viewHashes,
          viewBytes: view.indexBytes,
          ...routersHeld(o, fleet, endMs),
        }
      : undefined;
  const routersEstimate = fleet.routers.map((rt) => rt.local.routers);
  const receipts = { judged: 0, expectedHits: 0, misroutes: 0, errorTokens: 0 };
  for (const rt of fleet.routers) {
    const t = rt.receipts.totals();
    receipts.judged += t.judged;
    receipts.expectedHits += t.expectedHits;
    receipts.misroutes += t.misroutes;
    receipts.errorTokens += t.errorTokens;
  }
  return summarize(o.policy, { routers: fleet.routers.length, replicas: o.replicas }, results, totals, o.durationS, {
    perReplicaLoad,
    routersEstimate,
    receipts,
    ...(gossip ? { gossip } : {}),
  });
}

interface Fleet {
  replicas: DesReplica[];
  routers: Array<RouterCore<Rec>>;
  /** Snapshot pulls in flight (promises the run must let settle). */
  pulls(): number;
  tenants: DesTenants | undefined;
  /** State bytes delivered to each router (gossip feed; empty otherwise). */
  received: number[];
}

type Outcomes = { finish(rec: Rec): void; fail(rec: Rec, code: string, status: number): void };

/** The simulated replicas: engine model + agent core each, by role with `pd` and by group with `groups`. */
function buildReplicas(
  o: DesOptions,
  q: EventQueue,
  profile: EngineProfile,
  hop: number,
  hooks: ReplicaHooks,
  deployment: ReturnType<typeof deploymentOf>,
): DesReplica[] {
  // A peer deployed without Warmpath's agents has no admission control, and sees only the adapters the engine reports in use.
  const roles = pdRolesOf(o.pd);
  return desReplicas(roles?.length ?? o.replicas, q, profile, o.scenario.fleet, hop, hooks, (i) => ({
    ...o.agentOverrides,
    ...(roles !== undefined ? { role: roles[i] } : {}),
    ...(o.groups !== undefined ? { group: `g${i % o.groups.count}` } : {}),
    admission: deployment.admission,
    ...(deployment.admission ? {} : { loadedAdapters: false }),
  }));
}

/** Replicas (engine + agent), router cores with the simulator as their transport, the policy's feed between them. */
function buildFleet(
  o: DesOptions,
  q: EventQueue,
  profile: EngineProfile,
  hop: number,
  random: () => number,
  out: Outcomes,
  prepared: WeakMap<RequestInfo, Prepared>,
): Fleet {
  const deployment = deploymentOf(o.policy);
  const routers: Array<RouterCore<Rec>> = [];
  const gossip = o.gossip ?? DEFAULT_GOSSIP;
  const feed = feedHooks(deployment.feed, q, routers, random, gossip);
  const hooks: ReplicaHooks = { ...feed.hooks, ...resultHooks(out), ...analysisHooks(o) };
  const replicas = buildReplicas(o, q, profile, hop, hooks, deployment);
  const byId = new Map(replicas.map((r) => [r.id, r]));
  // When each router last heard an attempt end on each replica (`router/replica`), for onRefused.
  const ended = new Map<string, number>();
  // The router → agent hop: the agent admits (or refuses, answered one hop later) on arrival.
  const send: Send<Rec> = (d, sent) => {
    const rec = d.ctx;
    rec.result.route ??= d.branch;
    rec.result.replica = d.replica.id;
    if (d.route.pd !== undefined) rec.result.pd = d.route.pd.mode;
    const key = `${rec.router}/${d.replica.id}`;
    const placed = { reportAt: d.replica.reportAt, placedAt: q.now, endedBefore: ended.get(key) ?? -Infinity };
    const report =
      o.onRefused === undefined ? sent : (r: SendResult) => (r.kind === 'done' && ended.set(key, q.now), sent(r));
    if (sendPair(q, hop, profile, byId, d, report)) return;
    q.after(hop, () => {
      const refused = byId.get(d.replica.id)!.offer(rec, d.attempt, report, d.queueLimit, bandRank(d.band));
      if (refused === undefined) return;
      const { reason, queued } = refused;
      o.onRefused?.({ router: rec.router, replica: d.replica.id, ...placed, at: q.now, reason, queued });
      q.after(hop, () => report({ kind: 'rejected', status: 429, ...refused }));
    });
  };
  let pulls = 0;
  // The peers' emulations are policies of the benchmark's, not the product's: registered before the config names one.
  registerPeers();
  const config = routerConfig({
    ...tierRouterSettings(o.scenario.fleet),
    ...o.routerOverrides,
    policy: deployment.routerPolicy,
    fleet: 'des',
  });
  const tenants = o.tenants && desTenants(o.tenants, o.routers, q, random, gossip);
  const servedBy = (i: number): RouterConfig => {
    const models = o.groups?.routers?.[i];
    return models === undefined ? config : routerConfig({ ...config, models: [...models] });
  };
  const oracle =
    o.policy === 'oracle' ? createOraclePolicy(new Map(replicas.map((r) => [r.id, r.model])), prepared) : undefined;
  for (let i = 0; i < o.routers; i++) {
    routers.push(
      new RouterCore<Rec>({
        config: servedBy(i),
        id: `router-${i}`,
        clock: q.clock(),
        send,
        answer: (rec, e) => out.fail(rec, e.code, ERRORS[e.code].status),
        fetchSnapshot: (rv) => {
          pulls++;
          const bytes = encodeSnapshot(byId.get(rv.id)!.core.publisher.snapshot());
          return Promise.resolve(bytes).finally(() => pulls--);
        },
        random,
        ...(oracle !== undefined ? { policy: oracle } : {}),
        ...(tenants !== undefined ? { tenancy: tenants.tenancies[i]! } : {}),
      }),
    );
  }
  // Scrape and publish phases: two draws per replica whatever the feed (the stream stays the same).
  for (const r of replicas)
    feed.start(r, random() * r.core.config.scrapeIntervalMs, random() * r.core.config.publishIntervalMs);
  return { replicas, routers, pulls: () => pulls, tenants, received: feed.received };
}

/** A request's result as its replica streams it: first token, inter-token gaps, the end. */
/** The run's analysis hooks (DesOptions.onSubmitted, onStep), when it has them. */
function analysisHooks(o: DesOptions): Pick<ReplicaHooks, 'submitted' | 'stepped'> {
  const { onSubmitted, onStep } = o;
  return {
    ...(onSubmitted !== undefined ? { submitted: (rec: Rec, seq) => onSubmitted(seq, rec.plan.tag) } : {}),
    ...(onStep !== undefined ? { stepped: (r: DesReplica, res) => onStep(r.id, res) } : {}),
  };
}

function resultHooks(out: Outcomes): Pick<ReplicaHooks, 'token' | 'finished'> {
  return {
    token: (rec, generated, at) => {
      if (generated === 1) rec.result.ttftMs = at - rec.arrivedAt;
      else rec.result.itlMs.push(at - rec.lastTokenAt);
      rec.lastTokenAt = at;
    },
    finished: (rec, end) => {
      if ('error' in end) return out.fail(rec, end.error, end.status);
      Object.assign(rec.result, {
        ok: true,
        status: 200,
        e2eMs: end.at - rec.arrivedAt,
        promptTokens: end.promptTokens,
        cachedTokens: end.cachedTokens,
        outputTokens: end.outputTokens,
      });
      out.finish(rec);
    },
  };
}

/**
 * One record per planned request, made when it arrives at its router (one
 * hop after it is sent) with its description: the inbox's, else described
 * here. Arrival events are all scheduled before the run starts, and the run
 * ends after the last, so every record is made.
 */
function scheduleArrivals(
  o: DesOptions,
  q: EventQueue,
  hop: number,
  fleet: Fleet,
  prepared: WeakMap<RequestInfo, Prepared>,
  inbox: PreparedInbox | undefined,
): Array<Rec | undefined> {
  const adapters = new Set(o.scenario.fleet.adapters ?? []);
  const settings = fleet.routers[0]!.config;
  const recs = new Array<Rec | undefined>(o.plan.length);
  o.plan.forEach((p, i) => {
    const router = (p.target ?? i) % fleet.routers.length;
    const arrivedAt = WARMUP_MS + p.at;
    q.at(arrivedAt + hop, () => {
      const rec = (recs[i] = newRec(i, p, inbox?.take(i) ?? prepare(p, adapters, settings), router, arrivedAt));
      prepared.set(rec.prep.info, rec.prep);
      fleet.routers[router]!.route(rec, rec.prep.info, p.body, fleet.tenants?.who(router, p));
    });
  });
  return recs;
}
