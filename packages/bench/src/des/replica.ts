/**
 * One simulated replica: the simulator's engine model behind the agent's
 * logic, in virtual time. The agent scrapes its engine and publishes state on
 * timers; requests are admitted (or refused), submitted to the engine, and
 * stepped one engine step per event.
 */
import { AgentLedger, agentConfig, createMetrics, Publisher, type Admitted } from '@warmpath/agent';
import type { SendResult } from '@warmpath/router';
import type { ReplicaState } from '@warmpath/shared/wire';
import { EngineModel, type EngineProfile, type StepResult } from '@warmpath/sim';
import { DEFAULT_MODEL, type FleetShape } from '../scenarios.ts';
import type { EventQueue } from './queue.ts';
import type { Rec } from './request.ts';

/** What a replica tells the run about its requests. */
export interface ReplicaHooks {
  /** A state message left the agent (the run delivers it to every router). */
  published(state: ReplicaState): void;
  /** A token reached the client (one hop after the engine step ended). */
  token(rec: Rec, generated: number, at: number): void;
  /** The request ended (ok, or the engine refused it with `error`). */
  finished(rec: Rec, end: { promptTokens: number; cachedTokens: number; outputTokens: number; at: number } | { error: string; status: number }): void;
}

interface Live {
  rec: Rec;
  admitted: Admitted;
  /** The router's attempt to tell how it ended (undefined: the oracle, no router). */
  report: ((r: SendResult) => void) | undefined;
}

export class DesReplica {
  readonly id: string;
  readonly model: EngineModel;
  readonly core: AgentLedger;
  readonly publisher: Publisher;
  readonly #q: EventQueue;
  readonly #hop: number;
  readonly #hooks: ReplicaHooks;
  #stepping = false;
  #pokeAt = -1;
  /** seq id → what the agent and router need when it finishes. */
  readonly #live = new Map<string, Live>();
  readonly #profile: EngineProfile;

  constructor(id: string, q: EventQueue, profile: EngineProfile, shape: FleetShape, hop: number, hooks: ReplicaHooks) {
    this.id = id;
    this.#q = q;
    this.#hop = hop;
    this.#hooks = hooks;
    this.#profile = profile;
    this.model = new EngineModel(profile, { maxLoras: shape.maxLoras ?? 0, adapters: shape.adapters ?? [] });
    const config = agentConfig({ fleet: 'des', replicaId: id, gossip: false });
    const now = () => q.now;
    this.core = new AgentLedger(config, createMetrics(), now);
    this.core.engineUp = true;
    this.core.defaultEndpoints = ['chat', 'completion', 'responses'];
    this.core.setModels([{ id: DEFAULT_MODEL, parent: undefined }, ...(shape.adapters ?? []).map((a) => ({ id: a, parent: DEFAULT_MODEL }))]);
    this.publisher = new Publisher(this.core, {
      identity: { fleet: 'des', replica: id, boot: `${id}-boot`, bootAt: 0, url: `des://${id}`, admin: `des://${id}/admin`, engine: 'vllm' },
      intervalMs: config.publishIntervalMs, minGapMs: config.minPublishGapMs, send: undefined, clock: q.clock(), wallClock: now,
    });
  }

  /** Starts scraping and publishing at the given phases; both stop once virtual time passes `endAt`. */
  start(scrapePhase: number, publishPhase: number, endAt: number): void {
    const every = (ms: number, fn: () => void, phase: number) => {
      const tick = () => {
        fn();
        if (this.#q.now < endAt) this.#q.after(ms, tick);
      };
      this.#q.at(phase, tick);
    };
    every(this.core.config.scrapeIntervalMs, () => this.#scrape(), scrapePhase);
    every(this.core.config.publishIntervalMs, () => this.#publish(), publishPhase);
  }

  #scrape(): void {
    const s = this.model.snapshot();
    const profile = this.#profile;
    this.core.setSnapshot(
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
      this.#q.now,
    );
  }

  #publish(): void {
    this.#hooks.published(this.publisher.publishNow());
  }

  #poke(): void {
    const q = this.#q;
    if (this.#pokeAt >= q.now || !this.publisher.significant()) return;
    this.#pokeAt = Math.max(q.now, (this.publisher.last?.sentAt ?? -Infinity) + this.core.config.minPublishGapMs);
    q.at(this.#pokeAt, () => this.#publish());
  }

  /** The agent's side of one attempt: admission, then the engine. False when the agent refuses it. */
  offer(rec: Rec, attempt: number, report: ((r: SendResult) => void) | undefined): boolean {
    const a = this.core.admit(rec.prep.info);
    if ('reason' in a) return false;
    const id = `req-${rec.i}-${attempt}`;
    this.#live.set(id, { rec, admitted: a, report });
    try {
      this.model.submit({ id, promptTokens: rec.prep.promptTokens, maxTokens: rec.prep.info.maxTokens, blockHashes: rec.prep.blockHashes, adapter: rec.prep.info.adapter }, this.#q.now);
    } catch (err) {
      // The engine refuses the request itself (context length, unknown adapter): a 400, as over HTTP.
      this.#live.delete(id);
      this.core.end(a.flight);
      report?.({ kind: 'done', outcome: 'error', status: 400 });
      this.#hooks.finished(rec, { error: (err as { code?: string }).code ?? 'invalid_request', status: 400 });
      return true;
    }
    this.#kick();
    this.#poke();
    return true;
  }

  // ---- the engine: one step event at a time ------------------------------
  #kick(): void {
    if (this.#stepping) return;
    const wake = this.model.nextWakeMs(this.#q.now);
    if (wake === Number.POSITIVE_INFINITY) return;
    this.#stepping = true;
    this.#q.at(wake, () => this.#step());
  }

  #step(): void {
    const q = this.#q;
    const res = this.model.step(q.now);
    if (res.durationMs === 0) {
      // Nothing schedulable now. Sleep until the next front-end arrival if there is one; else
      // until something changes (a submit or an abort kicks the engine again) — never spin.
      this.#stepping = false;
      const next = this.model.nextWakeMs(q.now);
      if (next !== Number.POSITIVE_INFINITY && next > q.now) {
        this.#stepping = true;
        q.at(next, () => this.#step());
      }
      return;
    }
    q.at(res.endMs, () => {
      this.#deliver(res);
      this.#stepping = false;
      this.#kick();
    });
  }

  #deliver(res: StepResult): void {
    const at = res.endMs + this.#hop;
    for (const s of res.emitted) {
      const x = this.#live.get(s.id);
      if (x === undefined) continue;
      if (s.generated === 1) this.core.firstByte(x.admitted.flight);
      this.#hooks.token(x.rec, s.generated, at);
    }
    for (const s of res.finished) {
      const x = this.#live.get(s.id);
      if (x === undefined) continue;
      this.#live.delete(s.id);
      this.core.feedback(x.rec.prep.info, x.admitted, s.cachedTokens, s.promptTokens);
      this.core.end(x.admitted.flight);
      this.#poke();
      x.report?.({ kind: 'done', outcome: 'ok' });
      this.#hooks.finished(x.rec, { promptTokens: s.promptTokens, cachedTokens: s.cachedTokens, outputTokens: s.generated, at });
    }
  }
}
