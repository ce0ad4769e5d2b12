/**
 * Passive outlier ejection: a replica that keeps failing the requests this
 * router sends it is taken out of placement for a while, without any probe
 * traffic of its own. Gossip cannot catch this: a replica answering 500 at
 * once stays `ready` and looks lightly loaded, so it would attract more work.
 *
 * Steps:
 *  1. failure(r): a refused connection ejects at once (nothing listens); a
 *     5xx other than an admission refusal, a reset or a timeout adds to the
 *     replica's run of consecutive failures, which ejects it at
 *     `ejectAfterFailures`.
 *  2. eject: for ejectBaseMs × 2^(ejections in a row), at most ejectMaxMs,
 *     unless max(1, ejectMaxPercent of the request's model group) are
 *     ejected already (then the failure only counts: a fleet-wide fault must
 *     not empty the fleet).
 *  3. when the ejection ends the replica is placed again; its run stays at
 *     the threshold, so one more failure ejects it again, for twice as long.
 *  4. success(r): an answer (any status below 500) ends the run and the
 *     doubling: the replica has recovered.
 * Complexity: O(1) per outcome; O(group) per ejection decision.
 * Trade-off: passive detection costs real requests (the failures before the
 * ejection and one per expiry), which the core retries elsewhere within its
 * retry budget; active health checks would cost steady traffic to every
 * replica and still miss request-specific failures.
 */
import type { ReplicaView } from '../fleet/replica.ts';
import type { LocalState } from './local.ts';

/** The router config's ejection settings (validated there; no defaults here). */
export interface OutlierOptions {
  readonly ejectAfterFailures: number;
  readonly ejectBaseMs: number;
  readonly ejectMaxMs: number;
  readonly ejectMaxPercent: number;
}

/** What failed: `connect` never reached the replica; `error` is a 5xx, a reset, a timeout or a stream cut. */
export type FailureKind = 'connect' | 'error';

interface Streak {
  /** Consecutive failures. */
  run: number;
  /** Ejections in a row (the backoff's exponent). */
  ejections: number;
}

export class Outliers {
  readonly #o: OutlierOptions;
  readonly #local: LocalState;
  readonly #records = new Map<string, Streak>();

  /** Ejections are written into `local`, where eligibility reads them. */
  constructor(o: OutlierOptions, local: LocalState) {
    this.#o = o;
    this.#local = local;
  }

  /** A failed attempt on `r`; `group` is the request's model group (the ejection cap's base). Returns the ejection's length, ms, or 0. */
  failure(r: ReplicaView, kind: FailureKind, group: readonly ReplicaView[], now: number): number {
    let rec = this.#records.get(r.id);
    if (rec === undefined) this.#records.set(r.id, (rec = { run: 0, ejections: 0 }));
    rec.run = kind === 'connect' ? Math.max(rec.run + 1, this.#o.ejectAfterFailures) : rec.run + 1;
    if (rec.run < this.#o.ejectAfterFailures || this.#local.isEjected(r.id, now)) return 0;
    if (!this.#roomToEject(group, now)) return 0;
    const ms = Math.min(this.#o.ejectBaseMs * 2 ** rec.ejections, this.#o.ejectMaxMs);
    rec.ejections++;
    this.#local.eject(r.id, now + ms);
    return ms;
  }

  /** `r` answered: its failures and its backoff are forgotten. */
  success(id: string): void {
    this.#records.delete(id);
  }

  /** Forget replicas the fleet view no longer knows. */
  retain(known: ReadonlyMap<string, unknown>): void {
    for (const id of this.#records.keys()) if (!known.has(id)) this.#records.delete(id);
  }

  /** May one more member of `group` be ejected: fewer than max(1, ejectMaxPercent %) are now? */
  #roomToEject(group: readonly ReplicaView[], now: number): boolean {
    const cap = Math.max(1, Math.floor((group.length * this.#o.ejectMaxPercent) / 100));
    let n = 0;
    for (const m of group) if (this.#local.isEjected(m.id, now) && ++n >= cap) return false;
    return true;
  }
}
