/**
 * Request ids and W3C trace context as the router and the agent pass them on:
 * client → router → agent → engine, the same `x-request-id` in every hop's
 * access log and back to the client, and the client's `traceparent` /
 * `tracestate` forwarded untouched. Warmpath records no spans of its own, so
 * it starts no trace: a request without `traceparent` goes on without one.
 */

export const TRACE_HEADERS = {
  requestId: 'x-request-id',
  traceparent: 'traceparent',
  tracestate: 'tracestate',
} as const;

/** A client's request id is kept when it is 1–128 visible ASCII characters: safe in a header and a log line. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** The client's request id when usable, else a new one (a random UUID). */
export function requestIdOf(header: unknown): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : crypto.randomUUID();
}

/** version-traceid-parentid-flags (W3C Trace Context §3.2); a later version may append fields. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/;
const ZEROS = /^0+$/;
/** Longest tracestate passed on, characters (32 members of up to 256 characters would be far more; vendors keep it short). */
const MAX_TRACESTATE_CHARS = 512;

export interface TraceContext {
  traceparent: string;
  tracestate: string | undefined;
  /** The trace id, for log lines. */
  traceId: string;
}

/** The request's trace context when its traceparent is valid; an invalid one is not passed on. */
export function traceContextOf(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): TraceContext | undefined {
  const traceparent = headers[TRACE_HEADERS.traceparent];
  if (typeof traceparent !== 'string') return undefined;
  const m = TRACEPARENT.exec(traceparent);
  if (m === null || m[1] === 'ff' || (m[1] === '00' && m[4] !== undefined) || ZEROS.test(m[2]!) || ZEROS.test(m[3]!))
    return undefined;
  const state = headers[TRACE_HEADERS.tracestate];
  const tracestate = typeof state === 'string' && state.length <= MAX_TRACESTATE_CHARS ? state : undefined;
  return { traceparent, tracestate, traceId: m[2]! };
}
