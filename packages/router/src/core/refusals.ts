/**
 * The refusal rule (docs/DESIGN-RATIONALE.md, "Staleness"): an agent that
 * refused a request with no queue figure (it is full: KV, slots, draining)
 * is held full by this router — no candidate — until the first of: the
 * replica's next report (it says how full), one of this router's own
 * requests there running to its end (a slot freed), or `holdMs` after the
 * refusal (the state TTL: past it the age rule alone decides).
 * Invariant: however the states that would say a replica is full are lost
 * or delayed, it takes at most one refused request per hold from this
 * router (and those already on their way), never a stream of them.
 * Complexity: O(1) per refusal, completion and check; no lookup at all while
 * nothing is held (the candidate table's common case).
 * Trade-off: a replica that refused for a moment (a burst) is skipped until
 * its next report, up to one publish interval of its capacity unused by this
 * router; sending it more would only be refused again.
 */
import type { ReplicaView } from '../fleet/replica.ts';

/** What the rule reads of an attempt's result (core/types.ts SendResult, named without importing the core's types). */
type Ended = { readonly kind: string; readonly queued?: number };

interface Hold {
  /** The state the router held of the replica when its agent refused (each state applied is a new object). */
  readonly state: ReplicaView['state'];
  /** Local clock, ms. */
  readonly until: number;
}

export class Refusals {
  readonly #held = new Map<string, Hold>();

  /**
   * An attempt of this router's on `r` ended at `now` with `result`: a
   * refusal with no queue figure holds r full (while the router holds the
   * same state of it, for `holdMs`) whether or not the request tries again; a request
   * that ran to its end frees a slot there.
   */
  heard(r: ReplicaView, result: Ended, now: number, holdMs: number): void {
    if (result.kind === 'rejected' && result.queued === undefined)
      this.#held.set(r.id, { state: r.state, until: now + holdMs });
    else if (result.kind === 'done' && this.#held.size > 0) this.#held.delete(r.id);
  }

  /** Is `r` held full at `now`? */
  holds(r: ReplicaView, now: number): boolean {
    if (this.#held.size === 0) return false;
    const h = this.#held.get(r.id);
    if (h === undefined) return false;
    if (h.state === r.state && now < h.until) return true;
    this.#held.delete(r.id); // a newer report, or the hold ran out
    return false;
  }

  /** Replicas held now (metrics, tests). */
  get size(): number {
    return this.#held.size;
  }

  /** Periodic: drop the holds that ran out (a replica never placed again would keep its entry). */
  prune(now: number): void {
    for (const [id, h] of this.#held) if (now >= h.until) this.#held.delete(id);
  }
}
