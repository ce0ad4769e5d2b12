/**
 * One simulated replica: the simulator's engine model behind the agent core,
 * in virtual time. The core scrapes the engine and publishes state on its own
 * timers (the event queue) — or, for a policy with another feed
 * (feeds.ts), the run asks for a report (scrape and publish now) at that
 * feed's cadence; requests are admitted (or refused), submitted to the
 * engine, and stepped one engine step per event.
 */
import { AGENT_SCHEMA, AgentCore, agentConfig, ENGINE_PRIORITY, type Admitted } from '@warmpath/agent';
import type { SendResult } from '@warmpath/router';
import type { ReplicaState } from '@warmpath/shared/wire';
import { EngineModel, type EngineProfile, type PeerKv, type Sequence, type StepResult } from '@warmpath/sim';
import { cpuKvTokensOf, DEFAULT_MODEL, type FleetShape } from '../scenarios.ts';
import { simEngineSource } from './engine-source.ts';
import { sharedKv } from '../tiers.ts';
import type { EventQueue } from './queue.ts';
import type { Rec } from './request.ts';

/** What a replica tells the run about its requests. */
export interface ReplicaHooks {
  /** A state message of `bytes` left the agent (the run delivers it to every router holding its group). */
  published(state: ReplicaState, bytes: number): void;
  /** A token reached the client (one hop after the engine step ended). */
  token(rec: Rec, generated: number, at: number): void;
  /** The request ended (ok, or the engine refused it with `error`). */
  finished(
    rec: Rec,
    end:
      | { promptTokens: number; cachedTokens: number; outputTokens: number; at: number }
      | { error: string; status: number },
  ): void;
  /** The engine changed (an admission, a step's start or end): the events feed reports it. */
  changed?(replica: DesReplica): void;
  /** The engine accepted the request as `seq` (analysis: its admission and first-token times). */
  submitted?(rec: Rec, seq: Sequence): void;
  /** The engine scheduled one step (analysis). */
  stepped?(replica: DesReplica, res: StepResult): void;
}

/**
 * One leg of a disaggregated request (des/pd.ts): `prefill` runs the prompt
 * and one token, reaches no client and tells `done`; `decode` takes the
 * prompt's KV as received, after the transfer's `readyDelayMs`.
 */
export type DesLeg =
  | { readonly kind: 'prefill'; readonly done: (ok: boolean) => void }
  | { readonly kind: 'decode'; readonly readyDelayMs: number };

interface Live {
  rec: Rec;
  admitted: Admitted;
  leg: DesLeg | undefined;
  /** The router's attempt to tell how it ended (undefined: the oracle, no router). */
  report: ((r: SendResult) => void) | undefined;
}

export class DesReplica {
  readonly id: string;
  readonly model: EngineModel;
  readonly core: AgentCore;
  readonly #q: EventQueue;
  readonly #hop: number;
  readonly #hooks: ReplicaHooks;
  #stepping = false;
  /** Asleep with nothing schedulable: until when (NaN otherwise); a submit that can run sooner re-arms (#kick). */
  #sleepUntil = Number.NaN;
  /** The armed step event's generation: a re-armed sleep's old event does nothing. */
  #armed = 0;
  /** seq id → what the agent and router need when it finishes. */
  readonly #live = new Map<string, Live>();

