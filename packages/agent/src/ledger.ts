/**
 * What the agent knows about its replica: the engine's last snapshot, its
 * models, the cache model, the requests in flight and the status. The agent
 * core (core.ts) owns one and is the only writer; nothing here does I/O and
 * the clock is injected, so the discrete-event fleet simulator runs this same
 * logic in virtual time.
 *
 * Per request: `admit(info)` (admission decision; on admit, predict the
 * cached prefix, start the in-flight record and record the chain in the
 * cache model) → the engine answers → `feedback(…)` with the engine's
 * cached_tokens → `end(flight)`.
 */
import { ARRIVAL_TAU_MS, RECENT_TAU_MS } from '@warmpath/shared/wire';
import type {
  Endpoint,
  ModelRef,
  ReplicaCapacity,
  ReplicaLoad,
  ReplicaStatus,
  RequestInfo,
} from '@warmpath/shared/wire';
import { admit, type RejectReason } from './admission.ts';
import { CacheModel, chunksFor } from './cache-model.ts';
import type { AgentConfig } from './config.ts';
import type { EngineSnapshot, ModelEntry } from './engines/types.ts';
import type { AgentMetrics } from './metrics.ts';
import { ClearDetector } from './cache-clear.ts';
import { DecayingRate } from './rate.ts';
import { ItlWindow } from './itl.ts';
import { GpuTier } from './tiers.ts';

/** Tokens of slack when turning cached_tokens into chunks: engines never report the last block of a prompt as cached. */
const FEEDBACK_SLACK_TOKENS = 32;

/** An admitted request: its in-flight record and what the cache model predicted for it. */
export interface Admitted {
  flight: Inflight;
  /** Chunks the cache model predicted cached. */
  predicted: number;
  /** LRU stamps of the predicted chunks at admission (-1: recorded by a request still in flight). */
  stamps: Float64Array;
}

export interface Inflight {
  need: number;
  work: number;
  /** Uncached prompt tokens, counted in the prefill queue until the first token. */
  prefill: number;
  admittedAt: number;
  firstByte: boolean;
  /** Of a lower band (standard, batch): counted in lowerInflight. */
  lower?: boolean;
  /** Cache stamp before this request recorded its chain. */
  startStamp: number;
}

/** Default cache model size before the engine reports capacity: 64k chunks (≈ 4M tokens of 256-char chunks). */
const INITIAL_CHUNKS = 65_536;

export class AgentLedger {
  readonly config: AgentConfig;
  readonly metrics: AgentMetrics;
  /** The cache model: both tiers as one LRU when the engine has a host-memory tier (tiers.ts). */
  readonly cache: CacheModel;
  /** Which of the cache model's chunks are on the GPU; undefined without a host tier. */
  readonly gpu: GpuTier | undefined;
  readonly inflight = new Set<Inflight>();
  inflightTokens = 0;
  /** Σ prefill of in-flight requests without a first token yet. */
  pendingPrefillTokens = 0;
  /** In-flight requests of the lower bands (rank > 0): a shared reserved replica's lower-band slots (protocol.ts). */
  lowerInflight = 0;
  draining = false;
  closed = false;
  engineUp = false;
  snapshot: EngineSnapshot | undefined;
  snapshotStartedAt = 0;
  /** The engine's ITL tail over the last scrapes (load.itlP99Ms). */
  readonly itl = new ItlWindow();
  models: string[] = [];
  adapters: string[] = [];
  defaultEndpoints: readonly Endpoint[] = [];
  #byName = new Map<string, ModelRef>();
  /** Adapters of the requests this agent admitted, most recent first, at most the engine's adapter slots (hotAdapters). */
  #served: string[] = [];
  /**
   * Cumulative prompt tokens predicted cached at admission from chunks that requests no longer in flight recorded — what
   * the engine holds unless it lost it — and how many admissions predicted any. A chunk a request still in flight
   * recorded may not be computed yet, so a miss on it says nothing.
   */
  readonly settledPredictions = { tokens: 0, admissions: 0 };
  /** Cumulative responses that reported cached_tokens. */
  feedbacks = 0;
  readonly #clear = new ClearDetector();

