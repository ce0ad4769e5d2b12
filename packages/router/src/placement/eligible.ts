/**
 * Eligibility and the affinity key: the two things every policy must agree on.
 * The candidate table (candidates.ts) applies `eligible` once per request, so a
 * policy can only ever return a replica it admits; the conformance suite
 * checks exactly this.
 */
import { hashString, type RequestInfo } from '@warmpath/shared/wire';
import { endpointBit } from '../fleet/published.ts';
import type { FleetView, Replica } from '../fleet/view.ts';
import type { LocalState } from '../core/local.ts';
import type { PlacementRequest } from './types.ts';

/**
 * May `r` take `req` now? The replica's published state allows it
 * (FleetView.placeable: live, ready, chunk size matches, positive weight,
 * offers the endpoint, current: fresh, or as fresh as any while gossip is
 * silent) and so do this request and this router (`eligibleHere`). The
 * model (+ adapter) is the group's.
 */
export function eligible(r: Replica, req: PlacementRequest, view: FleetView, local: LocalState): boolean {
  return view.placeable(r.slot, endpointBit(req.endpoint), req.now) && eligibleHere(r, req, local);
}

/** The part of `eligible` that is this request's and this router's: its role serves the leg placed, not tried already for it, not ejected here. */
export function eligibleHere(r: Replica, req: PlacementRequest, local: LocalState): boolean {
  // r.id is read only when something could exclude it: the table calls this for every member on every request.
  return (
    (req.without === undefined || r.state.role !== req.without) &&
    (req.exclude === undefined || !req.exclude.has(r.id)) &&
    (local.ejected === 0 || !local.isEjected(r.id, req.now))
  );
}

/**
 * The affinity key: the explicit routing key (hashed with the model), else the
 * chain hash at `depth` chunks (the deepest full chunk if the prompt is
 * shorter), else a hash of the model — so requests sharing a system prompt
 * share a key.
 */
export function affinityKey(
  info: Pick<RequestInfo, 'routingKey' | 'hashes' | 'model' | 'adapter'>,
  depth: number,
): bigint {
  if (info.routingKey !== undefined) return hashString(`${info.model}\u0000${info.routingKey}`);
  const n = info.hashes.length;
  if (n > 0) return info.hashes[Math.min(depth, n) - 1]!;
  return hashString(`${info.model}\u0000${info.adapter}`);
}
