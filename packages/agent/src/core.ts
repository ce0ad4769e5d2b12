/**
 * The agent core: everything an agent decides, with no transport. The live
 * agent (agent.ts) is this core + the HTTP proxy + the admin server + engine
 * adapters over HTTP + gossip; the discrete-event simulator is this core + the
 * simulator's engine model, in virtual time.
 *
 * It owns the ledger (engine snapshot, models, cache model, in-flight work,
 * status), the engine monitor (scrape loop, up/down, restart detection) and
 * the publisher (state messages, digest deltas and snapshots), and wires them
 * the one way both worlds share:
 *  - a scrape updates the ledger; a cache clear seen in the engine's prefix
 *    counters or a detected restart resets the cache model; the engine going
 *    up or down, new models or hot adapters publish at once; any scrape
 *    publishes if the load moved significantly.
 *  - per request: gate (draining, engine down) → admit (admission control,
 *    cache prediction, in-flight) → first byte → finish (cached_tokens
 *    feedback, end).
 * Clock, timers, engine and send are injected; nothing here does I/O.
 */
import type { ReplicaRole, ReplicaState, RequestInfo } from '@warmpath/shared/wire';
import { realClock, type Clock } from '@warmpath/shared/runtime';
import type { RejectReason } from './admission.ts';
import type { AgentConfig } from './config.ts';
import type { EngineSnapshot, EngineSource } from './engines/types.ts';
import { AgentLedger, type Admitted } from './ledger.ts';
import { createMetrics, type AgentMetrics } from './metrics.ts';
import { EngineMonitor, type RestartCause } from './monitor.ts';
import { Publisher, type ReplicaIdentity } from './publisher.ts';

/** Why the agent refused a request: admission control, or the replica takes none now. */
export type Refusal = RejectReason | 'draining' | 'engine_down';

export interface AgentCoreOptions {
  /** Validated agent config (agentConfig / loadConfig). */
  config: AgentConfig;
  identity: ReplicaIdentity;
  engine: EngineSource;
  /** Monotonic ms and timers; default performance.now with real timers. */
  clock?: Clock;
  /** Wall-clock ms for state messages; default Date.now. */
  wallClock?: () => number;
  /** Sends a state message; undefined = no gossip. */
  send?: (bytes: Uint8Array, state: ReplicaState) => Promise<unknown> | void;
  metrics?: AgentMetrics;
  /** The engine came up, went down, or lost its cache (operator logs; the simulator passes none). */
  onEngine?: (event: EngineEvent) => void;
}

export type EngineEvent =
  { readonly type: 'up' | 'down' } | { readonly type: 'reset'; readonly cause: RestartCause | 'cleared' };

export class AgentCore {
  readonly config: AgentConfig;
  readonly metrics: AgentMetrics;
  readonly ledger: AgentLedger;
  readonly publisher: Publisher;
  readonly monitor: EngineMonitor;
  readonly #identity: ReplicaIdentity;
  readonly #onEngine: ((event: EngineEvent) => void) | undefined;

  constructor(o: AgentCoreOptions) {
    const clock = o.clock ?? realClock(() => performance.now());
    this.config = o.config;
    this.metrics = o.metrics ?? createMetrics();
    this.#identity = o.identity;
    this.#onEngine = o.onEngine;
    this.ledger = new AgentLedger(o.config, this.metrics, () => clock.now());
    this.ledger.defaultEndpoints = o.engine.endpoints;
    this.publisher = new Publisher(this.ledger, {
      identity: o.identity,
      intervalMs: o.config.publishIntervalMs,
      minGapMs: o.config.minPublishGapMs,
      changeTokens: o.config.publishChangeTokens,
      overTokens: o.config.publishOverTokens,
      changeChunks: o.config.publishChangeChunks,
      clock,
      wallClock: o.wallClock ?? Date.now,
      send: o.send,
    });
    this.monitor = new EngineMonitor(
      o.engine,
      {
        intervalMs: o.config.scrapeIntervalMs,
        modelsIntervalMs: o.config.modelsIntervalMs,
        downAfterFailures: o.config.downAfterFailures,
      },
      clock,
      {
        onScrape: (snap, startedAt) => this.#scraped(snap, startedAt),
        onUp: () => this.#engineUp(true),
        onDown: () => this.#engineUp(false),
        onRestart: (cause) => this.#reset(cause),
        onModels: (models) => {
          this.ledger.setModels(models);
          this.publisher.poke(true);
        },
        onError: (code) => this.metrics.scrapeErrors.inc({ code }),
      },
    );
  }

