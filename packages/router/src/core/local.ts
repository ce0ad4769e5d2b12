/**
 * What this router knows that gossip does not (yet): its own in-flight
 * requests per replica, the work it sent since each replica's last report,
 * prefixes it just dispatched (the optimistic overlay), and replicas it
 * ejected for failing (core/outliers.ts decides when, for how long). Learned
 * only from this router's own decisions.
 *
 * Steps: dispatch() records a ticket {at, work} on the replica and (for
 * policies that want it) inserts the request's chain into the overlay;
 * complete() closes the ticket. figures(r).added is a running sum of open
 * tickets sent after r's report time (older ones are already in the
 * published load): each ticket leaves the sum once, on completion or when a
 * report covers it. figures(r).reported counts this router's requests the
 * report counts in flight: sent before it and finished after it, or not
 * finished (a late report still counts requests finished since; counting
 * only the open ones made one router behind a gossip delay believe it was
 * one of several: docs/SCALE.md).
 * Complexity: dispatch and complete O(1) (+ O(overlay chunks) for the
 * overlay); figures O(1) amortized, and on a replica's new report
 * O(this router's requests there closed since the report).
 * The overlay (overlay.ts) is a holder source for the fleet's one warmth
 * scan (fleet/warmth.ts): the same chained longest-prefix rule as the digest
 * index, over holders that expire.
 * Trade-off: the overlay is only a guess (the engine may evict), so it expires
 * after overlayTtlMs; gossip is the truth after that.
 */
import type { ReplicaView } from '../fleet/replica.ts';
import { holding } from '@warmpath/shared/runtime';
import { halves } from '@warmpath/shared/runtime';
import { WarmthScan } from '../fleet/warmth.ts';
import { Overlay } from './overlay.ts';
import { Refusals } from './refusals.ts';
import { RoutersEstimate } from './routers-estimate.ts';

/** How long a closed ticket may still be counted by a report not yet received, ms (past the default state TTL). */
const DONE_KEEP_MS = 10_000;

export interface Ticket {
  readonly replica: string;
  readonly at: number;
  readonly work: number;
  /** KV tokens it takes on the replica (a decode leg's: the transferred prompt and the output, beyond its work). */
  readonly kv: number;
  open: boolean;
  /** When complete() closed it (local clock, ms); NaN while open. */
  doneAt: number;
  /** Still counted in its track's sum (open and sent after the replica's last report). */
  counted: boolean;
}

/** What this router tracks of one replica; its numbers are in TrackColumns at `n`. */
interface Track {
  readonly id: string;
  /** Index of the track's numbers in TrackColumns (reused once the track is pruned). */
  readonly n: number;
  /** Tickets not yet known to be in a report, oldest first. */
  recent: Ticket[];
  /** First entry of `recent` not yet covered by a report. */
  head: number;
  /** Closed tickets, in the order they closed, that a report not yet received may still count in flight (doneAt after its time). */
  done: Ticket[];
  /** First entry of `done` a later report may still count. */
  doneHead: number;
}

/**
 * Every track's numbers, by track number: dense arrays, so that the candidate table reads a replica's
 * figures without touching its Track object (at 1,000 replicas, reading a track object per replica per
 * request was a large share of a table's cost: docs/SCALE.md).
 */
class TrackColumns {
  /** This router's requests in flight on the replica. */
  inflight: Float64Array = new Float64Array(64);
  /** Σ work of counted tickets (open and sent after the replica's last report). */
  sum: Float64Array = new Float64Array(64);
  /** Σ kv of counted tickets: the KV they take beyond r's report. */
  kvSum: Float64Array = new Float64Array(64);
  /** How many tickets are counted. */
  counted: Float64Array = new Float64Array(64);
  /** The report time #advance last ran for: tickets up to it are already uncounted (NaN: never). */
  advancedTo: Float64Array = new Float64Array(64);
  /** Local clock, ms, until which the replica is ejected; 0 = not ejected. */
  ejectedUntil: Float64Array = new Float64Array(64);
  /** Prefill an agent said it had queued when it refused a request as stale (tokens), and the report it corrects. */
  queued: Float64Array = new Float64Array(64);
  queuedReportAt: Float64Array = new Float64Array(64);
  /** Closed tickets the last report still counts in flight (sent before it, closed after it). */
  lateDone: Float64Array = new Float64Array(64);