  /** Monotonic clock, ms (performance.now() in the agent, virtual time in the simulator). */
  readonly now: () => number;
  constructor(config: AgentConfig, metrics: AgentMetrics, now: () => number = () => performance.now()) {
    this.config = config;
    this.metrics = metrics;
    this.now = now;
    this.cache = new CacheModel({
      capacity: config.cacheCapacityChunks > 0 ? config.cacheCapacityChunks : INITIAL_CHUNKS,
      published: config.digestMaxHashes,
    });
    this.gpu = config.hostKvTokens > 0 ? new GpuTier(INITIAL_CHUNKS) : undefined;
  }

  get status(): ReplicaStatus {
    if (this.closed) return 'down';
    if (this.draining) return 'draining';
    return this.engineUp ? 'ready' : 'down';
  }

  get kvCapacityTokens(): number {
    if (this.config.kvCapacityTokens > 0) return this.config.kvCapacityTokens;
    return this.snapshot?.kvCapacityTokens ?? 0;
  }

  /** Takes a scrape that started at `startedAt`; true when the hot adapters changed (routers should hear at once). */
  setSnapshot(snap: EngineSnapshot, startedAt: number): boolean {
    const prevHot = this.hotAdapters().join(',');
    this.snapshot = snap;
    this.snapshotStartedAt = startedAt;
    this.itl.observe(startedAt, snap.itl);
    const cap = this.kvCapacityTokens;
    const cfg = this.config;
    if (cfg.cacheCapacityChunks === 0 && cap > 0) {
      this.cache.resize(chunksFor(cap + cfg.hostKvTokens, cfg.charsPerToken, cfg.chunkChars));
      this.gpu?.resize(chunksFor(cap, cfg.charsPerToken, cfg.chunkChars));
    }
    return prevHot !== this.hotAdapters().join(',');
  }

