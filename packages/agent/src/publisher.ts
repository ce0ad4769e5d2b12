/**
 * Publisher: the replica's state on gossip, periodically and on change, with
 * an injected clock and an injected send (gossip live, the event queue in
 * the discrete-event simulator).
 *
 * Steps: every `intervalMs` after the last message (the floor a quiet
 * agent keeps), or as soon as `minGapMs` allows after a change placement
 * reads (status, models, hot adapters; the routers' guess of the prefill
 * queue or the in-flight work below the truth by ≥ `changeTokens`, or above
 * it by ≥ `overTokens`: `drift`, dead reckoning; KV use or in-flight work
 * moved by ≥ 10% of KV capacity, or the in-flight count by max(4, 50%);
 * `changeChunks` cached chunks added or removed), build a ReplicaState with
 * seq + 1 and the cache model's delta since the previous message
 * (`digest.from` = previous seq). A change-triggered message whose static
 * fields are those of the previous one leaves them out on the wire
 * (`staticSeq`, shared compact.ts); the first message a floor period or
 * more after the last one that carried them carries them again, so a router
 * that missed them (or joined late) waits at most two periods, however busy
 * the agent. A reset or a delta over
 * LIMITS.deltaHashes goes out as from = -1 with no hashes: routers pull the
 * snapshot instead.
 * Complexity: O(delta) per message; `drift` O(requests in flight) per check;
 * the snapshot is O(digest) on demand.
 * Trade-off: a fixed period keeps state fresh with no acknowledgements; a lost
 * message costs a receiver one snapshot pull (it sees the gap in `from`).
 * Publishing when the routers' guess is about one request's work off is
 * what lets many routers decide alike: between messages a router knows only
 * the work it sent itself and what the arrival rate foretells of the others'.
 * What it can already tell (its own dispatches, a steady stream) needs no
 * message, nor does what no placement reads (the engine's own queue). A
 * guess above the truth (work done or not sent) can only send a request
 * elsewhere; one below it can send work to a replica that is full, so an
 * operator may let the first drift further (`overTokens`). Invariant: the guess is checked at every admission and every
 * scrape, so no router's guess of a replica's queued work stays off by more
 * than `changeTokens` (in expectation over which router sent what) for
 * longer than a scrape period and `minGapMs`: a check between them (when the
 * guess alone would cross the margin) published more without placing
 * better (docs/GOSSIP.md, 'Checking the guess between events'). Evidence: docs/SCALE.md, "The rule:
 * publish on a change of about one request's work"; the rule and the floor:
 * docs/GOSSIP.md, "The cadence: dead reckoning, and the floor".
 */
import { encodeState, expectedSince, LIMITS, PROTOCOL_VERSION, STATIC_FIELDS } from '@warmpath/shared/wire';
import type { DigestSnapshot, EngineKind, ReplicaRole, ReplicaState } from '@warmpath/shared/wire';
import type { Clock } from '@warmpath/shared/runtime';
import type { AgentLedger } from './ledger.ts';

/** Who this replica is, as its state messages say. */
export interface ReplicaIdentity {
  fleet: string;
  replica: string;
  boot: string;
  /** Wall-clock ms of this boot (supersede order across restarts). */
  bootAt: number;
  /** Proxy base URL routers send requests to. */
  url: string;
  /** Admin base URL routers pull digest snapshots from. */
  admin: string;
  engine: EngineKind;
  /** Disaggregation role; 'both' (or absent) is published as nothing, so an aggregated replica's messages stay as they were. */
  role?: ReplicaRole;
  /** Topology label (host, rack or zone); '' or absent = not published. */
  zone?: string;
  /** A prefill replica's KV bootstrap address, host:port (SGLang's bootstrap server). */
  kvBootstrap?: string;
  /** The model group it publishes for (`--group`); absent: its base model (protocol.ts groupOf). */
  group?: string;
}

export interface PublisherOptions {
  identity: ReplicaIdentity;
  intervalMs: number;
  minGapMs: number;
  /** A move of the prefill queue or the in-flight work by this many tokens is significant; 0 = off. */
  changeTokens: number;
  /** The same for a guess above the truth (work routers believe is there and is not); 0 = `changeTokens`. */
  overTokens: number;
  /** This many digest hashes added or removed since the last message is significant; 0 = off. */
  changeChunks: number;
  clock: Clock;
  /** Wall clock for `sentAt`, ms since the epoch (virtual time in the simulator). */
  wallClock: () => number;
  /** Sends one message (the decoded state rides along for in-process receivers); undefined = no gossip (state is still built and counted). */
  send: ((bytes: Uint8Array, state: ReplicaState) => Promise<unknown> | void) | undefined;
}

