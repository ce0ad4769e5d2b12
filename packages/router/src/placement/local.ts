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
 * report covers it.
 * Complexity: dispatch and complete O(1) (+ O(overlay chunks) for the
 * overlay); figures O(1) amortized.
 * The overlay is a holder source for the fleet's one warmth scan
 * (fleet/warmth.ts): the same chained longest-prefix rule as the digest index,
 * over holders that expire.
 * Trade-off: the overlay is only a guess (the engine may evict), so it expires
 * after overlayTtlMs; gossip is the truth after that.
 */
import type { ReplicaView } from '../fleet/replica.ts';
import { WarmthScan, type HolderSource } from '../fleet/warmth.ts';

/** Time constant of routersEstimate's averages, ms. */
export const ROUTERS_TAU_MS = 2_000;
/** The most routers' worth of traffic a router believes it sees. */
export const MAX_ROUTERS_ESTIMATE = 256;

export interface Ticket {
  readonly replica: string;
  readonly at: number;
  readonly work: number;
  open: boolean;
  /** Still counted in its track's sum (open and sent after the replica's last report). */
  counted: boolean;
}

interface Track {
  id: string;
  inflight: number;
  /** Tickets not yet known to be in a report, oldest first. */
  recent: Ticket[];
  /** The report time #advance last ran for: tickets up to it are already uncounted (NaN: never). */
  advancedTo: number;
  /** First entry of `recent` not yet covered by a report. */
  head: number;
  /** Σ work of counted tickets. */
  sum: number;
  /** How many tickets are counted. */
  counted: number;
  /** Local clock, ms, until which the replica is ejected; 0 = not ejected. */
  ejectedUntil: number;
  /** Prefill an agent said it had queued when it refused a request as stale (tokens), and the report it corrects. */
  queued: number;
  queuedReportAt: number;
  /** Pruned: no longer in the map (a slot-cached reference must not use it). */
  gone: boolean;
}

interface OverlayEntry {
  slots: number[];
  /** Local clock, ms, until which slots[j] counts as holding the hash. */
  until: number[];
}

/** Chain hash → the slots this router just sent it to, each with an expiry. */
class Overlay implements HolderSource<BigUint64Array> {
  readonly #entries = new Map<bigint, OverlayEntry>();

  get size(): number {
    return this.#entries.size;
  }

  /** `slot` holds the first `n` hashes until `until`. */
  add(hashes: BigUint64Array, n: number, slot: number, until: number): void {
    for (let i = 0; i < n; i++) {
      const h = hashes[i]!;
      const e = this.#entries.get(h);
      if (e === undefined) {
        this.#entries.set(h, { slots: [slot], until: [until] });
        continue;
      }
      const j = e.slots.indexOf(slot);
      if (j >= 0) e.until[j] = until;
      else {
        e.slots.push(slot);
        e.until.push(until);
      }
    }
  }

  offerHolders(hashes: BigUint64Array, i: number, now: number, scan: WarmthScan): void {
    const e = this.#entries.get(hashes[i]!);
    if (e === undefined) return;
    for (let j = 0; j < e.slots.length; j++) if (e.until[j]! > now) scan.offer(e.slots[j]!, i);
  }

  /** Drops holders expired at `now`, and hashes left without one. */
  prune(now: number): void {
    for (const [h, e] of this.#entries) {
      for (let j = e.slots.length - 1; j >= 0; j--) {
        if (e.until[j]! <= now) {
          e.slots.splice(j, 1);
          e.until.splice(j, 1);
        }
      }
      if (e.slots.length === 0) this.#entries.delete(h);
    }
  }
}

/** The router config's local-state settings (validated there; no defaults here). */
export interface LocalOptions {
  readonly overlayTtlMs: number;
  readonly overlayMaxChunks: number;
}

export class LocalState {
  readonly overlayTtlMs: number;
  readonly overlayMaxChunks: number;
  readonly #tracks = new Map<string, Track>();
  /** The track last read for each replica slot (figures' fast path; checked against the id, since slots are reused). */
  readonly #bySlot: Array<Track | undefined> = [];
  /** Replicas ejected and not yet pruned: lets isEjected skip the lookup when zero. */
  #ejected = 0;
  readonly #overlay = new Overlay();
  /** Smoothed in-flight requests: the fleet's published and this router's own among them (routersEstimate). */
  #published = 0;
  #own = 0;
  #estimatedAt = -Infinity;
  #routers = 1;
  readonly #warmth = new WarmthScan();

  constructor(opts: LocalOptions) {
    this.overlayTtlMs = opts.overlayTtlMs;
    this.overlayMaxChunks = opts.overlayMaxChunks;
  }

