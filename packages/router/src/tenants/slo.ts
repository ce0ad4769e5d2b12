/**
 * SLO admission: a request is sent only where its predicted time to first
 * token keeps within its band's objective and within every higher band's
 * (docs/TENANTS.md, "SLO admission"). Otherwise it waits in the fair queue,
 * where higher bands and fair shares go first, and places again when room
 * may have freed; past its wait it is refused (429 fleet_saturated).
 *
 * Rule: predicted = (prefill queued ahead on the pick + the request's own
 * uncached prompt) ÷ (prefillTokensPerS × the replica's weight). A request
 * of band b holds while predicted > bound(b), where bound(b) is the
 * tightest of its own tenant's objective for b and every objective any
 * tenant set for a band above b — unless nothing is queued ahead on the
 * pick (a request too large for its bound is still served by an idle
 * replica: waiting would not make it faster). So a lower band is never sent
 * where it would make a higher band's next request miss, and contention
 * shows up as predicted delay, before any replica is full.
 * Invariant: a file without objectives holds nothing (every bound is
 * infinite), and a tenant's objective never loosens another tenant's bound.
 * Complexity: O(bands × tenants) per file, O(1) per placement.
 * Trade-off: the prediction counts prefill only (not the engine's fixed
 * per-request cost, nor decode steps sharing the batch): it is a lower
 * bound of TTFT, so an objective is set with that margin in mind.
 */
import { PRIORITY_BANDS } from '@warmpath/shared/wire';
import type { Replica } from '../fleet/view.ts';
import type { PriorityBand, Tenant } from './types.ts';

/** Per band rank: the tightest objective (ms) any tenant set for a band above it; Infinity when none. */
export function guardsOf(tenants: Iterable<Tenant>): number[] {
  const tightest = PRIORITY_BANDS.map(() => Number.POSITIVE_INFINITY);
  for (const t of tenants)
    for (const [i, band] of PRIORITY_BANDS.entries()) {
      const ms = t.slo?.[band]?.ttftMs;
      if (ms !== undefined) tightest[i] = Math.min(tightest[i]!, ms);
    }
  let above = Number.POSITIVE_INFINITY;
  return tightest.map((ms) => {
    const guard = above;
    above = Math.min(above, ms);
    return guard;
  });
}

/** The most predicted TTFT (ms) a request of `tenant` in `band` may be sent with. */
export function sloBoundMs(tenant: Tenant, band: PriorityBand, guards: readonly number[]): number {
  const own = tenant.slo?.[band]?.ttftMs ?? Number.POSITIVE_INFINITY;
  return Math.min(own, guards[PRIORITY_BANDS.indexOf(band)] ?? Number.POSITIVE_INFINITY);
}

/** What the prediction reads of the pick. */
export interface PickLoad {
  /** Prefill queued ahead on the replica now, tokens (pickLoad). */
  readonly queue: number;
  /** The request's uncached prompt there, tokens. */
  readonly prefill: number;
  /** The replica's prefill rate, tokens/s. */
  readonly rate: number;
}

/** Predicted time to first token on the pick, ms: the prefill queued ahead and the request's own, at the replica's rate. */
export function predictedTtftMs(p: PickLoad): number {
  return ((p.queue + p.prefill) / p.rate) * 1_000;
}

/**
 * The pick's load now: its published prefill queue less what it prefilled
 * since that report (at its rate, prefillTokensPerS × weight), plus the work
 * this router sent it since (`added`). Other routers' work since the report
 * is not known here; agents publish again on a change of about one
 * request's work, so a report is young while the replica is busy.
 */
export function pickLoad(
  replica: Replica,
  work: { prefill: number; added: number },
  prefillTokensPerS: number,
  now: number,
): PickLoad {
  const weight = replica.state.capacity.weight > 0 ? replica.state.capacity.weight : 1;
  const rate = prefillTokensPerS * weight;
  const drained = (rate * Math.max(0, now - replica.reportAt)) / 1_000;
  const queue = Math.max(0, replica.state.load.prefillTokens - drained) + work.added;
  return { queue, prefill: work.prefill, rate };
}