export class Publisher {
  readonly #ledger: AgentLedger;
  readonly #o: PublisherOptions;
  #seq = 0;
  #cancelPeriodic: (() => void) | undefined;
  #cancelSoon: (() => void) | undefined;
  #lastAt = 0;
  #last: ReplicaState | undefined;
  /** The static fields of the last message, and the seq since which they have been the same. */
  #staticKey = '';
  #staticSince = 0;
  /** When the last message with the static fields went out (clock ms). */
  #wholeAt = -Infinity;
  #sending: Promise<unknown> | undefined;
  #running = false;
  bytes = 0;
  messages = 0;
  /** Digest hashes sent (added + removed), and messages sent with the static fields. */
  hashes = 0;
  full = 0;

  constructor(ledger: AgentLedger, o: PublisherOptions) {
    this.#ledger = ledger;
    this.#o = o;
  }

  get seq(): number {
    return this.#seq;
  }

  get last(): ReplicaState | undefined {
    return this.#last;
  }

  /** Publishes now and then periodically. */
  start(): void {
    this.#running = true;
    this.publishNow();
  }

  stop(): void {
    this.#running = false;
    this.#cancelPeriodic?.();
    this.#cancelSoon?.();
    this.#cancelSoon = undefined;
  }

  /** Publish soon if the state changed significantly since the last message (or `force`). */
  poke(force = false): void {
    if (!this.#running || this.#cancelSoon !== undefined) return;
    if (!force && !this.significant()) return;
    const wait = Math.max(0, this.#lastAt + this.#o.minGapMs - this.#o.clock.now());
    this.#cancelSoon = this.#o.clock.schedule(wait, () => {
      this.#cancelSoon = undefined;
      this.publishNow(false);
    });
  }

