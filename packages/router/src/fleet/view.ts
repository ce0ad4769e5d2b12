/**
 * The fleet view: every replica's latest state, its prefix digest, an index
 * from chain hash → replicas, and rings per (model, adapter).
 *
 * Steps per gossip message: decode + validate (drops counted by reason) →
 * supersede by (bootAt, boot, seq) → store state → apply the digest delta if
 * it follows the digest we hold, else pull a snapshot over HTTP (one pull per
 * replica at a time; deltas that arrive meanwhile are buffered; the old digest
 * keeps serving) → mark groups/rings dirty only if membership changed.
 * Complexity: a state message costs O(|delta|) table operations plus O(1)
 * bookkeeping; load-only updates never rebuild rings. Warmth for a request is
 * O(depth matched + holders of those hashes), not O(replicas).
 * Trade-off: rings and groups are rebuilt lazily and whole (O(P log P)) when
 * membership changes — rare next to load updates, which dominate.
 */
import { decodeSnapshot, decodeState, HashRing, supersedes, type Endpoint, type ModelRef, type ReplicaState } from '@warmpath/shared/wire';
import { halves, Hash64Table } from './hash64.ts';

export interface Replica {
  readonly id: string;
  /** Small integer, reused after the replica is forgotten; indexes per-slot arrays. */
  readonly slot: number;
  state: ReplicaState;
  /** Local clock, ms, when the latest state arrived. */
  receivedAt: number;
  /** Local clock, ms, that the published load corresponds to (for "own in-flight since that report"). */
  reportAt: number;
  /** Published chunkChars differs from the router's: excluded and reported. */
  chunkMismatch: boolean;
  /** status ready and state fresh (maintained by apply/sweep). */
  live: boolean;
  digest: Hash64Table;
  digestBoot: string;
  /** seq of the last delta folded into `digest`; -1 = none. */
  digestSeq: number;
  pulling: boolean;
  lastPullAt: number;
  pending: ReplicaState[];
}

export type ViewEvent =
  | { type: 'chunk_mismatch'; replica: string; theirs: number; ours: number }
  | { type: 'snapshot_failed'; replica: string; error: string }
  | { type: 'joined' | 'forgotten'; replica: string };

export interface FleetViewOptions {
  fleet: string;
  chunkChars: number;
  /** A replica whose state is older than this is ineligible, ms. */
  stateTtlMs?: number;
  /** Forget a replica silent this long, ms. */
  forgetAfterMs?: number;
  /** Fetch a digest snapshot (msgpack bytes); default: HTTP GET {admin}/warmpath/v1/digest. */
  fetchSnapshot?: (r: Replica) => Promise<Uint8Array>;
  now?: () => number;
  onEvent?: (e: ViewEvent) => void;
}

export interface Group {
  /** Every known, chunk-matching replica serving (model, adapter). */
  members: Replica[];
  /** Ring over the live members (rebuilt only when that set or weights change). */
  ring: HashRing;
  /** slot → replica for ring members, to map ring ids without a Map lookup. */
  byId: Map<string, Replica>;
}

/** Min gap between snapshot pulls of one replica, ms: a broken agent cannot make us spin. */
const PULL_RETRY_MS = 250;
/** Deltas buffered per replica while its snapshot is in flight. */
const MAX_PENDING = 64;
const MODEL_SEP = '\u0000';

export class FleetView {
  readonly fleet: string;
  readonly chunkChars: number;
  readonly stateTtlMs: number;
  readonly forgetAfterMs: number;
  readonly replicas = new Map<string, Replica>();
  readonly bySlot: Array<Replica | undefined> = [];
  /** Drops by reason: decode reasons, 'fleet', 'superseded'. */
  readonly drops: Record<string, number> = Object.create(null);
  readonly pulls = { ok: 0, failed: 0 };
  applied = 0;
  /** Bumped whenever any group or ring changes; caches key on it. */
  epoch = 0;