  /** Track number n starts afresh (growing the arrays to hold it). */
  reset(n: number): void {
    if (n >= this.sum.length) {
      this.inflight = holding(this.inflight, n);
      this.sum = holding(this.sum, n);
      this.kvSum = holding(this.kvSum, n);
      this.counted = holding(this.counted, n);
      this.advancedTo = holding(this.advancedTo, n);
      this.ejectedUntil = holding(this.ejectedUntil, n);
      this.queued = holding(this.queued, n);
      this.queuedReportAt = holding(this.queuedReportAt, n);
      this.lateDone = holding(this.lateDone, n);
    }
    this.inflight[n] = this.sum[n] = this.kvSum[n] = this.counted[n] = 0;
    this.ejectedUntil[n] = this.queued[n] = this.lateDone[n] = 0;
    this.advancedTo[n] = this.queuedReportAt[n] = Number.NaN;
  }
}

/** The router config's local-state settings (validated there; no defaults here). */
export interface LocalOptions {
  readonly overlayTtlMs: number;
  readonly overlayMaxChunks: number;
  /** How long a router heard on gossip still counts (routers-estimate.ts). */
  readonly stateTtlMs: number;
}

export class LocalState {
  readonly overlayTtlMs: number;
  readonly overlayMaxChunks: number;
  readonly #tracks = new Map<string, Track>();
  readonly #cols = new TrackColumns();
  /** Tracks by number, and the numbers of pruned ones awaiting reuse. */
  readonly #byNumber: Track[] = [];
  readonly #freeNumbers: number[] = [];
  /**
   * figures' fast path, by replica slot: the track number of the replica last read there (-1: it has none),
   * valid while #slotOwner holds that very record (slots are reused by other replicas; a rejoin is a new
   * record). A track created or pruned unbinds its replica's slot (#slotOfId).
   */
  #slotTrack: Int32Array = new Int32Array(64);
  readonly #slotOwner: Array<ReplicaView | undefined> = [];
  readonly #slotOfId = new Map<string, number>();
  /** Replicas ejected and not yet pruned: lets isEjected skip the lookup when zero. */
  #ejected = 0;
  readonly #overlay = new Overlay();
  readonly #routers: RoutersEstimate;
  readonly #warmth = new WarmthScan();
  /** Replicas held full since they refused (refusals.ts). */
  readonly refusals = new Refusals();

  constructor(opts: LocalOptions) {
    this.overlayTtlMs = opts.overlayTtlMs;
    this.overlayMaxChunks = opts.overlayMaxChunks;
    this.#routers = new RoutersEstimate(opts.stateTtlMs);
  }

