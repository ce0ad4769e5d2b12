/**
 * A request inside the router core: what the transport handed it, where it
 * is in its attempts, and, with tenants, who it runs as and its claim on the
 * tenant's limits. Its own module so the core stays one reading.
 */
import type { RequestInfo } from '@warmpath/shared/wire';
import type { LimitTicket } from '../tenants/limits.ts';
import type { Who } from '../tenants/tenancy.ts';
import type { SendResult } from './types.ts';

/** A request inside the core; opaque to transports except as a handle for `cancel`. */
export interface RouteJob<T> {
  readonly ctx: T;
  readonly info: RequestInfo;
}

export interface Job<T> extends RouteJob<T> {
  readonly body: Readonly<Record<string, unknown>> | undefined;
  readonly key: bigint;
  /** The tenant and band (with a tenants file); undefined without one, or for an --api-keys key. */
  readonly who: Who | undefined;
  /** Its claim on the tenant's limits, released when it ends. */
  ticket: LimitTicket | undefined;
  /** The x-ratelimit-* headers of its admission, sent with the answer. */
  rateHeaders: Readonly<Record<string, string>> | undefined;
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

/** A new job, before its first placement. */
export function newJob<T>(
  ctx: T,
  info: RequestInfo,
  body: Readonly<Record<string, unknown>> | undefined,
  key: bigint,
  who: Who | undefined,
): Job<T> {
  return {
    ctx,
    info,
    body,
    key,
    who,
    ticket: undefined,
    rateHeaders: undefined,
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
