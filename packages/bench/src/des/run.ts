/**
 * Discrete-event fleet simulator: the same engine model (packages/sim), the
 * same agent logic (AgentCore: admission, cache model, cached_tokens feedback;
 * Publisher: state messages and digest deltas) and the same router code
 * (FleetView, LocalState, every Policy) as the live fleet, driven in virtual
 * time by one event queue — so thousands of replicas and many routers fit on
 * one core, and policies can be compared in seconds.
 *
 * What is modelled, per request: client → router (placement, retries on an
 * agent's refusal, a bounded saturation queue) → agent (admission, in-flight
 * work) → engine (batching, prefix cache, preemption, LoRA) → tokens back.
 * Agents scrape their engine and publish state every 250 ms (and sooner on a
 * significant change); each router receives each message after a gossip
 * delay; a router that sees a gap pulls the digest snapshot (instantly).
 * Network hops cost `hopMs`. What is not: HTTP parsing CPU, TCP, gossip
 * message loss, the agent's engine-restart detection.
 *
 * Steps: build every replica, router and request record → schedule arrivals,
 * scrapes, publishes and sweeps → run the queue, yielding to the microtask
 * queue when snapshot pulls are pending → fold results into one policy row.
 * Complexity: O(events log events); an engine step is one event per replica.
 */
import { AgentCore, agentConfig, createMetrics, Publisher, type Admitted } from '@warmpath/agent';
import { affinityKey, createPolicy, notifyComplete, notifyDispatch, placeRequest, FleetView, LocalState, routerConfig, type Placement, type PlacementRequest, type Policy, type Replica, type Ticket } from '@warmpath/router';
import { describeRequest, encodeSnapshot, type RequestInfo } from '@warmpath/shared/wire';
import { mulberry32 } from '@warmpath/shared/runtime';
import { EngineModel, PROFILES, promptIdentityOfBody, type EngineProfile, type ProbeResult, type StepResult } from '@warmpath/sim';
import { lastArrivalMs, type PlannedRequest, type RequestResult } from '../loadgen.ts';
import { summarize, type EngineTotals, type PolicyResult } from '../report.ts';
import { DEFAULT_MODEL, type Scenario } from '../scenarios.ts';
import { EventQueue } from './queue.ts';

export interface DesOptions {
  scenario: Scenario;
  plan: PlannedRequest[];
  policy: string;
  replicas: number;
  routers: number;
  durationS: number;
  onProgress?: (done: number, total: number) => void;
  /** Every finished request (analysis, tests). */
  onResult?: (r: RequestResult) => void;
  /** One-way network hop (client↔router, router↔agent), ms. */
  hopMs?: number;
  /** Gossip delivery delay: base + uniform jitter, ms. */
  gossipDelayMs?: number;
  gossipJitterMs?: number;
  /** Router saturation-queue retry period, ms. */
  queuePollMs?: number;
  /** Router config overrides (e.g. loadFactor). */
  routerOverrides?: Record<string, unknown>;
  /** Seed of the run's random stream (gossip jitter, scrape phases, randomized policies); default 1. */
  seed?: number;
}

/** Per planned request, computed once and shared by every policy's run. */
interface Prepared {
  info: RequestInfo;
  key: bigint;
  promptTokens: number;
  blockHashes: BigUint64Array;
}

const prepared = new WeakMap<PlannedRequest, Prepared>();

function prepare(p: PlannedRequest, adapters: ReadonlySet<string>, keyDepth: number): Prepared {
  let x = prepared.get(p);
  if (x !== undefined) return x;
  const kind = p.path === '/v1/completions' ? 'completion' : 'chat';
  const info = describeRequest(p.body, kind, {
    resolveModel: (name) => (adapters.has(name) ? { model: DEFAULT_MODEL, adapter: name } : { model: name, adapter: '' }),
    keyHeader: p.headers?.['x-warmpath-key'],
  });
  const id = promptIdentityOfBody(p.body, kind, { model: info.model, adapter: info.adapter, charsPerToken: 4, blockSize: 16 });
  x = { info, key: affinityKey(info, keyDepth), promptTokens: id.promptTokens, blockHashes: id.blockHashes };
  prepared.set(p, x);
  return x;
}

