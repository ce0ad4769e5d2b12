/**
 * The one entry point through which a router (live or simulated) consults its
 * policy: place a request, then tell the policy where it went and how it
 * ended. Everything around placement calls these three functions, never the
 * policy's methods directly.
 */
import type { FleetView, Replica } from '../fleet/view.ts';
import type { LocalState } from './local.ts';
import type { Outcome, Placement, PlacementRequest, Policy } from './types.ts';

export function placeRequest(policy: Policy, req: PlacementRequest, view: FleetView, local: LocalState): Placement {
  return policy.place(req, view, local);
}

export function notifyDispatch(policy: Policy, req: PlacementRequest, replica: Replica, local: LocalState): void {
  policy.onDispatch?.(req, replica, local);
}

export function notifyComplete(policy: Policy, req: PlacementRequest, replica: Replica, outcome: Outcome): void {
  policy.onComplete?.(req, replica, outcome);
}
