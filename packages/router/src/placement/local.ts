/**
 * What this router knows that gossip does not (yet): its own in-flight
 * requests per replica, the work it sent since each replica's last report,
 * prefixes it just dispatched (the optimistic overlay), and replicas it found
 * unreachable. Learned only from this router's own decisions.
 *
 * Steps: dispatch() records a ticket {at, work} on the replica and (for
 * policies that want it) inserts the request's chain into the overlay;
 * complete() closes the ticket. addedTokens(r) is a running sum of open
 * tickets sent after r's report time (older ones are already in the
 * published load): each ticket leaves the sum once, on completion or when a
 * report covers it.
 * Complexity: dispatch and complete O(1) (+ O(overlay chunks) for the
 * overlay); addedTokens O(1) amortized.
 * Trade-off: the overlay is only a guess (the engine may evict), so it expires
 * after overlayTtlMs; gossip is the truth after that.
 */
import type { Replica } from '../fleet/view.ts';

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
  /** First entry of `recent` not yet covered by a report. */
  head: number;
  /** Σ work of counted tickets. */
  sum: number;
  suspectAt: number;
  suspectUntil: number;
}

interface OverlayEntry {
  slots: number[];
  until: number[];
}

export interface LocalOptions {
  overlayTtlMs?: number;
  overlayMaxChunks?: number;
  suspectMs?: number;
}

export class LocalState {
  readonly overlayTtlMs: number;
  readonly overlayMaxChunks: number;
  readonly suspectMs: number;
  readonly #tracks = new Map<string, Track>();
  /** Replicas marked suspect and not yet pruned: lets isSuspect skip the lookup when zero. */
  #suspects = 0;
  readonly #overlay = new Map<bigint, OverlayEntry>();
  #depth = new Int32Array(64);
  #touched: number[] = [];

  constructor(opts: LocalOptions = {}) {
    this.overlayTtlMs = opts.overlayTtlMs ?? 5_000;
    this.overlayMaxChunks = opts.overlayMaxChunks ?? 256;
    this.suspectMs = opts.suspectMs ?? 5_000;
  }

  #track(id: string): Track {
    let t = this.#tracks.get(id);
    if (t === undefined) {
      t = { id, inflight: 0, recent: [], head: 0, sum: 0, suspectAt: 0, suspectUntil: 0 };
      this.#tracks.set(id, t);
    }
    return t;
  }

  /** This router's requests in flight on the replica. */
  inflight(id: string): number {
    return this.#tracks.get(id)?.inflight ?? 0;
  }

  /** Work (tokens) this router sent to r after r's last report and still open. O(1) amortized. */
  addedTokens(r: Replica): number {
    if (this.#tracks.size === 0) return 0;
    const t = this.#tracks.get(r.id);
    if (t === undefined) return 0;
    const recent = t.recent;
    let head = t.head;
    // Tickets sent before the report are in the published load now: stop counting them here.
    while (head < recent.length && recent[head]!.at <= r.reportAt) {
      const k = recent[head]!;
      if (k.counted) {
        k.counted = false;
        t.sum -= k.work;
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

  dispatch(replica: string, work: number, now: number): Ticket {
    const t = this.#track(replica);
    t.inflight++;
    const ticket: Ticket = { replica, at: now, work, open: true, counted: true };
    t.recent.push(ticket);
    t.sum += work;
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
    }
  }

  /** A replica refused a connection: avoid it until suspectMs pass or it reports ready again. */
  markSuspect(id: string, now: number): void {
    const t = this.#track(id);
    if (t.suspectUntil === 0) this.#suspects++;
    t.suspectAt = now;
    t.suspectUntil = now + this.suspectMs;
  }

  isSuspect(r: Replica, now: number): boolean {
    if (this.#suspects === 0) return false;
    const t = this.#tracks.get(r.id);
    return t !== undefined && now < t.suspectUntil && r.receivedAt <= t.suspectAt;
  }

  /** Optimistic warmth: treat the first chunks of `hashes` as cached on `slot` until now + overlayTtlMs. */
  overlayAdd(hashes: BigUint64Array, slot: number, now: number): void {
    const n = Math.min(hashes.length, this.overlayMaxChunks);
    const until = now + this.overlayTtlMs;
    for (let i = 0; i < n; i++) {
      const h = hashes[i]!;
      const e = this.#overlay.get(h);
      if (e === undefined) {
        this.#overlay.set(h, { slots: [slot], until: [until] });
        continue;
      }
      const j = e.slots.indexOf(slot);
      if (j >= 0) e.until[j] = until;
      else {
        e.slots.push(slot);
        e.until.push(until);
      }
    }
    if (this.#depth.length <= slot) {
      const d = new Int32Array(Math.max(slot + 1, this.#depth.length * 2));
      d.set(this.#depth);
      this.#depth = d;
    }
  }

  /** Like FleetView.scanWarmth, over the overlay; read with overlayDepthOf. */
  scanOverlay(hashes: BigUint64Array, now: number): void {
    const depth = this.#depth;
    for (const s of this.#touched) depth[s] = 0;
    this.#touched.length = 0;
    if (this.#overlay.size === 0) return;
    for (let i = 0; i < hashes.length; i++) {
      const e = this.#overlay.get(hashes[i]!);
      if (e === undefined) break;
      let advanced = false;
      for (let j = 0; j < e.slots.length; j++) {
        const s = e.slots[j]!;
        if (e.until[j]! > now && depth[s] === i) {
          depth[s] = i + 1;
          if (i === 0) this.#touched.push(s);
          advanced = true;
        }
      }
      if (!advanced) break;
    }
  }

  /** Slots with a non-zero depth in the last scanOverlay (do not modify). */
  get overlaySlots(): readonly number[] {
    return this.#touched;
  }

  overlayDepthOf(slot: number): number {
    return this.#depth[slot] ?? 0;
  }

  get overlaySize(): number {
    return this.#overlay.size;
  }

  /** Periodic: drop expired overlay entries and idle trackers. */
  prune(now: number): void {
    for (const [h, e] of this.#overlay) {
      for (let j = e.slots.length - 1; j >= 0; j--) {
        if (e.until[j]! <= now) {
          e.slots.splice(j, 1);
          e.until.splice(j, 1);
        }
      }
      if (e.slots.length === 0) this.#overlay.delete(h);
    }
    for (const [id, t] of this.#tracks) {
      // Closed tickets need no bookkeeping; keep the open ones for the next report.
      if (t.recent.length > 0) {
        t.recent = t.recent.slice(t.head).filter((k) => k.counted);
        t.head = 0;
      }
      if (t.suspectUntil !== 0 && now >= t.suspectUntil) {
        t.suspectUntil = 0;
        this.#suspects--;
      }
      if (t.inflight === 0 && t.recent.length === 0 && t.suspectUntil === 0) this.#tracks.delete(id);
    }
  }
}