interface Rec {
  i: number;
  plan: PlannedRequest;
  prep: Prepared;
  router: number;
  arrivedAt: number;
  lastTokenAt: number;
  result: RequestResult;
  exclude: Set<string> | undefined;
  attempt: number;
  queuedUntil: number;
}

interface DesReplica {
  id: string;
  model: EngineModel;
  core: AgentCore;
  publisher: Publisher;
  stepping: boolean;
  pokeAt: number;
  /** seq id → what the agent and router need when it finishes. */
  live: Map<string, { rec: Rec; admitted: Admitted; routerTicket: Ticket | undefined; replicaView: Replica | undefined }>;
}

interface DesRouter {
  view: FleetView;
  local: LocalState;
  policy: Policy;
  waiting: Rec[];
}

export async function runDes(o: DesOptions): Promise<PolicyResult> {
  const shape = o.scenario.fleet;
  const profile: EngineProfile = PROFILES[shape.profile as keyof typeof PROFILES];
  if (profile === undefined) throw new Error(`unknown simulator profile ${shape.profile}`);
  const hop = o.hopMs ?? 0.3;
  const gossipDelay = o.gossipDelayMs ?? 5;
  const gossipJitter = o.gossipJitterMs ?? 15;
  const queuePoll = o.queuePollMs ?? 10;
  const adapters = new Set(shape.adapters ?? []);
  const rcfg = routerConfig({ ...o.routerOverrides, policy: o.policy === 'oracle' ? 'warmpath' : o.policy });
  const q = new EventQueue();
  const now = () => q.now;
  // Gossip jitter, scrape/publish phases and randomized policies: one seeded stream per run
  // (seed 1 keeps the stream the published figures were measured on).
  const random = mulberry32((0x9e3779b9 + (o.seed ?? 1) - 1) >>> 0);

  // Replicas: engine model + agent core + publisher.
  const replicas: DesReplica[] = [];
  const byId = new Map<string, DesReplica>();
  for (let i = 0; i < o.replicas; i++) {
    const id = `replica-${i}`;
    const model = new EngineModel(profile, { maxLoras: shape.maxLoras ?? 0, adapters: shape.adapters ?? [] });
    const config = agentConfig({ fleet: 'des', replicaId: id, gossip: false });
    const core = new AgentCore(config, createMetrics(), now);
    core.engineUp = true;
    core.defaultEndpoints = ['chat', 'completion', 'responses'];
    core.setModels([{ id: DEFAULT_MODEL, parent: undefined }, ...(shape.adapters ?? []).map((a) => ({ id: a, parent: DEFAULT_MODEL }))]);
    const publisher = new Publisher(core, {
      fleet: 'des', replica: id, boot: `${id}-boot`, bootAt: 0, url: `des://${id}`, admin: `des://${id}/admin`, engine: 'vllm',
      intervalMs: config.publishIntervalMs, minGapMs: config.minPublishGapMs, send: undefined, wallClock: now,
    });
    const r: DesReplica = { id, model, core, publisher, stepping: false, pokeAt: -1, live: new Map() };
    replicas.push(r);
    byId.set(id, r);
  }

  // Routers: fleet view + local state + policy, one each.
  let pulls = 0;
  const routers: DesRouter[] = Array.from({ length: o.policy === 'oracle' ? 0 : o.routers }, () => ({
    view: new FleetView({
      fleet: 'des',
      chunkChars: rcfg.chunkChars,
      stateTtlMs: rcfg.stateTtlMs,
      forgetAfterMs: rcfg.forgetAfterMs,
      now,
      fetchSnapshot: (rv) => {
        pulls++;
        const bytes = encodeSnapshot(byId.get(rv.id)!.publisher.snapshot());
        return Promise.resolve(bytes).finally(() => pulls--);
      },
    }),
    local: new LocalState({ overlayTtlMs: rcfg.overlayTtlMs, overlayMaxChunks: rcfg.overlayMaxChunks, suspectMs: rcfg.suspectMs }),
    policy: createPolicy(rcfg.policy, { chunkChars: rcfg.chunkChars, charsPerToken: rcfg.charsPerToken, loadFactor: rcfg.loadFactor, boundFloorTokens: rcfg.boundFloorTokens, random }),
    waiting: [],
  }));

  // ---- agents: scrape and publish --------------------------------------
  const scrape = (r: DesReplica): void => {
    const s = r.model.snapshot();
    r.core.setSnapshot(
      {
        running: s.running,
        waiting: s.waiting,
        kvUsedFraction: s.kvUsage,
        kvCapacityTokens: s.kvTotalBlocks * profile.blockSize,
        maxRunning: profile.maxNumSeqs,
        prefixQueries: s.prefixQueriesTokens,
        prefixHits: s.prefixHitsTokens,
        preemptions: s.preemptions,
        // vLLM's lora_requests_info: adapters of running and waiting requests.
        hotAdapters: [...new Set([...s.lora.running, ...s.lora.waiting])],
        adapterSlots: s.lora.maxLoras,
        counters: [s.prefixQueriesTokens],
        configHint: `${s.kvTotalBlocks}x${profile.blockSize}`,
      },
      q.now,
    );
  };
  const publish = (r: DesReplica): void => {
    void r.publisher.publishNow();
    const state = r.publisher.last!;
    for (const rt of routers) q.after(gossipDelay + random() * gossipJitter, () => rt.view.apply(state, q.now));
  };
  const poke = (r: DesReplica): void => {
    if (r.pokeAt >= q.now || !r.publisher.significant()) return;
    r.pokeAt = Math.max(q.now, (r.publisher.last?.sentAt ?? -Infinity) + r.core.config.minPublishGapMs);
    q.at(r.pokeAt, () => publish(r));
  };
  for (const r of replicas) {
    const every = (ms: number, fn: () => void, phase: number) => {
      const tick = () => {
        fn();
        if (q.now < endAt) q.after(ms, tick);
      };
      q.at(phase, tick);
    };
    every(r.core.config.scrapeIntervalMs, () => scrape(r), random() * r.core.config.scrapeIntervalMs);
    every(r.core.config.publishIntervalMs, () => publish(r), random() * r.core.config.publishIntervalMs);
  }

  // ---- engines: one step event per replica at a time --------------------
  const kick = (r: DesReplica): void => {
    if (r.stepping) return;
    const wake = r.model.nextWakeMs(q.now);
    if (wake === Number.POSITIVE_INFINITY) return;
    r.stepping = true;
    q.at(wake, () => step(r));
  };
  const step = (r: DesReplica): void => {
    const res = r.model.step(q.now);
    if (res.durationMs === 0) {
      // Nothing schedulable now. Sleep until the next front-end arrival if there is one; else
      // until something changes (a submit or an abort kicks the engine again) — never spin.
      r.stepping = false;
      const next = r.model.nextWakeMs(q.now);
      if (next !== Number.POSITIVE_INFINITY && next > q.now) {
        r.stepping = true;
        q.at(next, () => step(r));
      }
      return;
    }
    q.at(res.endMs, () => {
      deliver(r, res);
      r.stepping = false;
      kick(r);
    });
  };
  const deliver = (r: DesReplica, res: StepResult): void => {
    for (const s of res.emitted) {
      const x = r.live.get(s.id);
      if (x === undefined) continue;
      const rec = x.rec;
      const at = res.endMs + hop;
      if (s.generated === 1) {
        rec.result.ttftMs = at - rec.arrivedAt;
        r.core.firstByte(x.admitted.flight);
      }
      else rec.result.itlMs.push(at - rec.lastTokenAt);
      rec.lastTokenAt = at;
    }
    for (const s of res.finished) {
      const x = r.live.get(s.id);
      if (x === undefined) continue;
      r.live.delete(s.id);
      const rec = x.rec;
      rec.result.ok = true;
      rec.result.status = 200;
      rec.result.e2eMs = res.endMs + hop - rec.arrivedAt;
      rec.result.promptTokens = s.promptTokens;
      rec.result.cachedTokens = s.cachedTokens;
      rec.result.outputTokens = s.generated;
      r.core.feedback(rec.prep.info, x.admitted, s.cachedTokens, s.promptTokens);
      r.core.end(x.admitted.flight);
      poke(r);
      if (x.routerTicket !== undefined) {
        const rt = routers[rec.router]!;
        rt.local.complete(x.routerTicket);
        notifyComplete(rt.policy, placementRequest(rec), x.replicaView!, { kind: 'ok' });
      }
      finish(rec);
    }
  };

  // ---- requests ----------------------------------------------------------
  let done = 0;
  const results: RequestResult[] = [];
  const finish = (rec: Rec): void => {
    done++;
    results.push(rec.result);
    o.onResult?.(rec.result);
    o.onProgress?.(done, o.plan.length);
  };
  const fail = (rec: Rec, code: string, status: number): void => {
    rec.result.error = code;
    rec.result.status = status;
    rec.result.e2eMs = q.now + hop - rec.arrivedAt;
    finish(rec);
  };
  const placementRequest = (rec: Rec): PlacementRequest => ({
    info: rec.prep.info,
    endpoint: rec.prep.info.kind,
    key: rec.prep.key,
    body: rec.plan.body,
    exclude: rec.exclude,
    now: q.now,
  });

  /** The agent side: admission, then the engine. Returns false when refused. */
  const toAgent = (r: DesReplica, rec: Rec, routerTicket: Ticket | undefined, replicaView: Replica | undefined): boolean => {
    const a = r.core.admit(rec.prep.info);
    if ('reason' in a) return false;
    const id = `req-${rec.i}-${rec.attempt}`;
    r.live.set(id, { rec, admitted: a, routerTicket, replicaView });
    try {
      r.model.submit({ id, promptTokens: rec.prep.promptTokens, maxTokens: rec.prep.info.maxTokens, blockHashes: rec.prep.blockHashes, adapter: rec.prep.info.adapter }, q.now);
    } catch (err) {
      // The engine refuses the request itself (context length, unknown adapter): a 400, as over HTTP.
      r.live.delete(id);
      r.core.end(a.flight);
      if (routerTicket !== undefined) {
        const rt = routers[rec.router]!;
        rt.local.complete(routerTicket);
        notifyComplete(rt.policy, placementRequest(rec), replicaView!, { kind: 'error', status: 400 });
      }
      fail(rec, (err as { code?: string }).code ?? 'invalid_request', 400);
      return true;
    }
    kick(r);
    poke(r);
    return true;
  };

  const route = (rec: Rec): void => {
    const rt = routers[rec.router]!;
    const preq = placementRequest(rec);
    const placement: Placement = placeRequest(rt.policy, preq, rt.view, rt.local);
    const replica = placement.replica;
    if (replica === undefined) {
      if (placement.branch === 'saturated') {
        if (rec.queuedUntil === 0) {
          rec.queuedUntil = q.now + rcfg.queueTimeoutMs;
          rt.waiting.push(rec);
          return;
        }
        if (q.now < rec.queuedUntil) {
          rt.waiting.push(rec);
          return;
        }
        return fail(rec, 'fleet_saturated', 429);
      }
      return fail(rec, rec.attempt > 0 ? 'upstream_error' : 'no_replica', 503);
    }
    rec.result.route ??= rec.attempt > 0 ? 'retry' : rec.queuedUntil > 0 ? 'queued' : placement.branch;
    rec.result.replica = replica.id;
    const ticket = rt.local.dispatch(replica.id, placement.work ?? rec.prep.info.promptTokens + rec.prep.info.maxTokens, q.now);
    notifyDispatch(rt.policy, preq, replica, rt.local);
    q.after(hop, () => {
      if (toAgent(byId.get(replica.id)!, rec, ticket, replica)) return;
      q.after(hop, () => {
        rt.local.complete(ticket);
        notifyComplete(rt.policy, preq, replica, { kind: 'rejected', status: 429 });
        rec.attempt++;
        if (rec.attempt >= rcfg.maxAttempts) return fail(rec, 'fleet_saturated', 429);
        (rec.exclude ??= new Set()).add(replica.id);
        route(rec);
      });
    });
  };

  /** The oracle: every engine's true cache and queue, lowest predicted TTFT; agents still admit. */
  const oracle = (rec: Rec): void => {
    const ranked = replicas
      .map((r) => [r, r.model.probe(rec.prep.promptTokens, rec.prep.blockHashes, rec.prep.info.adapter)] as [DesReplica, ProbeResult])
      .sort((a, b) => a[1].predictedTtftMs - b[1].predictedTtftMs);
    rec.result.route = 'oracle';
    q.after(hop, () => {
      for (const [r] of ranked) {
        if (toAgent(r, rec, undefined, undefined)) {
          rec.result.replica = r.id;
          return;
        }
      }
      fail(rec, 'fleet_saturated', 429);
    });
  };

  const recs: Rec[] = [];
  // Arrivals start once every router has heard every replica (as live runs wait for convergence).
  const warmup = 2_000;
  const endAt = warmup + lastArrivalMs(o.plan) + 1;
  o.plan.forEach((p, i) => {
    const rec: Rec = {
      i,
      plan: p,
      prep: prepare(p, adapters, rcfg.keyDepthChunks),
      router: (p.target ?? i) % Math.max(1, routers.length),
      arrivedAt: warmup + p.at,
      lastTokenAt: 0,
      exclude: undefined,
      attempt: 0,
      queuedUntil: 0,
      result: {
        tag: p.tag, target: 0, ok: false, status: 0, error: undefined, ttftMs: Number.NaN, e2eMs: Number.NaN, itlMs: [],
        promptTokens: 0, cachedTokens: 0, outputTokens: 0, replica: undefined, route: undefined, sentAt: p.at,
      },
    };
    rec.result.target = rec.router;
    recs.push(rec);
    q.at(rec.arrivedAt + hop, () => (routers.length === 0 ? oracle(rec) : route(rec)));
  });

  // Router upkeep: sweep freshness; retry queued requests.
  for (const rt of routers) {
    const tick = () => {
      rt.view.sweep(q.now);
      if (rt.waiting.length > 0) {
        const w = rt.waiting;
        rt.waiting = [];
        for (const rec of w) route(rec);
      }
      if (done < o.plan.length) q.after(queuePoll, tick);
    };
    q.at(0, tick);
  }
  // Per-replica load over time, once a simulated second.
  const perReplicaLoad: Array<{ t: number; running: number[] }> = [];
  const sample = () => {
    perReplicaLoad.push({ t: q.now, running: replicas.map((r) => r.model.snapshot().running) });
    if (done < o.plan.length) q.after(1000, sample);
  };
  q.at(0, sample);

  // Run; let snapshot pulls (promises) settle whenever some are pending.
  const horizon = endAt + 600_000; // 10 simulated minutes to drain
  while (done < o.plan.length && q.size > 0 && q.now < horizon) {
    // Slices of 50 virtual ms from the next event (never from `now` alone: a gap longer
    // than the slice would otherwise never be crossed).
    q.run(q.nextAt + 50);
    if (pulls > 0) await new Promise((r) => setImmediate(r));
  }
  // Whatever has not finished by the horizon is lost to the client: count it, never drop it.
  if (done < o.plan.length) for (const rec of recs) if (!rec.result.ok && rec.result.error === undefined && Number.isNaN(rec.result.e2eMs)) fail(rec, 'timeout', 504);

  const totals: EngineTotals = { promptTokens: 0, cachedTokens: 0, preemptions: 0, adapterLoads: 0 };
  for (const r of replicas) {
    const s = r.model.snapshot();
    totals.promptTokens += s.prefixQueriesTokens;
    totals.cachedTokens += s.prefixHitsTokens;
    totals.preemptions += s.preemptions;
    totals.adapterLoads += s.lora.loads;
  }
  return summarize(o.policy, { routers: routers.length, replicas: o.replicas }, results, totals, o.durationS, { perReplicaLoad });
}