  /** `agent`: agent config overrides (admission among them); `peers`: the other replicas' caches with KV sharing on. */
  constructor(
    id: string,
    q: EventQueue,
    profile: EngineProfile,
    shape: FleetShape,
    hop: number,
    hooks: ReplicaHooks,
    agent: Record<string, unknown> = {},
    peers?: PeerKv,
  ) {
    this.id = id;
    this.#q = q;
    this.#hop = hop;
    this.#hooks = hooks;
    const cpuKvTokens = cpuKvTokensOf(shape);
    const byPriority = shape.schedulingPolicy === 'priority';
    this.model = new EngineModel(profile, {
      priorityScheduling: byPriority,
      maxLoras: shape.maxLoras ?? 0,
      adapters: shape.adapters ?? [],
      ...(cpuKvTokens > 0 ? { cpuKvTokens } : {}),
      ...(peers !== undefined ? { peers } : {}),
    });
    this.core = new AgentCore({
      config: agentConfig({
        ...tierSettings(profile, cpuKvTokens),
        // The deployment of a priority-scheduling engine: its agent passes the band on (--engine-priority).
        ...(byPriority ? { enginePriority: true } : {}),
        ...agent,
        fleet: 'des',
        replicaId: id,
        gossip: false,
      }),
      identity: {
        fleet: 'des',
        replica: id,
        boot: `${id}-boot`,
        bootAt: 0,
        url: `des://${id}`,
        admin: `des://${id}/admin`,
        engine: 'vllm',
        ...(typeof agent.group === 'string' && agent.group !== '' ? { group: agent.group } : {}),
      },
      engine: simEngineSource(this.model, profile, DEFAULT_MODEL, shape.adapters ?? []),
      clock: q.clock(),
      wallClock: () => q.now,
      send: (bytes, state) => hooks.published(state, bytes.byteLength),
    });
    // A disaggregated fleet's replica publishes its role (a live agent learns it from its engine).
    const role = agent.role;
    if (role === 'prefill' || role === 'decode') this.core.setTopology(role, '', '');
  }

  /** The agent starts its scrape loop and (unless the run's feed reports instead) its publisher at these phases (agents are not synchronized). */
  start(scrapePhase: number, publishPhase: number | undefined, started?: () => void): void {
    this.#q.at(scrapePhase, () => this.core.startMonitor(started));
    if (publishPhase !== undefined) this.#q.at(publishPhase, () => this.core.startPublishing());
  }

  /** Scrape the engine and publish now: one state message whose load and digest are of this instant. */
  report(): void {
    this.core.kick();
    this.core.publisher.publishNow();
  }

  /**
   * The agent's side of one attempt: admission, then the engine. Undefined
   * when admitted; else the refusal as the router hears it (a stale one says
   * what is queued, as x-warmpath-queued does). `band`: the request's
   * priority band rank, when its router has tenants.
   */
  offer(
    rec: Rec,
    attempt: number,
    report: ((r: SendResult) => void) | undefined,
    queueLimit?: number,
    band?: number,
    leg?: DesLeg,
  ): { reason: string; queued?: number } | undefined {
    const info = leg?.kind === 'prefill' ? { ...rec.prep.info, maxTokens: 1 } : rec.prep.info;
    const a = this.core.admit(info, queueLimit, band, leg?.kind === 'decode');
    if ('reason' in a) return a;
    const id = `req-${rec.i}-${attempt}${leg?.kind === 'prefill' ? '-p' : ''}`;
    this.#live.set(id, { rec, admitted: a, report, leg });
    // As the agent's proxy: the band becomes vLLM's `priority` (lower first) when it passes bands on.
    const priority = band !== undefined && this.core.config.enginePriority ? ENGINE_PRIORITY.vllm![band] : undefined;
    try {
      const seq = this.model.submit(
        {
          id,
          promptTokens: rec.prep.promptTokens,
          maxTokens: info.maxTokens,
          blockHashes: rec.prep.blockHashes,
          adapter: info.adapter,
          ...(priority !== undefined ? { priority } : {}),
          ...(leg?.kind === 'decode' ? { readyDelayMs: leg.readyDelayMs, kvReceived: true } : {}),
        },
        this.#q.now,
      );
      this.#hooks.submitted?.(rec, seq);
    } catch (err) {
      // The engine refuses the request itself (context length, unknown adapter): a 400, as over HTTP.
      this.#live.delete(id);
      this.core.finish(info, a);
      report?.({ kind: 'done', outcome: 'error', status: 400 });
      this.#hooks.finished(rec, { error: (err as { code?: string }).code ?? 'invalid_request', status: 400 });
      return undefined;
    }
    this.#hooks.changed?.(this);
    this.#kick();
    return undefined;
  }

