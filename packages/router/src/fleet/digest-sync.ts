/**
 * Digest sync: keeps each replica's prefix digest (the chain hashes its
 * engine has cached, as the agent publishes them) and the holder index in
 * step with gossip.
 *
 * Steps per state message: while a snapshot pull is in flight, buffer the
 * message (up to MAX_PENDING) and keep serving the old digest; a delta that
 * follows the digest held (same boot, `from` = seq held) is applied, and a
 * size that then disagrees with the agent's triggers a pull; a self-contained
 * digest (from = -1, only additions) replaces the table. A delta past a gap
 * in the same boot is held: gossip does not keep order, and the missing
 * deltas usually arrive within milliseconds, late (the view hands those on,
 * `late`, though their load figures are superseded); each delta that closes
 * the gap is applied and the held ones that follow it after. A gap still
 * open REORDER_WAIT_MS after it opened, or a new boot, pulls a snapshot over
 * HTTP — at most one per replica at a time and one per PULL_RETRY_MS — then
 * replays the buffered deltas that follow it.
 * Complexity: a delta costs O(|added| + |removed|) table and index operations;
 * a snapshot O(|old| + |new|) (the two sets are diffed, so unchanged hashes
 * never leave the index).
 * Trade-off: deltas are cheap but lossy under gossip loss; snapshots repair
 * any gap at the price of an HTTP round trip, so the router pulls only when
 * the delta chain stays broken or the sizes disagree: two publishes a few ms
 * apart often arrive swapped, and a reordered delta is not a gap. A lost
 * message costs its digest REORDER_WAIT_MS more before the pull. Evidence:
 * docs/SCALE.md, "Reordered deltas are not gaps".
 */
import { decodeSnapshot, type ReplicaState, type DigestSnapshot } from '@warmpath/shared/wire';
import { halves, Hash64Table } from '@warmpath/shared/runtime';
import type { HolderIndex } from './holders.ts';
import type { ReplicaRecord, ReplicaView, ViewEvent } from './replica.ts';

/** Min gap between snapshot pulls of one replica, ms: a broken agent cannot make us spin. */
const PULL_RETRY_MS = 250;
/** Deltas buffered per replica while its snapshot is in flight, messages. */
const MAX_PENDING = 64;
/** How long a gap in a replica's delta chain may wait for its late deltas before a snapshot pull, ms. */
export const REORDER_WAIT_MS = 100;
/** Initial digest table capacity per replica, hashes (the table doubles as needed). */
const INITIAL_DIGEST_HASHES = 256;

/** Where a replica's digest stands (tests, operators). */
export interface DigestStatus {
  /** Boot id of the digest held; '' = none yet. */
  readonly boot: string;
  /** seq of the last state folded into the digest; -1 = none. */
  readonly seq: number;
  /** A snapshot pull is in flight. */
  readonly pulling: boolean;
}

interface DigestState extends DigestStatus {
  readonly replica: ReplicaRecord;
  table: Hash64Table;
  /** Of the table, the hashes only in host memory (DigestDelta.host); undefined until the replica reports a host tier. */
  host: Hash64Table | undefined;
  boot: string;
  seq: number;
  pulling: boolean;
  /** Local clock, ms, of the last pull started. */
  lastPullAt: number;
  /** States received while pulling, or past a gap, replayed after the snapshot or once the gap closes. */
  pending: ReplicaState[];
  /** Local clock, ms, when the open gap was first seen; NaN = no gap. */
  gapSince: number;
}

export interface DigestSyncOptions {
  chunkChars: number;
  holders: HolderIndex;
  fetch: (r: ReplicaView) => Promise<Uint8Array>;
  now: () => number;
  onEvent: (e: ViewEvent) => void;
}

export class DigestSync {
  readonly pulls = { ok: 0, failed: 0 };
  readonly #opts: DigestSyncOptions;
  readonly #bySlot: Array<DigestState | undefined> = [];

  constructor(opts: DigestSyncOptions) {
    this.#opts = opts;
  }

