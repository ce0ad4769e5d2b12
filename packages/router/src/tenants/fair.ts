/**
 * The router queue with tenants: priority bands, and within a band weighted
 * fair shares of work between tenants (deficit round robin on estimated
 * tokens). It replaces core/queue.ts's arrival-order queue when a tenants
 * file is in force, with the same contract: requests that found no room wait
 * here until a wake, each woken one runs placement again itself, and one that
 * still finds no room comes back (`add` again).
 *
 * Steps of a wake pass (coalesced per instant):
 *  1. strict order: bands highest first; in a band, deficit round robin
 *     over its tenants: a visit adds QUANTUM × weight to the tenant's
 *     deficit and wakes its oldest waiters while their cost (estimated
 *     tokens: prompt + output) fits the deficit, paying it. The first woken
 *     waiter that comes back found no room: it is refunded, keeps its place
 *     at the head of its tenant's line, the visit stays open for the next
 *     pass, and strict order stops (the fleet is full).
 *  2. work-conserving sweep: every waiter not woken yet gets one try (a
 *     smaller or a lower request may fit where that one did not), paid from
 *     its tenant's deficit, which may go below zero and is paid back before
 *     its next turn.
 * Deficits last while a tenant has waiters, as in DRR.
 * Full: a new request of a higher band sheds the newest waiter of the lowest
 * band below it (answered at once by `onShed`, 429 and Retry-After);
 * otherwise the new one is refused.
 * Timers: one poll for the whole queue every pollMs while it holds waiters
 * (load decays on replicas even when no message arrives), and each waiter's
 * own deadline.
 * Complexity: O(waiters + tenants × rounds) per pass, where a round where no
 * one fits is skipped in one step; O(log n) per add into a tenant's line.
 */
import type { Clock } from '@warmpath/shared/runtime';
import { PRIORITY_BANDS } from '@warmpath/shared/wire';

/** Tokens of deficit a weight-1 tenant earns per visit. */
export const QUANTUM = 1_024;

/** What the queue reads of a waiter. */
export interface WaiterClass {
  /** Band rank, 0 = highest (PRIORITY_BANDS). */
  readonly band: number;
  readonly tenant: string;
  readonly weight: number;
  /** Estimated tokens (prompt + output). */
  readonly cost: number;
}

export interface FairQueueOptions<W extends object> {
  max: number;
  pollMs: number;
  clock: Clock;
  classOf: (w: W) => WaiterClass;
  onWake: (w: W) => void;
  /** A waiter pushed out by a higher band's request while the queue was full. */
  onShed: (w: W) => void;
}

interface Line<W> {
  readonly name: string;
  weight: number;
  /** Tokens it may still be woken for; below 0 after a sweep woke it out of turn (paid back before its next turn). */
  deficit: number;
  /** Its next visit earns a quantum (false while a visit a full fleet cut short goes on). */
  fresh: boolean;
  /** Waiters by arrival (seq). */
  readonly waiters: W[];
}

interface Band<W> {
  readonly lines: Map<string, Line<W>>;
  /** Tenants with waiters, in ring order; `cursor` is the next visited. */
  ring: Line<W>[];
  cursor: number;
}

export class FairQueue<W extends object> {
  readonly #o: FairQueueOptions<W>;
  readonly #bands: Band<W>[] = PRIORITY_BANDS.map(() => ({ lines: new Map(), ring: [], cursor: 0 }));
  /** Each waiter's arrival number (kept when it comes back) and its deadline timer. */
  readonly #seq = new WeakMap<W, number>();
  readonly #cancel = new Map<W, () => void>();
  #next = 0;
  #scheduled = false;
  #pollArmed = false;
  /** During a pass: the waiter being woken, and the ones that came back (inserted after the pass). */
  #passing = false;
  #serving: { w: W; line: Line<W>; cost: number; back: boolean } | undefined;
  #later: Array<[W, number]> = [];

  constructor(o: FairQueueOptions<W>) {
    this.#o = o;
  }

  get length(): number {
    return this.#cancel.size + this.#later.length;
  }

  /** Waits `w` for at most `ms`; false when the queue is full and nothing lower can be shed. */
  add(w: W, ms: number): boolean {
    if (this.length >= this.#o.max && !this.#shedFor(this.#o.classOf(w).band)) return false;
    if (this.#passing) {
      if (this.#serving?.w === w) {
        this.#serving.line.deficit += this.#serving.cost;
        this.#serving.back = true;
      }
      this.#later.push([w, ms]);
      return true;
    }
    this.#insert(w, ms);
    return true;
  }

  /** Takes `w` out of the queue; false when it was not waiting. */
  remove(w: W): boolean {
    const i = this.#later.findIndex(([x]) => x === w);
    if (i >= 0) {
      this.#later.splice(i, 1);
      return true;
    }
    const cancel = this.#cancel.get(w);
    if (cancel === undefined) return false;
    cancel();
    this.#cancel.delete(w);
    const c = this.#o.classOf(w);
    const line = this.#bands[c.band]!.lines.get(c.tenant);
    if (line !== undefined) {
      const j = line.waiters.indexOf(w);
      if (j >= 0) line.waiters.splice(j, 1);
    }
    return true;
  }

  /** Wake every waiter in fair order, once per instant however often called. */
  wake(): void {
    if (this.length === 0 || this.#scheduled) return;
    this.#scheduled = true;
    this.#o.clock.schedule(0, () => {
      this.#scheduled = false;
      this.#pass();
    });
  }

