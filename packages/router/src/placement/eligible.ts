/**
 * Eligibility and the affinity key: the two things every policy must agree on.
 * The candidate table (candidates.ts) applies `eligible` once per request, so a
 * policy can only ever return a replica it admits; the conformance suite
 * checks exactly this.
 */
import { hashString, type RequestInfo } from '@warmpath/shared/wire';
import type { FleetView, Replica } from '../fleet/view.ts';
import type { LocalState } from './local.ts';
import type { PlacementRequest } from './types.ts';

/**
 * May `r` take `req` now? Serves the model (+ adapter) — guaranteed by the
 * group — offers the endpoint, status ready, current state (fresh, or as
 * fresh as any while gossip is silent: FleetView.current), chunk size matches,
 * positive weight, not tried already for this request, not ejected here.
 */
export function eligible(r: Replica, req: PlacementRequest, view: FleetView, local: LocalState): boolean {
  const s = r.state;
  return (
    r.live &&
    !r.chunkMismatch &&
    s.status === 'ready' &&
    s.capacity.weight > 0 &&
    view.current(r, req.now) &&
    s.endpoints.includes(req.endpoint) &&
    (req.exclude === undefined || !req.exclude.has(r.id)) &&
    !local.isEjected(r.id, req.now)
  );
}

/**
 * The affinity key: the explicit routing key (hashed with the model), else the
 * chain hash at `depth` chunks (the deepest full chunk if the prompt is
 * shorter), else a hash of the model — so requests sharing a system prompt
 * share a key.
 */
export function affinityKey(info: Pick<RequestInfo, 'routingKey' | 'hashes' | 'model' | 'adapter'>, depth: number): bigint {
  if (info.routingKey !== undefined) return hashString(`${info.model}\u0000${info.routingKey}`);
  const n = info.hashes.length;
  if (n > 0) return info.hashes[Math.min(depth, n) - 1]!;
  return hashString(`${info.model}\u0000${info.adapter}`);
}
