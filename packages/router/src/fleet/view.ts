/**
 * The fleet view: every replica's latest state, fed by gossip, and the
 * derived structures placement reads. This module is the ingest and the
 * facade; each derived concern has its own module:
 *   digest-sync.ts  per-replica prefix digests (deltas, snapshot pulls)
 *   holders.ts      chain hash → replica slots, over all digests
 *   warmth.ts       the longest matched prefix per slot for a request
 *   groups.ts       replicas and rings per (model, adapter), model names
 *   published.ts    the figures placement reads per candidate, by slot
 *   served.ts       the model groups this router serves (--models)
 * Steps per gossip message: decode + validate (drops counted by reason) →
 * from gossip, the publisher's rights (trust.ts: rate, ownership of the id,
 * addresses it may name; `judge` is the topic validator's verdict, so what
 * it rejects is never relayed) → a model group this router serves
 * → supersede by (bootAt, boot, seq) → store it → groups dirty only if
 * membership changed → digest to digest sync → wake listeners. A sweep
 * turns stale replicas not-live, forgets silent ones.
 * Complexity: O(|delta|) table operations plus O(1) per state; load-only updates never rebuild rings.
 * Trade-off: consumers get the stored records, typed read-only (`ReplicaView`), not copies.
 */
import {
  decodeState,
  hashString32,
  supersedes,
  type DecodeResult,
  type Endpoint,
  type ModelRef,
  type ReplicaState,
} from '@warmpath/shared/wire';
import { DigestSync, type DigestStatus } from './digest-sync.ts';
import { Groups, membershipChanged, type Group } from './groups.ts';
import { halves } from '@warmpath/shared/runtime';
import { HolderIndex } from './holders.ts';
import { PublishedColumns } from './published.ts';
import { ServedGroups } from './served.ts';
import { countByStatus, type ReplicaRecord, type ReplicaView, type ViewEvent } from './replica.ts';
import { PublisherTrust, type Origin, type TrustReason } from './trust.ts';
import { WarmthScan } from './warmth.ts';

export type { Group } from './groups.ts';
export type { DigestStatus } from './digest-sync.ts';
export type { ReplicaView, ViewEvent } from './replica.ts';
/** The name policies have always used for a replica as the view hands it out. */
export type Replica = ReplicaView;

/** The router config's fleet-view settings (validated there; no defaults here) and the view's collaborators. */
export type FleetViewOptions = {
  readonly fleet: string;
  readonly chunkChars: number;
  readonly stateTtlMs: number;
  readonly forgetAfterMs: number;
  /** Gossip publishers' rights (trust.ts); default: any peer, no extra networks. */
  readonly agentPeers?: readonly string[];
  readonly agentNetworks?: readonly string[];
  /** The model groups this router serves (served.ts); default every group. */
  readonly models?: readonly string[];
  /** Fetch a digest snapshot (msgpack bytes); the router passes an HTTP GET {admin}/warmpath/v1/digest. */
  fetchSnapshot?: (r: ReplicaView) => Promise<Uint8Array>;
  now?: () => number;
  onEvent?: (e: ViewEvent) => void;
};

/** Agent and router clocks agree on one host; across hosts trust sentAt only this close to arrival, ms. */
const SENT_AT_TRUST_MS = 1_000;

export class FleetView {
  readonly fleet: string;
  readonly chunkChars: number;
  readonly stateTtlMs: number;
  readonly forgetAfterMs: number;
  /** Drops by reason: decode reasons, 'fleet', 'group', 'superseded', 'stale' and the trust reasons. */
  readonly drops: Record<string, number> = Object.create(null);
  /** State messages applied. */
  applied = 0;
  /** Who may publish what over gossip; which model groups this router holds. */
  readonly trust: PublisherTrust;
  readonly served: ServedGroups;
  /** Payloads the validator decoded, for the delivery that follows (the same bytes object). */
  readonly #decoded = new WeakMap<Uint8Array, DecodeResult<ReplicaState>>();

  readonly #records = new Map<string, ReplicaRecord>();
  readonly #bySlot: Array<ReplicaRecord | undefined> = [];
  readonly #freeSlots: number[] = [];
  readonly #holders = new HolderIndex();
  /** Every replica's published figures by slot (placement's candidate table reads these). */
  readonly columns = new PublishedColumns();
  readonly #warmth = new WarmthScan();
  readonly #groups = new Groups(this.#records);
  readonly #sync: DigestSync;
  readonly #now: () => number;
  readonly #onEvent: (e: ViewEvent) => void;
  readonly #listeners = new Set<() => void>();
  /** Local clock, ms: the newest state applied, and since when states have arrived without a gap longer than stateTtlMs. */
  #lastAppliedAt = -Infinity;
  #hearingSince = -Infinity;