  #insert(w: W, ms: number): void {
    const c = this.#o.classOf(w);
    let seq = this.#seq.get(w);
    if (seq === undefined) this.#seq.set(w, (seq = this.#next++));
    const band = this.#bands[c.band]!;
    let line = band.lines.get(c.tenant);
    if (line === undefined)
      band.lines.set(c.tenant, (line = { name: c.tenant, weight: c.weight, deficit: 0, fresh: true, waiters: [] }));
    line.weight = c.weight;
    if (line.waiters.length === 0 && !band.ring.includes(line)) band.ring.push(line);
    // Binary search by arrival: a waiter that comes back keeps its place.
    let lo = 0;
    let hi = line.waiters.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#seq.get(line.waiters[mid]!)! < seq) lo = mid + 1;
      else hi = mid;
    }
    line.waiters.splice(lo, 0, w);
    this.#cancel.set(
      w,
      this.#o.clock.schedule(ms, () => {
        if (this.remove(w)) this.#o.onWake(w);
      }),
    );
    this.#armPoll();
  }

  #armPoll(): void {
    if (this.#pollArmed) return;
    this.#pollArmed = true;
    this.#o.clock.schedule(this.#o.pollMs, () => {
      this.#pollArmed = false;
      if (this.length === 0) return;
      this.wake();
      this.#armPoll();
    });
  }

  #pass(): void {
    this.#passing = true;
    try {
      // Strict DRR, highest band first, until room runs out; then everyone left gets one try.
      let open = true;
      for (const band of this.#bands) if (open) open = this.#drr(band);
      for (const band of this.#bands) this.#sweep(band);
    } finally {
      this.#passing = false;
      this.#serving = undefined;
    }
    const later = this.#later;
    this.#later = [];
    for (const [w, ms] of later) this.#insert(w, ms);
    for (const band of this.#bands) {
      for (const l of band.ring) if (l.waiters.length === 0) l.deficit = Math.min(0, l.deficit);
      band.ring = band.ring.filter((l) => l.waiters.length > 0);
      for (const [name, l] of band.lines) if (l.waiters.length === 0 && l.deficit >= 0) band.lines.delete(name);
      if (band.cursor >= band.ring.length) band.cursor = 0;
    }
  }

  /** Wakes `w` (taken out of its line) on `line`'s account; false when it found no room (it came back, refunded). */
  #wakeOne(w: W, line: Line<W>, cost: number): boolean {
    const i = line.waiters.indexOf(w);
    if (i >= 0) line.waiters.splice(i, 1);
    this.#cancel.get(w)?.();
    this.#cancel.delete(w);
    line.deficit -= cost;
    this.#serving = { w, line, cost, back: false };
    this.#o.onWake(w);
    const back = this.#serving.back;
    this.#serving = undefined;
    return !back;
  }

  /**
   * Deficit round robin over one band, from where the last pass stopped:
   * a visit earns QUANTUM × weight once and wakes the line's oldest waiters
   * while they fit its deficit. Stops at the first waiter that finds no room
   * (the fleet is full: its turn is kept for the next pass); true when every
   * waiter of the band was woken and room may be left.
   */
  #drr(band: Band<W>): boolean {
    let idle = 0; // visits in a row that woke no one
    while (band.ring.some((l) => l.waiters.length > 0)) {
      if (band.cursor >= band.ring.length) band.cursor = 0;
      const line = band.ring[band.cursor]!;
      if (line.waiters.length > 0) {
        if (idle >= band.ring.length) {
          this.#skipRounds(band);
          idle = 0;
        }
        if (line.fresh) line.deficit += QUANTUM * line.weight;
        line.fresh = false;
        let woke = false;
        while (line.waiters.length > 0) {
          const w = line.waiters[0]!;
          const cost = this.#o.classOf(w).cost;
          if (cost > line.deficit) break;
          woke = true;
          if (!this.#wakeOne(w, line, cost)) return false;
        }
        idle = woke ? 0 : idle + 1;
      }
      line.fresh = true;
      band.cursor++;
    }
    return true;
  }

  /** Room may be left for what strict order did not reach (a smaller or lower request): each waiter left gets one try, paid from its deficit. */
  #sweep(band: Band<W>): void {
    const n = band.ring.length;
    for (let k = 0; k < n; k++) {
      const line = band.ring[(band.cursor + k) % n]!;
      for (const w of [...line.waiters]) this.#wakeOne(w, line, this.#o.classOf(w).cost);
    }
  }

  /** A whole round woke no one: add the rounds it would take until someone's head fits, at once. */
  #skipRounds(band: Band<W>): void {
    let rounds = Infinity;
    for (const l of band.ring) {
      if (l.waiters.length === 0) continue;
      const need = this.#o.classOf(l.waiters[0]!).cost - l.deficit;
      rounds = Math.min(rounds, Math.ceil(need / (QUANTUM * l.weight)) - 1);
    }
    if (!Number.isFinite(rounds) || rounds <= 0) return;
    for (const l of band.ring) if (l.waiters.length > 0) l.deficit += rounds * QUANTUM * l.weight;
  }

  /** Full: shed the newest waiter of the lowest band below `band`; false when there is none. */
  #shedFor(band: number): boolean {
    for (let b = this.#bands.length - 1; b > band; b--) {
      let newest: W | undefined;
      let newestSeq = -1;
      for (const l of this.#bands[b]!.lines.values())
        for (const w of l.waiters) {
          const s = this.#seq.get(w)!;
          if (s > newestSeq) [newest, newestSeq] = [w, s];
        }
      if (newest !== undefined && this.remove(newest)) {
        this.#o.onShed(newest);
        return true;
      }
    }
    return false;
  }
}
