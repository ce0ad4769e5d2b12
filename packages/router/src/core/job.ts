/**
 * A request inside the router core (router-core.ts): what it carries from
 * placement to placement — its exclusions, attempts, queueing deadline, the
 * last failure, its crashes and its retry budget slot.
 */
import type { RequestInfo } from '@warmpath/shared/wire';
import type { SendResult } from './types.ts';

/** A request inside the core; opaque to transports except as a handle for `cancel`. */
export interface RouteJob<T> {
  readonly ctx: T;
  readonly info: RequestInfo;
}

export interface Job<T> extends RouteJob<T> {
  readonly body: Readonly<Record<string, unknown>> | undefined;
  readonly key: bigint;
  exclude: Set<string> | undefined;
  attempt: number;
  /** When queueing gives up, ms; 0 = never queued. */
  deadline: number;
  /** The last failed attempt's result. */
  last: SendResult | undefined;
  /** Prefill the last refusal found queued beyond that limit (PlacementRequest.missed). */
  missed: number | undefined;
  /** The client left: place no more. */
  cancelled: boolean;
  /** Replicas on which it crashed the engine (a reset or a 5xx). */
  crashes: number;
  /** Holds one of the retry budget's retries in flight. */
  retrying: boolean;
  /** Waiting for a retry budget slot until then, ms; 0 = not waiting. */
  slotDeadline: number;
  /** Counted in the active requests (until answered or ended). */
  active: boolean;
}

/** A request as it enters the core: no attempt yet, counted active. */
export function newJob<T>(
  ctx: T,
  info: RequestInfo,
  body: Readonly<Record<string, unknown>> | undefined,
  key: bigint,
): Job<T> {
  return {
    ctx,
    info,
    body,
    key,
    exclude: undefined,
    attempt: 0,
    deadline: 0,
    last: undefined,
    missed: undefined,
    cancelled: false,
    crashes: 0,
    retrying: false,
    slotDeadline: 0,
    active: true,
  };
}
