/**
 * `@warmpath/router/testing`: what another package's tests need to test a
 * policy the way the router's own tests do (the benchmark's emulations of
 * peer routers): the fixtures, the conformance suite, and the placement
 * entry points a router calls around a policy.
 */
export { policyConformance, type ConformanceOptions } from './conformance.ts';
export { CONFIG, chainOf, chat, makeState, makeView, preq, type StateOverrides } from './helpers.ts';
export { LocalState } from '../src/core/local.ts';
export { notifyComplete, notifyDispatch, placeRequest } from '../src/placement/place.ts';
export { placePair } from '../src/placement/pair.ts';
export type { FleetView } from '../src/fleet/view.ts';