  /**
   * Builds and sends one message now (send errors are counted, not thrown).
   * `full` false (a change-triggered message): the static fields are left
   * out when unchanged, since routers hold them from an earlier message.
   */
  publishNow(full = true): ReplicaState {
    const state = this.build(full);
    const bytes = encodeState(state);
    this.#last = state;
    this.#lastAt = this.#o.clock.now();
    this.bytes += bytes.byteLength;
    this.messages++;
    this.hashes += state.digest.added.length + state.digest.removed.length;
    if (state.staticSeq === undefined) this.full++;
    const m = this.#ledger.metrics;
    m.gossipBytes.inc(bytes.byteLength);
    m.gossipMessages.inc();
    m.cacheChunks.set(this.#ledger.cache.size);
    m.cacheCapacity.set(this.#ledger.cache.capacity);
    const age = this.#ledger.cache.evictionAgeMs;
    if (age !== undefined) {
      if (m.registry.getSingleMetric('warmpath_agent_cache_eviction_age_seconds') === undefined)
        m.registry.registerMetric(m.cacheEvictionAge);
      m.cacheEvictionAge.set(age / 1000);
    }
    if (this.#running) {
      this.#cancelPeriodic?.();
      this.#cancelPeriodic = this.#o.clock.schedule(this.#o.intervalMs, () => this.publishNow());
    }
    const sending = this.#o.send?.(bytes, state);
    if (sending !== undefined) this.#sending = sending.catch(() => m.gossipErrors.inc());
    return state;
  }

  /** Publishes now and resolves once the message is sent (drain and close announce this way). */
  async announce(): Promise<void> {
    this.publishNow();
    await this.#sending;
  }

  /** The full digest as of the last published message (served to routers that missed deltas). */
  snapshot(): DigestSnapshot {
    const id = this.#o.identity;
    const hashes = this.#ledger.cache.published();
    const gpu = this.#ledger.gpu;
    return {
      v: PROTOCOL_VERSION,
      replica: id.replica,
      boot: id.boot,
      seq: this.#seq,
      chunkChars: this.#ledger.config.chunkChars,
      hashes,
      ...(gpu !== undefined ? { host: gpu.hostOf(hashes) } : {}),
    };
  }

  /** Next message (advances seq and takes the delta); `full` false may leave the static fields out. */
  build(full = true): ReplicaState {
    const l = this.#ledger;
    const id = this.#o.identity;
    const prev = this.#seq;
    const seq = ++this.#seq;
    const delta = l.cache.takeDelta(LIMITS.deltaHashes);
    // A full delta is no delta: routers pull the snapshot, which carries the tiers; past the limit, tier moves wait for it too.
    const tiers = l.gpu?.take(l.cache, delta.added);
    const n = delta.added.length + delta.removed.length;
    const moved =
      tiers !== undefined && !delta.full && n + tiers.promoted.length + tiers.host.length <= LIMITS.deltaHashes;
    const state: ReplicaState = {
      v: PROTOCOL_VERSION,
      fleet: id.fleet,
      replica: id.replica,
      boot: id.boot,
      bootAt: id.bootAt,
      seq,
      sentAt: this.#o.wallClock(),
      url: id.url,
      admin: id.admin,
      engine: id.engine,
      models: l.models.slice(0, LIMITS.listItems),
      ...(id.group !== undefined ? { group: id.group } : {}),
      adapters: l.adapters.slice(0, LIMITS.listItems),
      hotAdapters: l.hotAdapters().slice(0, LIMITS.listItems),
      endpoints: l.endpoints(),
      capacity: l.capacity(),
      // The ITL tail from a decode replica only (the P/D rule's): an aggregated replica's messages stay as they were.
      load: l.load(id.role === 'decode'),
      status: l.status,
      chunkChars: l.config.chunkChars,
      digest: {
        from: delta.full || prev === 0 ? -1 : prev,
        added: delta.added,
        removed: delta.removed,
        ...(moved && tiers.host.length > 0 ? { host: tiers.host } : {}),
        ...(moved && tiers.promoted.length > 0 ? { gpu: tiers.promoted } : {}),
        size: l.cache.publishedSize,
      },
      ...(id.role !== undefined && id.role !== 'both' ? { role: id.role } : {}),
      ...(id.zone !== undefined && id.zone !== '' ? { zone: id.zone } : {}),
      ...(id.kvBootstrap !== undefined && id.kvBootstrap !== '' && id.role === 'prefill'
        ? { kvBootstrap: id.kvBootstrap }
        : {}),
    };
    const key = staticKey(state);
    if (key !== this.#staticKey) [this.#staticKey, this.#staticSince] = [key, seq];
    else if (!full && this.#o.clock.now() - this.#wholeAt < this.#o.intervalMs) state.staticSeq = this.#staticSince;
    if (state.staticSeq === undefined) this.#wholeAt = this.#o.clock.now();
    return state;
  }

  /** Has the state changed enough since the last message that routers should hear it now? */
  significant(): boolean {
    const last = this.#last;
    const l = this.#ledger;
    if (last === undefined) return true;
    if (last.status !== l.status) return true;
    if (last.models.length !== l.models.length || last.adapters.length !== l.adapters.length) return true;
    if (last.hotAdapters.join(',') !== l.hotAdapters().join(',')) return true;
    const moved = this.#o.changeTokens;
    if (moved > 0) {
      const [under, over] = this.drift();
      if (under >= moved || over >= (this.#o.overTokens || moved)) return true;
    }
    const chunks = this.#o.changeChunks;
    if (chunks > 0 && l.cache.pending >= chunks) return true;
    const cap = l.kvCapacityTokens;
    if (cap > 0 && Math.abs(l.inflightTokens - last.load.inflightTokens) >= 0.1 * cap) return true;
    if (cap > 0 && Math.abs(l.load().kvUsedTokens - last.load.kvUsedTokens) >= 0.1 * cap) return true;
    const n = l.inflight.size;
    if (Math.abs(n - last.load.inflight) >= Math.max(4, 0.5 * last.load.inflight)) return true;
    return false;
  }

  /**
   * How far (tokens) the routers' guess of this replica's queue and work has
   * drifted from the truth since the last message: dead reckoning, the
   * router's prediction (placement/candidates.ts) run here. A router reads
   * the report plus the work it sent since (still open) and adds to the
   * queue the work the arrival rate says the others sent (expectedSince).
   * Two guesses bound every router: one router, which sent all work admitted
   * since (its guess misses only the drain: prefill done, requests ended),
   * and a router among very many, which sent none of it (the report plus the
   * arrival rate × the age, checked against the in-flight work, which is in
   * the arrival rate's units). A router among N guesses the mean of the two
   * weighted 1/N and 1 − 1/N (in expectation over which router sent what),
   * so its error is at most the larger of theirs. Returned as the most
   * any guess is below the truth and the most any is above it.
   */
  drift(): [under: number, over: number] {
    const l = this.#ledger;
    const last = this.#last!.load;
    let sentWork = 0;
    let sentPrefill = 0;
    for (const r of l.inflight) {
      if (r.admittedAt <= this.#lastAt) continue;
      // A router counts what it sent until the request ends, its first token or not.
      sentWork += r.work;
      sentPrefill += r.prefill;
    }
    // The many-router guess, in work: the queue's share of its error is the drain (as for one router) plus the
    // same arrival surprise the work shows, so work alone measures it.
    const others = expectedSince(last.arrivalTokensPerS ?? 0, this.#o.clock.now() - this.#lastAt);
    // Each guess's error, truth − guess: positive, the routers believe less is there than is.
    const errors = [
      l.pendingPrefillTokens - last.prefillTokens - sentPrefill,
      l.inflightTokens - last.inflightTokens - sentWork,
      l.inflightTokens - last.inflightTokens - others,
    ];
    return [Math.max(0, ...errors), Math.max(0, ...errors.map((e) => -e))];
  }
}

/** The static fields of a state (shared STATIC_FIELDS), as one comparable string. */
function staticKey(s: ReplicaState): string {
  const r = s as unknown as Record<string, unknown>;
  return JSON.stringify(STATIC_FIELDS.map((k) => r[k]));
}
