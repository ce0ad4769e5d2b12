/**
 * When the interactive reserve is in force, and which side of it a request
 * is placed on (docs/TENANTS.md, "Interactive reserve"; which replicas are
 * reserved: placement/reserve.ts).
 *
 * Rule: the split holds while both sides have work — this router admitted
 * an interactive request and a lower-band one (standard or batch) within
 * the last `lendAfterSeconds`. Then an interactive request is placed on the
 * reserved replicas and a lower-band one on the rest. Once either side has
 * been idle that long, both are placed on the whole group: the reserve is
 * lent to the lower bands while no interactive request comes, and the rest
 * to the interactive band while no lower-band one comes — work-conserving.
 * A request with no band (no tenants file, an --api-keys key) is never split.
 * Invariant: while the split holds, no lower-band request is sent to a
 * reserved replica by this router (the core falls back to the whole group
 * only for an interactive request the reserved replicas cannot take; a
 * lower-band one with no room on the rest waits: `leavesSide`).
 * Each router judges idleness by its own admissions: under random L4 every
 * router sees each band's traffic within moments of the others, so they
 * split and lend together; behind sticky L4 with few clients one router may
 * lend while another splits.
 * Complexity: O(1) per request.
 */
import type { Reserve } from '../placement/reserve.ts';
import type { Placement } from '../placement/types.ts';
import type { BandReserve, PriorityBand } from './types.ts';

export class BandSplit {
  /** When this router last admitted an interactive request, and a lower-band one, ms. */
  #interactiveAt = Number.NEGATIVE_INFINITY;
  #lowerAt = Number.NEGATIVE_INFINITY;

  /** A request of `band` was admitted at `now`. */
  note(band: PriorityBand, now: number): void {
    if (band === 'interactive') this.#interactiveAt = Math.max(this.#interactiveAt, now);
    else this.#lowerAt = Math.max(this.#lowerAt, now);
  }

  /** The side a request of `band` is placed on now, or undefined: the whole group (no reserve, or one side idle). */
  sideOf(reserve: BandReserve | undefined, band: PriorityBand | undefined, now: number): Reserve | undefined {
    if (reserve === undefined || band === undefined) return undefined;
    const idleMs = reserve.lendAfterSeconds * 1000;
    if (now - this.#interactiveAt > idleMs || now - this.#lowerAt > idleMs) return undefined;
    return { share: reserve.interactive, side: band === 'interactive' ? 'reserved' : 'rest' };
  }
}

/**
 * Whether a request placed on `side` is placed again on the whole group:
 * only an interactive request the reserved replicas cannot take (none has
 * room, or each refused it) — it goes where there is room rather than wait
 * behind the split. A lower-band request that finds no room on the rest
 * (full, held full by a refusal, or out) waits in the queue: the reserve is
 * not lent while the interactive band has work.
 */
export function leavesSide(side: Reserve, placement: Placement): boolean {
  return placement.replica === undefined && side.side === 'reserved';
}