  #track(id: string): Track {
    let t = this.#tracks.get(id);
    if (t === undefined) {
      const n = this.#freeNumbers.pop() ?? this.#byNumber.length;
      this.#cols.reset(n);
      t = { id, n, recent: [], head: 0, done: [], doneHead: 0 };
      this.#byNumber[n] = t;
      this.#tracks.set(id, t);
      this.#unbind(id);
    }
    return t;
  }

  /** The replica's slot must look its track up again (one was created or pruned). */
  #unbind(id: string): void {
    const slot = this.#slotOfId.get(id);
    if (slot !== undefined) this.#slotOwner[slot] = undefined;
  }

  /** This router's requests in flight on the replica. */
  inflight(id: string): number {
    const t = this.#tracks.get(id);
    return t === undefined ? 0 : this.#cols.inflight[t.n]!;
  }

  /**
   * An agent refused a request as stale and said how much prefill it has
   * queued (x-warmpath-queued): other routers' work this router's view of r
   * lacks. Held until r's next report, which counts it.
   */
  noteQueued(r: ReplicaView, queued: number): void {
    const n = this.#track(r.id).n;
    this.#cols.queued[n] = queued;
    this.#cols.queuedReportAt[n] = r.reportAt;
  }

  readonly #figures = { added: 0, addedKv: 0, queued: 0, inflight: 0, reported: 0 };
  /**
   * What this router knows of r beyond its last report, in one lookup (the candidate table reads it per
   * replica per request): `added`, the work (tokens) it sent r since the report, still open (O(1)
   * amortized); `addedKv`, the KV those take there (beyond their work for a decode leg: its prompt arrives
   * by transfer); `queued`, the prefill r's agent last said it had queued (a stale refusal) if said since
   * the report, else 0; `inflight`, its requests in flight on r; `reported`, those r's published
   * `inflight` counts (sent before the report and open, or closed after it). The object is reused by the
   * next call. The candidate table passes r's slot and report time so that the common case reads arrays.
   */
  figures(
    r: ReplicaView,
    slot = r.slot,
    reportAt = r.reportAt,
  ): Readonly<{ added: number; addedKv: number; queued: number; inflight: number; reported: number }> {
    const f = this.#figures;
    const n = this.#tracks.size === 0 ? -1 : this.#trackAt(r, slot);
    if (n < 0) {
      f.added = f.addedKv = f.queued = f.inflight = f.reported = 0;
      return f;
    }
    const c = this.#cols;
    f.added = this.#advance(n, reportAt);
    f.addedKv = c.kvSum[n]!;
    f.queued = c.queuedReportAt[n] === reportAt ? c.queued[n]! : 0;
    f.inflight = c.inflight[n]!;
    f.reported = c.inflight[n]! - c.counted[n]! + c.lateDone[n]!;
    return f;
  }

  /** The number of r's track (r in `slot`), -1 for none. */
  #trackAt(r: ReplicaView, slot: number): number {
    if (this.#slotOwner[slot] === r) return this.#slotTrack[slot]!;
    // Slow path, once per slot after a join, a reuse, or r's track being created or pruned.
    this.#slotTrack = holding(this.#slotTrack, slot);
    const before = this.#slotOwner[slot];
    if (before !== undefined && before.id !== r.id && this.#slotOfId.get(before.id) === slot)
      this.#slotOfId.delete(before.id);
    this.#slotOfId.set(r.id, slot);
    this.#slotOwner[slot] = r;
    this.#slotTrack[slot] = this.#tracks.get(r.id)?.n ?? -1;
    return this.#slotTrack[slot]!;
  }

  /** Stops counting track n's tickets sent before the report at `reportAt` (they are in the published load now); its sum after. */
  #advance(n: number, reportAt: number): number {
    const c = this.#cols;
    // Already advanced to this report: every ticket sent since is newer than it (the common case, no ticket read).
    if (c.advancedTo[n] === reportAt) return c.sum[n]!;
    c.advancedTo[n] = reportAt;
    const t = this.#byNumber[n]!;
    const recent = t.recent;
    let head = t.head;
    while (head < recent.length && recent[head]!.at <= reportAt) {
      const k = recent[head]!;
      if (k.counted) {
        k.counted = false;
        c.sum[n] = c.sum[n]! - k.work;
        c.kvSum[n] = c.kvSum[n]! - k.kv;
        c.counted[n] = c.counted[n]! - 1;
      }
      head++;
    }
    t.head = dropConsumed(recent, head);
    // Closed tickets this report still counts: closed after it (those closed before are done with for good), sent before it.
    const done = t.done;
    let dh = t.doneHead;
    while (dh < done.length && done[dh]!.doneAt <= reportAt) dh++;
    t.doneHead = dh = dropConsumed(done, dh);
    let late = 0;
    for (let i = dh; i < done.length; i++) if (done[i]!.at <= reportAt) late++;
    c.lateDone[n] = late;
    return c.sum[n]!;
  }

  /** How many routers' worth of traffic the fleet carries per request of this router's (routers-estimate.ts). */
  routersEstimate(published: number, own: number, now: number): number {
    return this.#routers.update(published, own, now);
  }

  /** The last routersEstimate (1 before the first). */
  get routers(): number {
    return this.#routers.routers;
  }

  /** Router `peer`'s batch vouched for a state at `now` (routers-estimate.ts: the routers heard). */
  heardRouter(peer: string, now: number): void {
    this.#routers.heard(peer, now);
  }

  /** The other routers heard within the state TTL of `now`. */
  routersHeard(now: number): number {
    return this.#routers.heardCount(now);
  }

  dispatch(replica: string, work: number, now: number, kv = work): Ticket {
    const t = this.#track(replica);
    const c = this.#cols;
    c.inflight[t.n] = c.inflight[t.n]! + 1;
    const ticket: Ticket = { replica, at: now, work, kv, open: true, counted: true, doneAt: Number.NaN };
    t.recent.push(ticket);
    c.sum[t.n] = c.sum[t.n]! + work;
    c.kvSum[t.n] = c.kvSum[t.n]! + kv;
    c.counted[t.n] = c.counted[t.n]! + 1;
    return ticket;
  }

  complete(ticket: Ticket, now: number): void {
    if (!ticket.open) return;
    ticket.open = false;
    ticket.doneAt = now;
    const t = this.#tracks.get(ticket.replica);
    if (t === undefined) return;
    const c = this.#cols;
    c.inflight[t.n] = c.inflight[t.n]! - 1;
    t.done.push(ticket);
    // Sent before the report the view holds: that report counts it in flight still.
    if (ticket.at <= c.advancedTo[t.n]!) c.lateDone[t.n] = c.lateDone[t.n]! + 1;
    if (ticket.counted) {
      ticket.counted = false;
      c.sum[t.n] = c.sum[t.n]! - ticket.work;
      c.kvSum[t.n] = c.kvSum[t.n]! - ticket.kv;
      c.counted[t.n] = c.counted[t.n]! - 1;
    }
  }

  /** Route nothing to the replica until `until` (local clock, ms). */
  eject(id: string, until: number): void {
    const t = this.#track(id);
    const e = this.#cols.ejectedUntil;
    if (e[t.n] === 0) this.#ejected++;
    e[t.n] = until;
  }

  /** Replicas ejected and not yet pruned (0: isEjected is false for every replica). */
  get ejected(): number {
    return this.#ejected;
  }

  /** Is the replica ejected at `now`? O(1); no lookup while nothing is ejected. */
  isEjected(id: string, now: number): boolean {
    if (this.#ejected === 0) return false;
    const t = this.#tracks.get(id);
    return t !== undefined && now < this.#cols.ejectedUntil[t.n]!;
  }

  /** Replicas ejected at `now`. */
  ejectedCount(now: number): number {
    if (this.#ejected === 0) return 0;
    let n = 0;
    for (const t of this.#tracks.values()) if (now < this.#cols.ejectedUntil[t.n]!) n++;
    return n;
  }

  /** Optimistic warmth: treat the first chunks of `hashes` as cached on `slot` until now + overlayTtlMs. */
  overlayAdd(hashes: BigUint64Array, slot: number, now: number): void {
    this.#overlay.add(halves(hashes), Math.min(hashes.length, this.overlayMaxChunks), slot, now + this.overlayTtlMs);
    this.#warmth.grow(slot);
  }

  /** FleetView.scanWarmth's scan over the overlay's unexpired holders; read with overlayDepthOf / overlaySlots. */
  scanOverlay(hashes: BigUint64Array, now: number): void {
    this.#warmth.scan(halves(hashes), hashes.length, this.#overlay, now);
  }

  /** Slots with a non-zero depth in the last scanOverlay (do not modify). */
  get overlaySlots(): readonly number[] {
    return this.#warmth.slots;
  }

  overlayDepthOf(slot: number): number {
    return this.#warmth.depthOf(slot);
  }

  get overlaySize(): number {
    return this.#overlay.size;
  }

  /** Periodic: drop expired overlay entries and idle trackers. */
  prune(now: number): void {
    this.#overlay.prune(now);
    this.refusals.prune(now);
    for (const [id, t] of this.#tracks) {
      // Closed tickets need no bookkeeping; keep the open ones for the next report.
      if (t.recent.length > 0) {
        t.recent = t.recent.slice(t.head).filter((k) => k.counted);
        t.head = 0;
      }
      // A report that old places nothing (past the state TTL): what closed before then is no longer counted.
      if (t.done.length > 0) {
        t.done = t.done.slice(t.doneHead).filter((k) => now - k.doneAt < DONE_KEEP_MS);
        t.doneHead = 0;
      }
      const c = this.#cols;
      if (c.ejectedUntil[t.n] !== 0 && now >= c.ejectedUntil[t.n]!) {
        c.ejectedUntil[t.n] = 0;
        this.#ejected--;
      }
      if (c.inflight[t.n] === 0 && t.recent.length === 0 && t.done.length === 0 && c.ejectedUntil[t.n] === 0) {
        this.#tracks.delete(id);
        this.#freeNumbers.push(t.n);
        this.#unbind(id);
      }
    }
  }
}

/** Drops a list's entries before `head` once they are most of it (amortised O(1) per entry); returns the new head. */
function dropConsumed<T>(list: T[], head: number): number {
  if (head <= 64 || head * 2 <= list.length) return head;
  list.splice(0, head);
  return 0;
}