  #track(id: string): Track {
    let t = this.#tracks.get(id);
    if (t === undefined) {
      t = { id, inflight: 0, recent: [], advancedTo: Number.NaN, head: 0, sum: 0, counted: 0, ejectedUntil: 0, queued: 0, queuedReportAt: Number.NaN, gone: false };
      this.#tracks.set(id, t);
    }
    return t;
  }

  /** This router's requests in flight on the replica. */
  inflight(id: string): number {
    return this.#tracks.get(id)?.inflight ?? 0;
  }

  /**
   * An agent refused a request as stale and said how much prefill it has
   * queued (x-warmpath-queued): other routers' work this router's view of r
   * lacks. Held until r's next report, which counts it.
   */
  noteQueued(r: ReplicaView, queued: number): void {
    const t = this.#track(r.id);
    t.queued = queued;
    t.queuedReportAt = r.reportAt;
  }

  readonly #figures = { added: 0, queued: 0, inflight: 0, reported: 0 };
  /**
   * What this router knows of r beyond its last report, with one lookup
   * (the candidate table reads it for every replica of a group per request):
   * `added`, the work (tokens) it sent r since the report and still open,
   * O(1) amortized; `queued`, the prefill r's agent last said it had queued
   * (a stale refusal), if said since the report, else 0; `inflight`, its
   * requests in flight on r; `reported`, those of them sent before the
   * report (so counted in r's published `inflight`). The object is reused by
   * the next call: read it before.
   */
  figures(r: ReplicaView): Readonly<{ added: number; queued: number; inflight: number; reported: number }> {
    const f = this.#figures;
    const t = this.#tracks.size === 0 ? undefined : this.#trackOf(r);
    if (t === undefined) {
      f.added = f.queued = f.inflight = f.reported = 0;
      return f;
    }
    f.added = this.#advance(t, r);
    f.queued = queuedOf(t, r);
    f.inflight = t.inflight;
    f.reported = t.inflight - t.counted;
    return f;
  }

  #trackOf(r: ReplicaView): Track | undefined {
    const cached = this.#bySlot[r.slot];
    if (cached !== undefined && cached.id === r.id && !cached.gone) return cached;
    const t = this.#tracks.get(r.id);
    if (t !== undefined) this.#bySlot[r.slot] = t;
    return t;
  }

  /** Stops counting t's tickets sent before r's last report (they are in the published load now); t's sum after. */
  #advance(t: Track, r: ReplicaView): number {
    // Already advanced to this report: every ticket sent since is newer than it (the common case, no ticket read).
    if (t.advancedTo === r.reportAt) return t.sum;
    t.advancedTo = r.reportAt;
    const recent = t.recent;
    let head = t.head;
    while (head < recent.length && recent[head]!.at <= r.reportAt) {
      const k = recent[head]!;
      if (k.counted) {
        k.counted = false;
        t.sum -= k.work;
        t.counted--;
      }
      head++;
    }
    if (head > 64 && head * 2 > recent.length) {
      recent.splice(0, head);
      head = 0;
    }
    t.head = head;
    return t.sum;
  }

  /**
   * How many routers' worth of traffic the fleet carries per request of this
   * router's: `published` (the candidates' published in-flight requests) over
   * `own` (this router's among them), each averaged over about ROUTERS_TAU_MS
   * so that a router with a few requests in flight does not swing; ≥ 1, and 1
   * until this router has something in flight.
   */
  routersEstimate(published: number, own: number, now: number): number {
    const a = 1 - Math.exp(-Math.max(0, now - this.#estimatedAt) / ROUTERS_TAU_MS);
    this.#estimatedAt = now;
    this.#published += a * (published - this.#published);
    this.#own += a * (own - this.#own);
    this.#routers = this.#own > 0 ? Math.min(MAX_ROUTERS_ESTIMATE, Math.max(1, this.#published / this.#own)) : 1;
    return this.#routers;
  }

  /** The last routersEstimate (1 before the first). */
  get routers(): number {
    return this.#routers;
  }

  dispatch(replica: string, work: number, now: number): Ticket {
    const t = this.#track(replica);
    t.inflight++;
    const ticket: Ticket = { replica, at: now, work, open: true, counted: true };
    t.recent.push(ticket);
    t.sum += work;
    t.counted++;
    return ticket;
  }

  complete(ticket: Ticket): void {
    if (!ticket.open) return;
    ticket.open = false;
    const t = this.#tracks.get(ticket.replica);
    if (t === undefined) return;
    t.inflight--;
    if (ticket.counted) {
      ticket.counted = false;
      t.sum -= ticket.work;
      t.counted--;
    }
  }

  /** Route nothing to the replica until `until` (local clock, ms). */
  eject(id: string, until: number): void {
    const t = this.#track(id);
    if (t.ejectedUntil === 0) this.#ejected++;
    t.ejectedUntil = until;
  }

  /** Is the replica ejected at `now`? O(1); no lookup while nothing is ejected. */
  isEjected(id: string, now: number): boolean {
    if (this.#ejected === 0) return false;
    const t = this.#tracks.get(id);
    return t !== undefined && now < t.ejectedUntil;
  }

  /** Replicas ejected at `now`. */
  ejectedCount(now: number): number {
    if (this.#ejected === 0) return 0;
    let n = 0;
    for (const t of this.#tracks.values()) if (now < t.ejectedUntil) n++;
    return n;
  }

  /** Optimistic warmth: treat the first chunks of `hashes` as cached on `slot` until now + overlayTtlMs. */
  overlayAdd(hashes: BigUint64Array, slot: number, now: number): void {
    this.#overlay.add(hashes, Math.min(hashes.length, this.overlayMaxChunks), slot, now + this.overlayTtlMs);
    this.#warmth.grow(slot);
  }

  /** FleetView.scanWarmth's scan over the overlay's unexpired holders; read with overlayDepthOf / overlaySlots. */
  scanOverlay(hashes: BigUint64Array, now: number): void {
    this.#warmth.scan(hashes, hashes.length, this.#overlay, now);
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
    for (const [id, t] of this.#tracks) {
      // Closed tickets need no bookkeeping; keep the open ones for the next report.
      if (t.recent.length > 0) {
        t.recent = t.recent.slice(t.head).filter((k) => k.counted);
        t.head = 0;
      }
      if (t.ejectedUntil !== 0 && now >= t.ejectedUntil) {
        t.ejectedUntil = 0;
        this.#ejected--;
      }
      if (t.inflight === 0 && t.recent.length === 0 && t.ejectedUntil === 0) {
        t.gone = true;
        this.#tracks.delete(id);
      }
    }
  }
}

/** The prefill r's agent said it had queued, if said since r's last report; else 0. */
function queuedOf(t: Track, r: ReplicaView): number {
  return t.queuedReportAt === r.reportAt ? t.queued : 0;
}
