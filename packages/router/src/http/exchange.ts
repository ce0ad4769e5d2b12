/**
 * One client exchange as the HTTP transport carries it through the router
 * core: the proxy (proxy.ts) creates it, the send (forward.ts) relays each
 * attempt over it, the observer (observe.ts) reads it. Its own module so
 * that none of them imports another for the type.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** One client exchange: what the transport needs on every attempt. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The request body exactly as received. */
  readonly raw: Buffer;
  /** /v1/… path, appended to the replica's base URL. */
  readonly path: string;
  /** Aborted when the client leaves or the total deadline passes. */
  readonly signal: AbortSignal;
  /** Aborted when the total deadline (totalTimeoutMs from arrival) passes. */
  readonly deadline: AbortSignal;
}
