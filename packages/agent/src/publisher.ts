/**
 * Publisher: the replica's state on gossip, periodically and on change.
 *
 * Steps: every `publishIntervalMs`, or as soon as `minPublishGapMs` allows
 * after a significant change (status, models, hot adapters, a load jump of
 * ≥ 10% of KV capacity, or of max(4, 50%) in the in-flight count), build a ReplicaState with
 * seq + 1 and the cache model's delta since the previous message
 * (`digest.from` = previous seq). A reset or a delta over LIMITS.deltaHashes
 * goes out as from = -1 with no hashes: routers pull the snapshot instead.
 * Complexity: O(delta) per message; the snapshot is O(digest) on demand.
 * Trade-off: a fixed period keeps state fresh with no acknowledgements; a lost
 * message costs a receiver one snapshot pull (it sees the gap in `from`).
 */
import { encodeState, LIMITS, PROTOCOL_VERSION } from '@warmpath/shared/wire';
import type { DigestSnapshot, EngineKind, ReplicaState } from '@warmpath/shared/wire';
import type { AgentCore } from './core.ts';

export interface PublisherOptions {
  fleet: string;
  replica: string;
  boot: string;
  bootAt: number;
  url: string;
  admin: string;
  engine: EngineKind;
  intervalMs: number;
  minGapMs: number;
  /** Sends bytes; undefined = no gossip (state is still built and counted). */
  send: ((bytes: Uint8Array) => Promise<unknown>) | undefined;
  /** Wall clock for `sentAt`, ms since the epoch (virtual time in the fleet simulator). */
  wallClock?: () => number;
}

export class Publisher {
  readonly #core: AgentCore;
  readonly #o: PublisherOptions;
  #seq = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #soon: ReturnType<typeof setTimeout> | undefined;
  #lastAt = 0;
  #last: ReplicaState | undefined;
  #running = false;
  bytes = 0;
  messages = 0;

  constructor(core: AgentCore, o: PublisherOptions) {
    this.#core = core;
    this.#o = o;
  }

  setAdmin(url: string): void {
    this.#o.admin = url;
  }

  get seq(): number {
    return this.#seq;
  }

  get last(): ReplicaState | undefined {
    return this.#last;
  }

  start(): void {
    this.#running = true;
    this.#schedule();
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
    clearTimeout(this.#soon);
  }

  /** Publish soon if the state changed significantly since the last message. */
  poke(force = false): void {
    if (!this.#running || this.#soon !== undefined) return;
    if (!force && !this.significant()) return;
    const wait = Math.max(0, this.#lastAt + this.#o.minGapMs - performance.now());
    this.#soon = setTimeout(() => {
      this.#soon = undefined;
      void this.publishNow();
    }, wait);
  }

  /** Builds and sends one message now; resolves when sent (errors are counted, not thrown). */
  async publishNow(): Promise<ReplicaState> {
    const state = this.build();
    const bytes = encodeState(state);
    this.#last = state;
    this.#lastAt = performance.now();
    this.bytes += bytes.byteLength;
    this.messages++;
    const m = this.#core.metrics;
    m.gossipBytes.inc(bytes.byteLength);
    m.gossipMessages.inc();
    m.cacheChunks.set(this.#core.cache.size);
    m.cacheCapacity.set(this.#core.cache.capacity);
    if (this.#running) this.#schedule();
    if (this.#o.send !== undefined) {
      try {
        await this.#o.send(bytes);
      } catch {
        m.gossipErrors.inc();
      }
    }
    return state;
  }

  /** The full digest as of the last published message (served to routers that missed deltas). */
  snapshot(): DigestSnapshot {
    return {
      v: PROTOCOL_VERSION,
      replica: this.#o.replica,
      boot: this.#o.boot,
      seq: this.#seq,
      chunkChars: this.#core.config.chunkChars,
      hashes: this.#core.cache.published(),
    };
  }

  /** Next message (advances seq and takes the delta). */
  build(): ReplicaState {
    const core = this.#core;
    const prev = this.#seq;
    const seq = ++this.#seq;
    const delta = core.cache.takeDelta(LIMITS.deltaHashes);
    return {
      v: PROTOCOL_VERSION,
      fleet: this.#o.fleet,
      replica: this.#o.replica,
      boot: this.#o.boot,
      bootAt: this.#o.bootAt,
      seq,
      sentAt: (this.#o.wallClock ?? Date.now)(),
      url: this.#o.url,
      admin: this.#o.admin,
      engine: this.#o.engine,
      models: core.models.slice(0, LIMITS.listItems),
      adapters: core.adapters.slice(0, LIMITS.listItems),
      hotAdapters: (core.snapshot?.hotAdapters ?? []).slice(0, LIMITS.listItems),
      endpoints: core.endpoints(),
      capacity: core.capacity(),
      load: core.load(),
      status: core.status,
      chunkChars: core.config.chunkChars,
      digest: {
        from: delta.full || prev === 0 ? -1 : prev,
        added: delta.added,
        removed: delta.removed,
        size: core.cache.size,
      },
    };
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.publishNow(), this.#o.intervalMs);
    this.#timer.unref?.();
  }

  /** Has the state changed enough since the last message that routers should hear it now? */
  significant(): boolean {
    const last = this.#last;
    const core = this.#core;
    if (last === undefined) return true;
    if (last.status !== core.status) return true;
    if (last.models.length !== core.models.length || last.adapters.length !== core.adapters.length) return true;
    if (last.hotAdapters.join(',') !== (core.snapshot?.hotAdapters ?? []).join(',')) return true;
    const cap = core.kvCapacityTokens;
    if (cap > 0 && Math.abs(core.inflightTokens - last.load.inflightTokens) >= 0.1 * cap) return true;
    const n = core.inflight.size;
    if (Math.abs(n - last.load.inflight) >= Math.max(4, 0.5 * last.load.inflight)) return true;
    return false;
  }
}