  constructor(opts: FleetViewOptions) {
    this.fleet = opts.fleet;
    this.chunkChars = opts.chunkChars;
    this.stateTtlMs = opts.stateTtlMs;
    this.forgetAfterMs = opts.forgetAfterMs;
    this.served = new ServedGroups(opts.models);
    this.#now = opts.now ?? Date.now;
    this.#onEvent = opts.onEvent ?? (() => {});
    this.trust = new PublisherTrust({
      stateTtlMs: opts.stateTtlMs,
      agentPeers: opts.agentPeers ?? [],
      agentNetworks: opts.agentNetworks ?? [],
    });
    this.#sync = new DigestSync({
      chunkChars: opts.chunkChars,
      holders: this.#holders,
      fetch: opts.fetchSnapshot ?? (() => Promise.reject(new Error('no snapshot fetcher'))),
      now: this.#now,
      onEvent: this.#onEvent,
    });
  }

  /** Every known replica by id. */
  get replicas(): ReadonlyMap<string, ReplicaView> {
    return this.#records;
  }

  /** Known replicas by slot (holes where a forgotten replica's slot awaits reuse). */
  get bySlot(): ReadonlyArray<ReplicaView | undefined> {
    return this.#bySlot;
  }

  now(): number {
    return this.#now();
  }

  /** Called after every applied state (queue wake-ups). Never throws into the caller. */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * The fleet topic validator's verdict on a gossip payload, before it is
   * applied or relayed: `reject` (malformed, from the future, or a right the
   * author does not have — lowering its score) when it came from its author,
   * `ignore` when a relay brought it (the relay may know better) or it is
   * merely old. Counts drops. Never throws.
   */
  judge(bytes: Uint8Array, origin: Origin): 'accept' | 'reject' | 'ignore' {
    const res = decodeState(bytes, (id) => this.#records.get(id)?.state); // the static fields a message leaves out
    this.#decoded.set(bytes, res);
    if (!res.ok) return this.#refuse(res.reason, res.reason === 'no_base' ? 'ignore' : 'reject'); // no_base: not the sender's fault
    const s = res.value;
    const now = this.#now();
    const direct = origin.via === origin.peer;
    if (!this.trust.spend(origin.peer, now)) return this.#refuse('rate', direct ? 'reject' : 'ignore');
    if (s.fleet !== this.fleet) return this.#refuse('fleet', 'reject');
    if (!this.served.holds(s)) return this.#refuse('group', 'ignore');
    const reason = this.trust.check(s, origin, now);
    if (reason !== undefined)
      return this.#refuse(reason, reason === 'future' || (direct && reason !== 'relayed') ? 'reject' : 'ignore');
    const known = this.#records.get(s.replica);
    if (known !== undefined && !supersedes(s, known.state)) return this.#refuse('superseded', 'ignore');
    if (now - s.sentAt > this.forgetAfterMs) return this.#refuse('stale', 'ignore');
    return 'accept';
  }

  #refuse(reason: TrustReason | string, verdict: 'reject' | 'ignore'): 'reject' | 'ignore' {
    this.#drop(reason);
    return verdict;
  }

  /** A gossip payload; with its `origin`, the publisher's rights are checked (again: state may have moved since `judge`). The state applied, or undefined (dropped). Never throws. */
  applyBytes(bytes: Uint8Array, origin?: Origin): ReplicaState | undefined {
    const res = this.#decoded.get(bytes) ?? decodeState(bytes, (id) => this.#records.get(id)?.state);
    this.#decoded.delete(bytes);
    const now = this.#now();
    const reason = !res.ok ? res.reason : origin !== undefined ? this.trust.check(res.value, origin, now) : undefined;
    if (reason !== undefined) return void this.#drop(reason);
    if (!res.ok || !this.apply(res.value, now)) return undefined;
    if (origin !== undefined) this.trust.claimed(res.value, origin, now);
    return res.value;
  }

  /** A decoded state. Returns false if dropped. */
  apply(s: ReplicaState, receivedAt = this.#now()): boolean {
    const foreign = s.fleet !== this.fleet ? 'fleet' : this.served.holds(s) ? undefined : 'group';
    if (foreign !== undefined) {
      this.#drop(foreign);
      return false;
    }
    const known = this.#records.get(s.replica);
    if (known !== undefined && !supersedes(s, known.state)) {
      this.#drop('superseded');
      // Its load figures are old news, but its digest delta may be the one the chain still lacks.
      if (!known.chunkMismatch && s.chunkChars === this.chunkChars) this.#sync.late(known, s);
      return false;
    }
    this.applied++;
    if (!(receivedAt - this.#lastAppliedAt <= this.stateTtlMs)) this.#hearingSince = receivedAt;
    if (receivedAt > this.#lastAppliedAt) this.#lastAppliedAt = receivedAt;
    const reportAt = Math.abs(receivedAt - s.sentAt) < SENT_AT_TRUST_MS ? Math.min(receivedAt, s.sentAt) : receivedAt;
    const r = known === undefined ? this.#join(s, receivedAt, reportAt) : this.#update(known, s, receivedAt, reportAt);
    if (!r.chunkMismatch) this.#sync.receive(r, s);
    for (const fn of this.#listeners) {
      try {
        fn();
      } catch {
        /* listeners must not break gossip handling */
      }
    }
    return true;
  }

  #drop(reason: string): void {
    this.drops[reason] = (this.drops[reason] ?? 0) + 1;
  }

  #join(s: ReplicaState, receivedAt: number, reportAt: number): ReplicaRecord {
    const slot = this.#freeSlots.pop() ?? this.#bySlot.length;
    const r: ReplicaRecord = {
      id: s.replica,
      slot,
      idHash: hashString32(s.replica),
      state: s,
      receivedAt,
      reportAt,
      chunkMismatch: s.chunkChars !== this.chunkChars,
      live: s.status === 'ready',
      digestSize: 0,
    };
    this.#records.set(r.id, r);
    this.#bySlot[slot] = r;
    this.#warmth.grow(slot);
    this.columns.set(slot, s, receivedAt, reportAt, r.live && !r.chunkMismatch);
    this.#sync.join(r);
    this.#groups.markDirty();
    this.#onEvent({ type: 'joined', replica: r.id });
    if (r.chunkMismatch)
      this.#onEvent({ type: 'chunk_mismatch', replica: r.id, theirs: s.chunkChars, ours: this.chunkChars });
    return r;
  }

  #update(r: ReplicaRecord, s: ReplicaState, receivedAt: number, reportAt: number): ReplicaRecord {
    const mismatch = s.chunkChars !== this.chunkChars;
    if (mismatch && !r.chunkMismatch)
      this.#onEvent({ type: 'chunk_mismatch', replica: r.id, theirs: s.chunkChars, ours: this.chunkChars });
    const live = s.status === 'ready';
    if (mismatch !== r.chunkMismatch || live !== r.live || membershipChanged(r.state, s)) this.#groups.markDirty();
    r.chunkMismatch = mismatch;
    r.live = live;
    r.state = s;
    r.receivedAt = receivedAt;
    r.reportAt = reportAt;
    this.columns.set(r.slot, s, receivedAt, reportAt, live && !mismatch);
    return r;
  }

  /** Periodic: freshness transitions and forgetting silent replicas. Cheap; call every ~250 ms. */
  sweep(now = this.#now()): void {
    this.trust.sweep(now, this.forgetAfterMs);
    for (const r of this.#records.values()) {
      const age = now - r.receivedAt;
      if (age > this.forgetAfterMs) {
        this.#forget(r);
        continue;
      }
      const live = r.state.status === 'ready' && this.current(r, now);
      if (live !== r.live) {
        r.live = live;
        this.columns.set(r.slot, r.state, r.receivedAt, r.reportAt, live && !r.chunkMismatch);
        this.#groups.markDirty();
      }
    }
  }

  #forget(r: ReplicaRecord): void {
    this.#sync.forget(r);
    this.#records.delete(r.id);
    this.#bySlot[r.slot] = undefined;
    this.columns.clear(r.slot);
    this.#freeSlots.push(r.slot);
    this.#groups.markDirty();
    this.#onEvent({ type: 'forgotten', replica: r.id });
  }

  /** Is this replica's state fresh at `now`? */
  fresh(r: ReplicaView, now: number): boolean {
    return now - r.receivedAt <= this.stateTtlMs;
  }

  /**
   * May placement trust this replica's state at `now`? When fresh; and while
   * the whole view is silent (no state from anyone for stateTtlMs: this
   * router's gossip is cut, not every replica gone at once), when it was
   * fresh as the silence began — outlier ejection catches the ones really
   * gone, and forgetAfterMs still bounds it.
   */
  current(r: ReplicaView, now: number): boolean {
    return this.#currentSince(r.receivedAt, now);
  }

  /**
   * May placement send a request for `endpoint` (its endpointBit) to the
   * replica in `slot` at `now`? Live, chunk size matching, status ready,
   * positive weight, offering the endpoint (all kept in the columns as
   * states arrive) and current. Reads two columns, not the record.
   */
  placeable(slot: number, endpoint: number, now: number): boolean {
    const c = this.columns;
    return (c.endpoints[slot]! & endpoint) !== 0 && this.#currentSince(c.receivedAt[slot]!, now);
  }

  #currentSince(receivedAt: number, now: number): boolean {
    if (now - receivedAt <= this.stateTtlMs) return true;
    return now - this.#lastAppliedAt > this.stateTtlMs && this.#lastAppliedAt - receivedAt <= this.stateTtlMs;
  }

  /**
   * Has the view heard states without a gap for a whole stateTtlMs? Then
   * every live replica has had time to report, and a model no replica
   * serves is unknown; before that it may only not have been heard of yet.
   */
  settled(now: number): boolean {
    return now - this.#lastAppliedAt <= this.stateTtlMs && now - this.#hearingSince >= this.stateTtlMs;
  }

  /** Bumped whenever any group or ring changes; caches key on it. */
  get epoch(): number {
    return this.#groups.epoch;
  }

  /** The replicas serving (model, adapter) and their ring; undefined if none is known. */
  group(model: string, adapter: string): Group | undefined {
    return this.#groups.group(model, adapter);
  }

  /** Requested model name → (base, adapter), over every known replica; undefined = unknown. */
  resolveModel(name: string): ModelRef | undefined {
    return this.#groups.resolveModel(name);
  }

  /** The fleet's models: bases, and adapters with their parent. */
  models(): ModelRef[] {
    return this.#groups.models();
  }

  /** Does any replica serving (model, adapter) offer this endpoint? */
  supports(model: string, adapter: string, endpoint: Endpoint): boolean {
    return this.#groups.supports(model, adapter, endpoint);
  }

  /** Longest matched chain prefix per replica, from the digest holder index; read with depthOf / warmSlots until the next scan. */
  scanWarmth(hashes: BigUint64Array): void {
    this.#warmth.scan(halves(hashes), hashes.length, this.#holders, 0);
  }

  /** Slots with a non-zero depth in the last scanWarmth (do not modify). */
  get warmSlots(): readonly number[] {
    return this.#warmth.slots;
  }

  /** Matched depth (chunks) of `slot` from the last scanWarmth; given that scan's chain, its leading chunks on the GPU (digest-sync.ts). */
  depthOf(slot: number, chain?: BigUint64Array): number {
    const d = this.#warmth.depthOf(slot);
    return chain === undefined ? d : this.#sync.gpuDepth(slot, halves(chain), d);
  }

  /** Does replica r's digest hold this hash? (tests, debugging) */
  holds(r: ReplicaView, hash: bigint): boolean {
    const h = halves(BigUint64Array.of(hash));
    return this.#sync.holds(r, h[0]!, h[1]!);
  }

  /** Where r's digest stands: boot, seq, pull in flight (tests, operators). */
  digestOf(r: ReplicaView): DigestStatus | undefined {
    return this.#sync.status(r);
  }

  /** Snapshot pulls by result. */
  get pulls(): { readonly ok: number; readonly failed: number } {
    return this.#sync.pulls;
  }

  /** Distinct chain hashes in the holder index. */
  get indexSize(): number {
    return this.#holders.size;
  }

  /** Bytes of the holder index and every digest table. */
  get indexBytes(): number {
    return this.#holders.bytes + this.#sync.bytes;
  }

  /** Replica counts by status for metrics: ready, draining, down, stale, mismatch. */
  statusCounts(now = this.#now()): Record<string, number> {
    return countByStatus(this.#records.values(), (r) => this.fresh(r, now));
  }
}