  /** Cache cleared without a restart, read from the engine's prefix counters (the rule: cache-clear.ts). */
  cacheClearedPerCounters(snap: EngineSnapshot): boolean {
    if (snap.prefixHits === undefined || snap.prefixQueries === undefined) return false;
    const p = this.settledPredictions;
    return this.#clear.cleared({
      predicted: p.tokens,
      admissions: p.admissions,
      hits: snap.prefixHits,
      queries: snap.prefixQueries,
      feedbacks: this.feedbacks,
    });
  }

  setModels(entries: ModelEntry[]): void {
    const models: string[] = [];
    const adapters: string[] = [];
    const byName = new Map<string, ModelRef>();
    for (const e of entries) {
      if (e.parent !== undefined) {
        adapters.push(e.id);
        byName.set(e.id, { model: e.parent, adapter: e.id });
      } else {
        models.push(e.id);
        byName.set(e.id, { model: e.id, adapter: '' });
      }
    }
    this.models = models;
    this.adapters = adapters;
    this.#byName = byName;
  }

  /** Requested model name → (base, adapter). Unknown names pass through as base models; the engine answers 404 itself. */
  resolveModel = (name: string): ModelRef => this.#byName.get(name) ?? { model: name, adapter: '' };

  endpoints(): Endpoint[] {
    return this.config.endpoints.length > 0 ? (this.config.endpoints as Endpoint[]) : [...this.defaultEndpoints];
  }

  /** Prompt tokens the cache model expects the engine to find cached for `predicted` chunks. */
  private cachedTokensOf(info: RequestInfo, predicted: number): number {
    return Math.min(info.promptTokens, (predicted * this.config.chunkChars) / this.config.charsPerToken);
  }

  /** New KV a request takes: its uncached prompt plus the output reserve (a cached prefix's blocks are shared). */
  private needOf(info: RequestInfo, cachedTokens: number): number {
    return Math.max(0, info.promptTokens - cachedTokens) + this.config.outputReserve * info.maxTokens;
  }

  /**
   * Admission decision for a described request whose first `predicted` chunks
   * the cache model expects cached, under the router's queue limit if it sent
   * one (x-warmpath-queue-limit) and in its priority band's share (rank,
   * admission.ts BAND_SHARES); undefined = admit.
   */
  check(info: RequestInfo, predicted = 0, queueLimit?: number, band?: number): RejectReason | undefined {
    if (!this.config.admission) return undefined;
    const need = this.needOf(info, this.cachedTokensOf(info, predicted));
    const snap = this.snapshot;
    let sinceCount = 0;
    let sinceNeed = 0;
    let totalNeed = 0;
    for (const r of this.inflight) {
      totalNeed += r.need;
      if (r.admittedAt >= this.snapshotStartedAt) {
        sinceCount++;
        sinceNeed += r.need;
      }
    }
    const cap = this.kvCapacityTokens;
    return admit(
      {
        running: snap?.running ?? 0,
        waiting: snap?.waiting ?? 0,
        kvUsedTokens: (snap?.kvUsedFraction ?? 0) * cap,
        kvCapacityTokens: cap,
        inflight: this.inflight.size,
        sinceCount,
        sinceNeed,
        totalNeed,
        meanNeed: this.inflight.size > 0 ? totalNeed / this.inflight.size : need,
        need,
        size: this.needOf(info, 0),
        pendingPrefill: this.pendingPrefillTokens,
        ...(queueLimit !== undefined ? { queueLimit } : {}),
        ...(band !== undefined ? { band } : {}),
      },
      this.config,
    );
  }

  /** Oldest start stamp among requests in flight: chunks stamped after it may not be in the engine yet. */
  inflightStampFloor(): number {
    let min = Number.POSITIVE_INFINITY;
    for (const r of this.inflight) if (r.startStamp < min) min = r.startStamp;
    return min;
  }

  /** `received`: the prompt's KV comes by transfer from a prefill replica (a decode leg): nothing joins the prefill queue. */
  begin(info: RequestInfo, predictedChunks: number, received = false): Inflight {
    const cachedTokens = this.cachedTokensOf(info, predictedChunks);
    const prefill = received ? 0 : Math.max(0, Math.round(info.promptTokens - cachedTokens));
    const r: Inflight = {
      need: this.needOf(info, cachedTokens),
      work: prefill + info.maxTokens,
      prefill,
      admittedAt: this.now(),
      firstByte: false,
      startStamp: this.cache.stampNow,
    };
    this.inflight.add(r);
    this.inflightTokens += r.work;
    this.pendingPrefillTokens += prefill;
    this.#arrival.add(r.work, r.admittedAt);
    this.#recent.add(r.work, r.admittedAt);
    this.metrics.inflight.set(this.inflight.size);
    this.metrics.inflightTokens.set(this.inflightTokens);
    return r;
  }

  /** The engine produced the request's first byte: it has left the prefill queue. */
  firstByte(r: Inflight): void {
    if (r.firstByte) return;
    r.firstByte = true;
    if (this.inflight.has(r)) this.pendingPrefillTokens -= r.prefill;
  }

  end(r: Inflight): void {
    if (!this.inflight.delete(r)) return;
    this.inflightTokens -= r.work;
    if (!r.firstByte) this.pendingPrefillTokens -= r.prefill;
    if (r.lower === true) this.lowerInflight--;
    this.metrics.inflight.set(this.inflight.size);
    this.metrics.inflightTokens.set(this.inflightTokens);
    this.#drainWaiters();
  }

  #idleWaiters: Array<() => void> = [];
  /** Resolves when no request is in flight. */
  idle(): Promise<void> {
    if (this.inflight.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
  #drainWaiters(): void {
    if (this.inflight.size !== 0) return;
    const w = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const f of w) f();
  }

  /** Admission control and bookkeeping for one described request: a reject reason, or the admitted record (in flight, chain recorded in the cache model). */
  admit(info: RequestInfo, queueLimit?: number, band?: number, received = false): { reason: RejectReason } | Admitted {
    const cache = this.cache;
    const predicted = cache.predict(info.hashes);
    const reason = this.check(info, predicted, queueLimit, band);
    if (reason !== undefined) return { reason };
    const stamps = new Float64Array(predicted);
    for (let i = 0; i < predicted; i++) stamps[i] = cache.stampAt(info.hashes, i);
    // Chunks recorded by requests still in flight may not be in the engine yet; a miss there is no eviction.
    const guard = this.inflightStampFloor();
    for (let i = 0; i < predicted; i++) if (stamps[i]! > guard) stamps[i] = -1;
    let settled = 0;
    while (settled < predicted && stamps[settled] !== -1) settled++;
    if (settled > 0) {
      this.settledPredictions.tokens += this.cachedTokensOf(info, settled);
      this.settledPredictions.admissions++;
    }
    const flight = this.begin(info, predicted, received);
    if ((flight.lower = band !== undefined && band > 0)) this.lowerInflight++;
    // A decode leg's prompt KV lands here by transfer: the cache model learns it as if prefilled here.
    cache.record(info.hashes, this.now());
    this.gpu?.record(info.hashes);
    if (info.adapter !== '' && this.config.loadedAdapters) this.#serve(info.adapter);
    return { flight, predicted, stamps };
  }

  /** The engine's answer for an admitted request: correct the cache model with its cached_tokens. */
  feedback(info: RequestInfo, a: Admitted, cachedTokens: number, promptTokens: number | undefined): void {
    if (info.hashes.length === 0) return;
    const cfg = this.config;
    const m = this.metrics;
    const charsPerToken =
      promptTokens !== undefined && promptTokens > 0 ? info.promptChars / promptTokens : cfg.charsPerToken;
    // Lenient for misses (slack: the engine never reports a prompt's last block), strict for promotions.
    const atMost = Math.min(
      info.hashes.length,
      Math.floor(((cachedTokens + (cachedTokens > 0 ? FEEDBACK_SLACK_TOKENS : 0)) * charsPerToken) / cfg.chunkChars),
    );
    const atLeast = Math.min(info.hashes.length, Math.floor((cachedTokens * charsPerToken) / cfg.chunkChars));
    const predicted = a.predicted;
    const actual = atMost < predicted ? atMost : atLeast > predicted ? atLeast : predicted;
    m.predictedCached.inc(Math.round((predicted * cfg.chunkChars) / charsPerToken));
    m.reportedCached.inc(cachedTokens);
    this.feedbacks++;
    if (actual < predicted) m.cacheCorrections.inc({ kind: 'missed' });
    else if (actual > predicted) m.cacheCorrections.inc({ kind: 'promoted' });
    this.cache.feedback(predicted, actual, actual < predicted ? a.stamps[actual]! : -1);
  }

  /**
   * Adapters on the engine's GPU, as well as the agent can tell: those the
   * engine reports in use (running or waiting requests), then those of the
   * requests it admitted most recently, up to the engine's adapter slots.
   * An engine keeps an adapter loaded after its requests finish and evicts
   * the least recently used one for a new adapter (vLLM's max_loras slots),
   * but reports only the adapters in use; an idle loaded adapter costs no
   * load, so routers should see it as hot.
   */
  hotAdapters(): string[] {
    const slots = this.snapshot?.adapterSlots ?? 0;
    const hot = [...(this.snapshot?.hotAdapters ?? [])];
    for (const a of this.#served) if (hot.length < slots && !hot.includes(a)) hot.push(a);
    return hot;
  }

  #serve(adapter: string): void {
    const slots = this.snapshot?.adapterSlots ?? 0;
    const i = this.#served.indexOf(adapter);
    if (i === 0) return;
    if (i > 0) this.#served.splice(i, 1);
    this.#served.unshift(adapter);
    if (this.#served.length > slots) this.#served.length = slots;
  }

  capacity(): ReplicaCapacity {
    return {
      kvTokens: this.kvCapacityTokens,
      adapterSlots: this.snapshot?.adapterSlots ?? 0,
      weight: this.config.weight,
      maxRunning: this.snapshot?.maxRunning ?? 0,
    };
  }

  readonly #arrival = new DecayingRate(ARRIVAL_TAU_MS);
  readonly #recent = new DecayingRate(RECENT_TAU_MS);
  /**
   * Work admitted per second lately, tokens/s (an exponential average, time constant ARRIVAL_TAU_MS). Published, so
   * that routers sharing the clients can expect each other's unseen work.
   */
  arrivalTokensPerS(): number {
    return this.#arrival.at(this.now());
  }

  /** The same over RECENT_TAU_MS: what this replica's clients of the last several seconds send it. Published for the routers' choice of a new conversation's home. */
  recentTokensPerS(): number {
    return this.#recent.at(this.now());
  }

  load(withItl = true): ReplicaLoad {
    const snap = this.snapshot;
    const itl = withItl ? this.itl.p99Ms() : undefined;
    return {
      running: snap?.running ?? 0,
      waiting: snap?.waiting ?? 0,
      kvUsedTokens: Math.round((snap?.kvUsedFraction ?? 0) * this.kvCapacityTokens),
      inflight: this.inflight.size,
      inflightTokens: this.inflightTokens,
      prefillTokens: this.pendingPrefillTokens,
      arrivalTokensPerS: Math.round(this.arrivalTokensPerS()),
      recentTokensPerS: Math.round(this.recentTokensPerS()),
      ...(this.lowerInflight > 0 ? { lowerInflight: this.lowerInflight } : {}),
      ...(itl !== undefined ? { itlP99Ms: itl } : {}),
    };
  }
}
