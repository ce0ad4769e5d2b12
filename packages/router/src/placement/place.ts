/**
 * The one entry point through which a router (live or simulated) consults its
 * policy: place a request, then tell the policy where it went and how it
 * ended. Everything around placement calls these three functions, never the
 * policy's methods directly.
 *
 * placeRequest builds the candidate table and the warmth once, here, so every
 * policy sees the same eligibility rule and none of them reads the fleet view
 * or this router's local state itself.
 */
import type { FleetView, Replica } from '../fleet/view.ts';
import { buildCandidates, scanWarmth } from './candidates.ts';
import type { LocalState } from '../core/local.ts';
import { NO_REPLICA, type Outcome, type Placement, type PlacementRequest, type Policy } from './types.ts';

export function placeRequest(policy: Policy, req: PlacementRequest, view: FleetView, local: LocalState): Placement {
  const table = buildCandidates(req, view, local, policy.expectsOthers === true);
  if (table === undefined) return NO_REPLICA;
  return policy.select(req, table, scanWarmth(req, table, view, local));
}

/** placeRequest, timed when `observe` is given (seconds). */
export function placeTimed(
  policy: Policy,
  req: PlacementRequest,
  view: FleetView,
  local: LocalState,
  observe: ((seconds: number) => void) | undefined,
): Placement {
  if (observe === undefined) return placeRequest(policy, req, view, local);
  const t0 = performance.now();
  const placement = placeRequest(policy, req, view, local);
  observe((performance.now() - t0) / 1e3);
  return placement;
}

export function notifyDispatch(policy: Policy, req: PlacementRequest, replica: Replica, local: LocalState): void {
  policy.onDispatch?.(req, replica, local);
}

export function notifyComplete(policy: Policy, req: PlacementRequest, replica: Replica, outcome: Outcome): void {
  policy.onComplete?.(req, replica, outcome);
}