  readonly #index = new Hash64Table(1 << 12);
  /** Holder lists for hashes on several replicas; index values < 0 point here as -(i+1). */
  readonly #multi: number[][] = [];
  readonly #multiFree: number[] = [];
  readonly #freeSlots: number[] = [];
  readonly #fetch: (r: Replica) => Promise<Uint8Array>;
  readonly #now: () => number;
  readonly #onEvent: (e: ViewEvent) => void;
  readonly #listeners = new Set<() => void>();
  #groups = new Map<string, Group>();
  #models = new Map<string, ModelRef>();
  #dirty = true;
  // Warmth scan scratch: depth per slot, and which slots were touched.
  #depth = new Int32Array(64);
  #touched: number[] = [];

  constructor(opts: FleetViewOptions) {
    this.fleet = opts.fleet;
    this.chunkChars = opts.chunkChars;
    this.stateTtlMs = opts.stateTtlMs ?? 3_000;
    this.forgetAfterMs = opts.forgetAfterMs ?? 30_000;
    this.#now = opts.now ?? Date.now;
    this.#fetch = opts.fetchSnapshot ?? (() => Promise.reject(new Error('no snapshot fetcher')));
    this.#onEvent = opts.onEvent ?? (() => {});
  }

  now(): number {
    return this.#now();
  }