  /** A replica appeared (or reappeared in a recycled slot): an empty digest. */
  join(r: ReplicaRecord): void {
    r.digestSize = 0;
    this.#bySlot[r.slot] = {
      replica: r,
      table: new Hash64Table(INITIAL_DIGEST_HASHES, false),
      host: undefined,
      boot: '',
      seq: -1,
      pulling: false,
      lastPullAt: -Infinity,
      pending: [],
      gapSince: Number.NaN,
    };
  }

  /** A replica is forgotten: its hashes leave the index; a pull in flight is ignored when it lands. */
  forget(r: ReplicaRecord): void {
    const d = this.#bySlot[r.slot];
    if (d === undefined) return;
    d.table.forEach((lo, hi) => this.#opts.holders.remove(lo, hi, r.slot));
    this.#bySlot[r.slot] = undefined;
  }

  /** Folds the digest part of an accepted state `s` of `r`. */
  receive(r: ReplicaRecord, s: ReplicaState): void {
    const d = this.#bySlot[r.slot];
    if (d !== undefined) this.#receive(d, s);
  }

  /**
   * A state of `r` the view did not accept (an older seq than the state it
   * holds), in case its delta is the one missing: applied if it follows the
   * digest held, then the held deltas after it.
   */
  late(r: ReplicaRecord, s: ReplicaState): void {
    const d = this.#bySlot[r.slot];
    if (d === undefined || d.pulling || s.boot !== d.boot || s.digest.from !== d.seq) return;
    this.#receive(d, s);
  }

  status(r: ReplicaView): DigestStatus | undefined {
    return this.#bySlot[r.slot];
  }

  holds(r: ReplicaView, lo: number, hi: number): boolean {
    return this.#bySlot[r.slot]?.table.has(lo, hi) ?? false;
  }

  /**
   * Of the first `depth` chunks of a chain (as u32 halves) that `slot`'s
   * digest holds, how many lead on the GPU: up to the first held only in
   * host memory (an engine matches its GPU cache first, then continues in
   * host memory). `depth` without a host tier. O(depth) with one.
   */
  gpuDepth(slot: number, h: Uint32Array, depth: number): number {
    const host = this.#bySlot[slot]?.host;
    if (host === undefined || host.size === 0) return depth;
    let i = 0;
    while (i < depth && !host.has(h[2 * i]!, h[2 * i + 1]!)) i++;
    return i;
  }

  /** Bytes of every replica's digest table. */
  get bytes(): number {
    let b = 0;
    for (const d of this.#bySlot) if (d !== undefined) b += d.table.bytes + (d.host?.bytes ?? 0);
    return b;
  }

  #receive(d: DigestState, s: ReplicaState): void {
    if (d.pulling) {
      if (d.pending.length < MAX_PENDING) d.pending.push(s);
      return;
    }
    const delta = s.digest;
    if (s.boot === d.boot && delta.from === d.seq) {
      this.#applyDelta(d, delta.added, delta.removed);
      tiers(d, delta.host, delta.gpu);
      d.seq = s.seq;
      if (d.table.size !== delta.size)
        this.#pull(d); // drift: trust the agent's full set
      else this.#closeGap(d);
      return;
    }
    if (delta.from === -1 && delta.size === delta.added.length && delta.removed.length === 0) {
      // A self-contained digest (e.g. a fresh boot with an empty cache): no pull needed.
      this.#replace(d, delta.added);
      d.host = undefined;
      tiers(d, delta.host, undefined);
      d.boot = s.boot;
      d.seq = s.seq;
      this.#closeGap(d);
      return;
    }
    if (s.boot === d.boot && s.seq <= d.seq) return; // already folded in
    if (d.pending.length < MAX_PENDING) d.pending.push(s);
    if (s.boot === d.boot && delta.from > d.seq) {
      // A gap in the same boot: perhaps only reordered. Wait a little for the deltas in between.
      const now = this.#opts.now();
      if (Number.isNaN(d.gapSince)) d.gapSince = now;
      if (now - d.gapSince < REORDER_WAIT_MS) return;
    }
    this.#pull(d);
  }

  /**
   * After the chain advanced: held deltas it covers are dropped, and the one
   * that now follows it is received like any other (which comes back here);
   * with none held, the gap is closed.
   */
  #closeGap(d: DigestState): void {
    d.pending = d.pending.filter((p) => p.boot !== d.boot || p.seq > d.seq);
    if (d.pending.length === 0) {
      d.gapSince = Number.NaN;
      return;
    }
    const i = d.pulling ? -1 : d.pending.findIndex((p) => p.boot === d.boot && p.digest.from === d.seq);
    if (i >= 0) this.#receive(d, d.pending.splice(i, 1)[0]!);
  }

  #pull(d: DigestState): void {
    if (d.pulling) return;
    const now = this.#opts.now();
    if (now - d.lastPullAt < PULL_RETRY_MS) return;
    d.pulling = true;
    d.lastPullAt = now;
    const r = d.replica;
    const boot = r.state.boot;
    this.#opts.fetch(r).then(
      (bytes) => {
        d.pulling = false;
        if (this.#bySlot[r.slot] !== d) return; // forgotten meanwhile
        const res = decodeSnapshot(bytes);
        if (!res.ok || res.value.replica !== r.id || res.value.chunkChars !== this.#opts.chunkChars) {
          this.#failed(r, res.ok ? 'snapshot is for another replica or chunk size' : `${res.reason}: ${res.detail}`);
          return;
        }
        this.pulls.ok++;
        if (res.value.boot !== r.state.boot && res.value.boot !== boot) return; // a newer boot appeared meanwhile; its next delta pulls again
        this.#install(d, res.value);
      },
      (err: unknown) => {
        d.pulling = false;
        this.#failed(r, (err as Error)?.message ?? String(err));
        if (this.#bySlot[r.slot] === d) this.#replayAfterFailure(d);
      },
    );
  }

  /**
   * A failed pull leaves the digest held: of the states buffered while it
   * ran, in seq order, a self-contained digest or a delta that follows the
   * one held is applied now instead of being lost with the pull; the rest
   * stay buffered for the next pull, which a message starts as before.
   */
  #replayAfterFailure(d: DigestState): void {
    const pending = d.pending.sort((a, b) => a.seq - b.seq);
    d.pending = [];
    for (const p of pending) {
      const selfContained = p.digest.from === -1 && p.digest.size === p.digest.added.length;
      if (!d.pulling && (selfContained || (p.boot === d.boot && p.digest.from === d.seq))) this.#receive(d, p);
      else if (p.boot !== d.boot || p.seq > d.seq) d.pending.push(p);
    }
  }

  #failed(r: ReplicaView, error: string): void {
    this.pulls.failed++;
    this.#opts.onEvent({ type: 'snapshot_failed', replica: r.id, error });
  }

  /** A pulled snapshot replaces the digest; buffered states that follow it are replayed in seq order. */
  #install(d: DigestState, snap: DigestSnapshot): void {
    this.#replace(d, snap.hashes);
    d.host = undefined;
    tiers(d, snap.host, undefined);
    d.boot = snap.boot;
    d.seq = snap.seq;
    d.gapSince = Number.NaN;
    const pending = d.pending.sort((a, b) => a.seq - b.seq);
    d.pending = [];
    for (const p of pending) {
      if (p.boot !== d.boot || p.seq <= d.seq) continue;
      this.#receive(d, p);
      if (d.pulling) break;
    }
  }

  #applyDelta(d: DigestState, added: BigUint64Array, removed: BigUint64Array): void {
    const { holders } = this.#opts;
    const slot = d.replica.slot;
    const rem = halves(removed);
    for (let i = 0; i < rem.length; i += 2)
      if (d.table.delete(rem[i]!, rem[i + 1]!)) holders.remove(rem[i]!, rem[i + 1]!, slot);
    const add = halves(added);
    for (let i = 0; i < add.length; i += 2)
      if (d.table.set(add[i]!, add[i + 1]!, 0)) holders.add(add[i]!, add[i + 1]!, slot);
    if (d.host !== undefined && d.host.size > 0) {
      for (let i = 0; i < rem.length; i += 2) d.host.delete(rem[i]!, rem[i + 1]!);
      for (let i = 0; i < add.length; i += 2) d.host.delete(add[i]!, add[i + 1]!);
    }
    d.replica.digestSize = d.table.size;
  }

  /** Replaces the digest with `hashes`, moving only the difference through the index. */
  #replace(d: DigestState, hashes: BigUint64Array): void {
    const { holders } = this.#opts;
    const slot = d.replica.slot;
    const next = new Hash64Table(hashes.length, false);
    const h = halves(hashes);
    for (let i = 0; i < h.length; i += 2) next.set(h[i]!, h[i + 1]!, 0);
    const old = d.table;
    old.forEach((lo, hi) => {
      if (!next.has(lo, hi)) holders.remove(lo, hi, slot);
    });
    next.forEach((lo, hi) => {
      if (!old.has(lo, hi)) holders.add(lo, hi, slot);
    });
    d.table = next;
    d.replica.digestSize = next.size;
  }
}

/** Applies tier moves to the hashes `d` holds: to host memory, back on the GPU (DigestDelta.host, .gpu). */
function tiers(d: DigestState, host: BigUint64Array | undefined, gpu: BigUint64Array | undefined): void {
  if (gpu !== undefined && d.host !== undefined) {
    const g = halves(gpu);
    for (let i = 0; i < g.length; i += 2) d.host.delete(g[i]!, g[i + 1]!);
  }
  if (host === undefined || host.length === 0) return;
  d.host ??= new Hash64Table(host.length, false);
  const h = halves(host);
  for (let i = 0; i < h.length; i += 2) if (d.table.has(h[i]!, h[i + 1]!)) d.host.set(h[i]!, h[i + 1]!, 0);
}