  get replica(): string {
    return this.#identity.replica;
  }

  get status(): ReplicaState['status'] {
    return this.ledger.status;
  }

  /** Starts the scrape loop; `firstDone` runs when the first scrape (and models read) has ended. */
  startMonitor(firstDone?: () => void): void {
    this.monitor.start(firstDone);
  }

  /** Publishes now, then periodically and on change. */
  startPublishing(): void {
    this.publisher.start();
  }

  /** Stops the scrape loop and the publisher's timers. */
  stop(): void {
    this.monitor.stop();
    this.publisher.stop();
  }

  /** This replica's disaggregation role (ReplicaIdentity.role; 'both' when unset). */
  get role(): 'both' | 'prefill' | 'decode' {
    return this.#identity.role ?? 'both';
  }

  /** Role, topology label and KV bootstrap address, published from the next message on (agent.ts learns them before publishing). */
  setTopology(role: ReplicaRole, zone: string, kvBootstrap: string): void {
    this.#identity.role = role;
    this.#identity.zone = zone;
    this.#identity.kvBootstrap = kvBootstrap;
  }

  setAdminUrl(url: string): void {
    this.#identity.admin = url;
  }

  /** Scrape now: the proxy saw the engine fail. */
  kick(): void {
    this.monitor.kick();
  }

  /** The agent takes nothing now (counted); undefined = it may. Cheap: checked before reading a body. */
  gate(): 'draining' | 'engine_down' | undefined {
    const l = this.ledger;
    const reason = l.draining || l.closed ? 'draining' : !l.engineUp ? 'engine_down' : undefined;
    if (reason !== undefined) this.metrics.rejected.inc({ reason });
    return reason;
  }

  /**
   * Admission for one described request: a refusal (counted; a `stale` one
   * with the prefill queued now, which the router's view takes:
   * x-warmpath-queued), or the admitted record (in flight; routers hear of a
   * load jump). `band`: the priority band's rank, when the router sent one.
   */
  admit(
    info: RequestInfo,
    queueLimit?: number,
    band?: number,
    received = false,
  ): { reason: Refusal; queued?: number } | Admitted {
    const gated = this.gate();
    if (gated !== undefined) return { reason: gated };
    const a = this.ledger.admit(info, queueLimit, band, received);
    if ('reason' in a) {
      this.metrics.rejected.inc({ reason: a.reason });
      return a.reason === 'stale' ? { ...a, queued: this.ledger.pendingPrefillTokens } : a;
    }
    this.metrics.admitted.inc();
    this.publisher.poke();
    return a;
  }

  /** The engine produced the request's first byte: it has left the prefill queue. */
  firstByte(a: Admitted): void {
    this.ledger.firstByte(a.flight);
  }

  /** The request ended; `usage` is what the engine reported (cached_tokens corrects the cache model). */
  finish(info: RequestInfo, a: Admitted, usage?: { cachedTokens: number; promptTokens: number | undefined }): void {
    if (usage !== undefined) this.ledger.feedback(info, a, usage.cachedTokens, usage.promptTokens);
    this.ledger.end(a.flight);
  }

  #scraped(snap: EngineSnapshot, startedAt: number): void {
    this.metrics.scrapes.inc();
    if (this.ledger.setSnapshot(snap, startedAt)) this.publisher.poke(true);
    if (this.ledger.cacheClearedPerCounters(snap)) this.#reset('cleared');
    this.publisher.poke();
  }

  #engineUp(up: boolean): void {
    this.ledger.engineUp = up;
    this.metrics.engineUp.set(up ? 1 : 0);
    this.publisher.poke(true);
    this.#onEngine?.({ type: up ? 'up' : 'down' });
  }

  /** The engine's cache is gone (restart or clear): so is the cache model's; routers pull a fresh snapshot. */
  #reset(cause: RestartCause | 'cleared'): void {
    if (cause !== 'cleared') this.metrics.engineRestarts.inc();
    this.metrics.cacheResets.inc({ cause });
    this.ledger.cache.reset();
    this.ledger.gpu?.reset();
    this.publisher.poke(true);
    this.#onEngine?.({ type: 'reset', cause });
  }
}