  /** Called after every applied state (queue wake-ups). Never throws into the caller. */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #drop(reason: string): void {
    this.drops[reason] = (this.drops[reason] ?? 0) + 1;
  }

  /** A gossip payload. Never throws. */
  applyBytes(bytes: Uint8Array): void {
    const res = decodeState(bytes);
    if (!res.ok) return this.#drop(res.reason);
    this.apply(res.value);
  }

  /** A decoded state. Returns false if dropped. */
  apply(s: ReplicaState, receivedAt = this.#now()): boolean {
    if (s.fleet !== this.fleet) {
      this.#drop('fleet');
      return false;
    }
    let r = this.replicas.get(s.replica);
    if (r !== undefined && !supersedes(s, r.state)) {
      this.#drop('superseded');
      return false;
    }
    this.applied++;
    // Agent and router clocks agree on one host; across hosts trust sentAt only within 1 s of arrival.
    const reportAt = Math.abs(receivedAt - s.sentAt) < 1_000 ? Math.min(receivedAt, s.sentAt) : receivedAt;
    if (r === undefined) {
      const slot = this.#freeSlots.pop() ?? this.bySlot.length;
      r = {
        id: s.replica,
        slot,
        state: s,
        receivedAt,
        reportAt,
        chunkMismatch: s.chunkChars !== this.chunkChars,
        live: s.status === 'ready',
        digest: new Hash64Table(256),
        digestBoot: '',
        digestSeq: -1,
        pulling: false,
        lastPullAt: -Infinity,
        pending: [],
      };
      this.replicas.set(r.id, r);
      this.bySlot[slot] = r;
      if (this.#depth.length <= slot) {
        const d = new Int32Array(Math.max(slot + 1, this.#depth.length * 2));
        d.set(this.#depth);
        this.#depth = d;
      }
      this.#dirty = true;
      this.#onEvent({ type: 'joined', replica: r.id });
      if (r.chunkMismatch) this.#onEvent({ type: 'chunk_mismatch', replica: r.id, theirs: s.chunkChars, ours: this.chunkChars });
    } else {
      const prev = r.state;
      const mismatch = s.chunkChars !== this.chunkChars;
      if (mismatch && !r.chunkMismatch) this.#onEvent({ type: 'chunk_mismatch', replica: r.id, theirs: s.chunkChars, ours: this.chunkChars });
      const live = s.status === 'ready';
      if (
        mismatch !== r.chunkMismatch ||
        live !== r.live ||
        prev.capacity.weight !== s.capacity.weight ||
        !sameList(prev.models, s.models) ||
        !sameList(prev.adapters, s.adapters) ||
        !sameList(prev.endpoints, s.endpoints)
      )
        this.#dirty = true;
      r.chunkMismatch = mismatch;
      r.live = live;
      r.state = s;
      r.receivedAt = receivedAt;
      r.reportAt = reportAt;
    }
    if (!r.chunkMismatch) this.#digest(r, s);
    for (const fn of this.#listeners) {
      try {
        fn();
      } catch {
        /* listeners must not break gossip handling */
      }
    }
    return true;
  }

  #digest(r: Replica, s: ReplicaState): void {
    if (r.pulling) {
      if (r.pending.length < MAX_PENDING) r.pending.push(s);
      return;
    }
    const d = s.digest;
    if (s.boot === r.digestBoot && d.from === r.digestSeq) {
      this.#applyDelta(r, d.added, d.removed);
      r.digestSeq = s.seq;
      if (r.digest.size !== d.size) this.#pull(r); // drift: trust the agent's full set
      return;
    }
    if (d.from === -1 && d.size === d.added.length && d.removed.length === 0) {
      // A self-contained digest (e.g. a fresh boot with an empty cache): no pull needed.
      this.#replaceDigest(r, d.added);
      r.digestBoot = s.boot;
      r.digestSeq = s.seq;
      return;
    }
    r.pending.push(s);
    this.#pull(r);
  }

  #pull(r: Replica): void {
    if (r.pulling) return;
    const now = this.#now();
    if (now - r.lastPullAt < PULL_RETRY_MS) return;
    r.pulling = true;
    r.lastPullAt = now;
    const boot = r.state.boot;
    this.#fetch(r).then(
      (bytes) => {
        r.pulling = false;
        if (this.replicas.get(r.id) !== r) return;
        const res = decodeSnapshot(bytes);
        if (!res.ok || res.value.replica !== r.id || res.value.chunkChars !== this.chunkChars) {
          this.pulls.failed++;
          this.#onEvent({ type: 'snapshot_failed', replica: r.id, error: res.ok ? 'snapshot is for another replica or chunk size' : `${res.reason}: ${res.detail}` });
          return;
        }
        const snap = res.value;
        this.pulls.ok++;
        if (snap.boot !== r.state.boot && snap.boot !== boot) return; // a newer boot appeared meanwhile; its next delta pulls again
        this.#replaceDigest(r, snap.hashes);
        r.digestBoot = snap.boot;
        r.digestSeq = snap.seq;
        const pending = r.pending.sort((a, b) => a.seq - b.seq);
        r.pending = [];
        for (const p of pending) {
          if (p.boot !== r.digestBoot || p.seq <= r.digestSeq) continue;
          this.#digest(r, p);
          if (r.pulling) break;
        }
      },
      (err: unknown) => {
        r.pulling = false;
        this.pulls.failed++;
        this.#onEvent({ type: 'snapshot_failed', replica: r.id, error: (err as Error)?.message ?? String(err) });
      },
    );
  }

  #applyDelta(r: Replica, added: BigUint64Array, removed: BigUint64Array): void {
    const rem = halves(removed);
    for (let i = 0; i < rem.length; i += 2) if (r.digest.delete(rem[i]!, rem[i + 1]!)) this.#unindex(rem[i]!, rem[i + 1]!, r.slot);
    const add = halves(added);
    for (let i = 0; i < add.length; i += 2) if (r.digest.set(add[i]!, add[i + 1]!, 0)) this.#indexAdd(add[i]!, add[i + 1]!, r.slot);
  }

  #replaceDigest(r: Replica, hashes: BigUint64Array): void {
    const next = new Hash64Table(hashes.length);
    const h = halves(hashes);
    for (let i = 0; i < h.length; i += 2) next.set(h[i]!, h[i + 1]!, 0);
    const old = r.digest;
    old.forEach((lo, hi) => {
      if (!next.has(lo, hi)) this.#unindex(lo, hi, r.slot);
    });
    next.forEach((lo, hi) => {
      if (!old.has(lo, hi)) this.#indexAdd(lo, hi, r.slot);
    });
    r.digest = next;
  }

  #indexAdd(lo: number, hi: number, slot: number): void {
    const pos = this.#index.find(lo, hi);
    if (pos < 0) {
      this.#index.set(lo, hi, slot);
      return;
    }
    const v = this.#index.valueAt(pos);
    if (v >= 0) {
      if (v === slot) return;
      const m = this.#multiFree.pop() ?? this.#multi.length;
      this.#multi[m] = [v, slot];
      this.#index.setValueAt(pos, -(m + 1));
    } else {
      const list = this.#multi[-v - 1]!;
      if (!list.includes(slot)) list.push(slot);
    }
  }

  #unindex(lo: number, hi: number, slot: number): void {
    const pos = this.#index.find(lo, hi);
    if (pos < 0) return;
    const v = this.#index.valueAt(pos);
    if (v >= 0) {
      if (v === slot) this.#index.deleteAt(pos);
      return;
    }
    const m = -v - 1;
    const list = this.#multi[m]!;
    const i = list.indexOf(slot);
    if (i < 0) return;
    list[i] = list[list.length - 1]!;
    list.pop();
    if (list.length === 1) {
      this.#index.setValueAt(pos, list[0]!);
      this.#multi[m] = [];
      this.#multiFree.push(m);
    }
  }

  /** Periodic: freshness transitions and forgetting silent replicas. Cheap; call every ~250 ms. */
  sweep(now = this.#now()): void {
    for (const r of this.replicas.values()) {
      const age = now - r.receivedAt;
      if (age > this.forgetAfterMs) {
        this.#forget(r);
        continue;
      }
      const live = r.state.status === 'ready' && age <= this.stateTtlMs;
      if (live !== r.live) {
        r.live = live;
        this.#dirty = true;
      }
    }
  }

  #forget(r: Replica): void {
    r.digest.forEach((lo, hi) => this.#unindex(lo, hi, r.slot));
    this.replicas.delete(r.id);
    this.bySlot[r.slot] = undefined;
    this.#freeSlots.push(r.slot);
    this.#dirty = true;
    this.#onEvent({ type: 'forgotten', replica: r.id });
  }

  /** Is this replica's state fresh at `now`? */
  fresh(r: Replica, now: number): boolean {
    return now - r.receivedAt <= this.stateTtlMs;
  }

  #rebuild(): void {
    this.#dirty = false;
    this.epoch++;
    const lists = new Map<string, Replica[]>();
    const models = new Map<string, ModelRef>();
    for (const r of this.replicas.values()) {
      if (r.chunkMismatch) continue;
      const base = r.state.models[0];
      for (const m of r.state.models) {
        push(lists, m + MODEL_SEP, r);
        if (!models.has(m)) models.set(m, { model: m, adapter: '' });
      }
      for (const a of r.state.adapters) {
        if (base === undefined) continue;
        for (const m of r.state.models) push(lists, m + MODEL_SEP + a, r);
        if (!models.has(a)) models.set(a, { model: base, adapter: a });
      }
    }
    const old = this.#groups;
    const groups = new Map<string, Group>();
    for (const [key, members] of lists) {
      members.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const live = members.filter((r) => r.live);
      const prev = old.get(key);
      // Reuse the old ring when its membership and weights are unchanged (load-only changes never reach here).
      const ring =
        prev !== undefined && sameRing(prev.ring, live) ? prev.ring : new HashRing(live.map((r) => ({ id: r.id, weight: r.state.capacity.weight })));
      groups.set(key, { members, ring, byId: new Map(members.map((r) => [r.id, r])) });
    }
    this.#groups = groups;
    this.#models = models;
  }

  /** The replicas serving (model, adapter) and their ring; undefined if none is known. */
  group(model: string, adapter: string): Group | undefined {
    if (this.#dirty) this.#rebuild();
    return this.#groups.get(model + MODEL_SEP + adapter);
  }

  /** Requested model name → (base, adapter), over every known replica; undefined = unknown. */
  resolveModel(name: string): ModelRef | undefined {
    if (this.#dirty) this.#rebuild();
    return this.#models.get(name);
  }

  /** The fleet's models: bases, and adapters with their parent. */
  models(): ModelRef[] {
    if (this.#dirty) this.#rebuild();
    return [...this.#models.entries()].map(([name, ref]) => (ref.adapter === '' ? { model: name, adapter: '' } : ref));
  }

  /** Does any replica serving (model, adapter) offer this endpoint? */
  supports(model: string, adapter: string, endpoint: Endpoint): boolean {
    const g = this.group(model, adapter);
    return g !== undefined && g.members.some((r) => r.state.endpoints.includes(endpoint));
  }

  /**
   * Longest matched chain prefix per replica, from the digest index. Fills a
   * scratch array read through `depthOf(slot)` until the next scan; O(matched
   * depth + holders), never a scan of all replicas.
   */
  scanWarmth(hashes: BigUint64Array): void {
    const depth = this.#depth;
    for (const s of this.#touched) depth[s] = 0;
    this.#touched.length = 0;
    if (hashes.length === 0 || this.#index.size === 0) return;
    const h = halves(hashes);
    const index = this.#index;
    for (let i = 0; i < hashes.length; i++) {
      const pos = index.find(h[2 * i]!, h[2 * i + 1]!);
      if (pos < 0) break;
      const v = index.valueAt(pos);
      let advanced = false;
      if (v >= 0) {
        if (depth[v] === i) {
          depth[v] = i + 1;
          if (i === 0) this.#touched.push(v);
          advanced = true;
        }
      } else {
        for (const s of this.#multi[-v - 1]!) {
          if (depth[s] === i) {
            depth[s] = i + 1;
            if (i === 0) this.#touched.push(s);
            advanced = true;
          }
        }
      }
      if (!advanced) break;
    }
  }

  /** Slots with a non-zero depth in the last scanWarmth (do not modify). */
  get warmSlots(): readonly number[] {
    return this.#touched;
  }

  /** Matched depth (chunks) of `slot` from the last scanWarmth. */
  depthOf(slot: number): number {
    return this.#depth[slot] ?? 0;
  }

  /** Does replica r's digest hold this hash? (tests, debugging) */
  holds(r: Replica, hash: bigint): boolean {
    const h = halves(BigUint64Array.of(hash));
    return r.digest.has(h[0]!, h[1]!);
  }

  get indexSize(): number {
    return this.#index.size;
  }

  get indexBytes(): number {
    let b = this.#index.bytes;
    for (const r of this.replicas.values()) b += r.digest.bytes;
    return b;
  }

  /** Replica counts by status for metrics: ready, draining, down, stale, mismatch. */
  statusCounts(now = this.#now()): Record<string, number> {
    const out: Record<string, number> = { ready: 0, draining: 0, down: 0, stale: 0, mismatch: 0 };
    for (const r of this.replicas.values()) {
      const k = r.chunkMismatch ? 'mismatch' : !this.fresh(r, now) ? 'stale' : r.state.status;
      out[k] = (out[k] ?? 0) + 1;
    }
    return out;
  }
}

function push(m: Map<string, Replica[]>, key: string, r: Replica): void {
  const l = m.get(key);
  if (l === undefined) m.set(key, [r]);
  else if (l[l.length - 1] !== r) l.push(r);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameRing(ring: HashRing, live: Replica[]): boolean {
  if (ring.members.length !== live.filter((r) => r.state.capacity.weight > 0).length) return false;
  const w = new Map(ring.members.map((m) => [m.id, m.weight]));
  for (const r of live) if (r.state.capacity.weight > 0 && w.get(r.id) !== r.state.capacity.weight) return false;
  return true;
}