  // ---- the engine: one step event at a time ------------------------------
  #kick(): void {
    // Mid-step: the step's end kicks again.
    if (this.#stepping && Number.isNaN(this.#sleepUntil)) return;
    const wake = this.model.nextWakeMs(this.#q.now);
    // Asleep until no later than the work just submitted needs (a host reload's end).
    if (this.#stepping && !(wake < this.#sleepUntil)) return;
    if (wake === Number.POSITIVE_INFINITY) return;
    this.#arm(wake, false);
  }

  #arm(at: number, asleep: boolean): void {
    this.#stepping = true;
    this.#sleepUntil = asleep ? at : Number.NaN;
    const armed = ++this.#armed;
    this.#q.at(at, () => {
      if (armed === this.#armed) this.#step();
    });
  }

  #step(): void {
    const q = this.#q;
    this.#sleepUntil = Number.NaN;
    const res = this.model.step(q.now);
    if (res.durationMs === 0) {
      // Nothing schedulable now. Sleep until the next front-end arrival or reload's end if there
      // is one; else until something changes (a submit or an abort kicks the engine again) — never spin.
      this.#stepping = false;
      const next = this.model.nextWakeMs(q.now);
      if (next !== Number.POSITIVE_INFINITY && next > q.now) this.#arm(next, true);
      return;
    }
    this.#hooks.stepped?.(this, res);
    this.#hooks.changed?.(this);
    q.at(res.endMs, () => {
      this.#deliver(res);
      this.#hooks.changed?.(this);
      this.#stepping = false;
      this.#kick();
    });
  }

  #deliver(res: StepResult): void {
    const at = res.endMs + this.#hop;
    for (const s of res.emitted) {
      const x = this.#live.get(s.id);
      if (x === undefined) continue;
      if (s.generated === 1) this.core.firstByte(x.admitted);
      if (x.leg?.kind !== 'prefill') this.#hooks.token(x.rec, s.generated, at);
    }
    for (const s of res.finished) {
      const x = this.#live.get(s.id);
      if (x === undefined) continue;
      this.#live.delete(s.id);
      this.core.finish(x.rec.prep.info, x.admitted, { cachedTokens: s.cachedTokens, promptTokens: s.promptTokens });
      if (x.leg?.kind === 'prefill') {
        x.leg.done(true);
        continue;
      }
      const usage = { promptTokens: s.promptTokens, cachedTokens: s.cachedTokens, completionTokens: s.generated };
      x.report?.({ kind: 'done', outcome: 'ok', usage });
      this.#hooks.finished(x.rec, {
        promptTokens: s.promptTokens,
        cachedTokens: s.cachedTokens,
        outputTokens: s.generated,
        at,
      });
    }
  }
}

/**
 * The agent's settings for an engine with a host-memory tier: its size, and
 * a digest cap grown with the pooled capacity (the default cap is sized for
 * one GPU's cache; docs/DESIGN-RATIONALE.md, "Tiers").
 */
function tierSettings(profile: EngineProfile, hostKvTokens: number): Record<string, unknown> {
  if (hostKvTokens <= 0) return {};
  const gpu = profile.numGpuBlocks * profile.blockSize;
  return { hostKvTokens, digestMaxHashes: Math.round(AGENT_SCHEMA.digestMaxHashes.default * (1 + hostKvTokens / gpu)) };
}

/** `n` replicas, engine and agent each; with KV sharing on (`shape.kvSharing`), each engine reaches the others' caches. */
export function desReplicas(
  n: number,
  q: EventQueue,
  profile: EngineProfile,
  shape: FleetShape,
  hop: number,
  hooks: ReplicaHooks,
  agent: (i: number) => Record<string, unknown>,
): DesReplica[] {
  const models: EngineModel[] = [];
  const sharing = shape.kvSharing === 'peer';
  const replicas = Array.from(
    { length: n },
    (_, i) =>
      new DesReplica(
        `replica-${i}`,
        q,
        profile,
        shape,
        hop,
        hooks,
        agent(i),
        sharing ? sharedKv(models, i) : undefined,
      ),
  );
  for (const r of replicas) models.push(r.model);
  return replicas;
}
