/**
 * The router's per-request observability, beside the request path rather
 * than in it: the request id, the trace context, the access log and the
 * request metrics.
 *
 * Steps: on arrival (server.ts) `observe` takes the client's `x-request-id`
 * or makes one, sets it on the response and starts the clock → the proxy
 * notes the described request (`noteRequest`) and any error it answers
 * (`noteError`) → each attempt is noted by the `send` wrapper
 * (`observeAttempts`), and the forwarder passes the id and the trace context
 * on (`upstreamHeaders`) and notes the first body byte (`noteFirstByte`) →
 * when the response closes: one access-log line, the request counter and
 * the TTFT and duration histograms.
 * Complexity: O(1) per request and per attempt; one WeakMap entry per open
 * request.
 * Trade-off: the token counts here are the router's estimates (what
 * placement used): the router relays the response without parsing it. The
 * one engine figure in the line is the receipt (core/receipts.ts): the
 * cached tokens the agent reported beside the prediction. The agent's
 * access-log line, under the same request id, has the engine's own counts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@warmpath/shared/runtime';
import {
  ERRORS,
  ROUTES,
  TRACE_HEADERS,
  requestIdOf,
  traceContextOf,
  type RequestInfo,
  type TraceContext,
} from '@warmpath/shared/wire';
import { judge } from '../core/receipts.ts';
import type { Send } from '../core/types.ts';
import type { RouterMetrics } from '../metrics.ts';
import type { Exchange } from './exchange.ts';

export interface ObserveDeps {
  readonly logger: Logger;
  readonly metrics: RouterMetrics;
  /** Put the prompt in the access-log line (config logPrompts). */
  readonly logPrompts: boolean;
}

interface Entry {
  readonly id: string;
  readonly t0: number;
  readonly path: string;
  /** The metrics' route label: a path the router serves, or "other". */
  readonly route: string;
  readonly trace: TraceContext | undefined;
  readonly logPrompts: boolean;
  info?: RequestInfo;
  prompt?: unknown;
  replica?: string;
  branch?: string;
  attempts: number;
  firstByteAt?: number;
  error?: string;
  /** The last attempt's predicted cached tokens, and the engine's receipt. */
  expected?: number;
  cached?: number;
  promptReported?: number | undefined;
}

/**
 * The paths the route label takes; any other is "other", so clients cannot
 * grow the series count. A new route the router serves belongs here.
 */
export const ROUTE_LABELS: ReadonlySet<string> = new Set([
  ...Object.keys(ROUTES),
  '/v1/models',
  '/healthz',
  '/readyz',
  '/metrics',
  '/warmpath/v1/fleet',
  '/warmpath/v1/status',
  '/warmpath/v1/status.json',
]);
/** Status labels kept as they are; any other becomes its class ("3xx"). 499: the client left before the answer (nginx's code). */
const STATUS_LABELS: ReadonlySet<number> = new Set([200, 499, ...Object.values(ERRORS).map((e) => e.status)]);

const entries = new WeakMap<ServerResponse, Entry>();

export const statusLabel = (status: number): string =>
  STATUS_LABELS.has(status) ? String(status) : `${Math.floor(status / 100)}xx`;
export const routeLabel = (path: string): string => (ROUTE_LABELS.has(path) ? path : 'other');
const ms = (seconds: number): number => Math.round(seconds * 10_000) / 10;

/** Starts observing one request: its id (also set on the response), its clock, its access-log line when it closes. */
export function observe(req: IncomingMessage, res: ServerResponse, deps: ObserveDeps): void {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const entry: Entry = {
    id: requestIdOf(req.headers[TRACE_HEADERS.requestId]),
    t0: performance.now(),
    path,
    route: routeLabel(path),
    trace: traceContextOf(req.headers),
    logPrompts: deps.logPrompts,
    attempts: 0,
  };
  entries.set(res, entry);
  res.setHeader(TRACE_HEADERS.requestId, entry.id);
  res.once('close', () => finish(req, res, entry, deps));
}

/** The request as the core described it (model, estimates) and, when prompts are logged, its prompt. */
export function noteRequest(res: ServerResponse, info: RequestInfo, body: Record<string, unknown>): void {
  const e = entries.get(res);
  if (e === undefined) return;
  e.info = info;
  if (e.logPrompts) e.prompt = body.messages ?? body.prompt ?? body.input;
}

/** The error code the router answered with. */
export function noteError(res: ServerResponse, code: string): void {
  const e = entries.get(res);
  if (e !== undefined) e.error = code;
}

/** The first response body byte went to the client. */
export function noteFirstByte(res: ServerResponse): void {
  const e = entries.get(res);
  if (e !== undefined) e.firstByteAt ??= performance.now();
}

/** Headers each attempt passes on to the agent: the request id, and the client's trace context when valid. */
export function upstreamHeaders(res: ServerResponse): Record<string, string> {
  const e = entries.get(res);
  if (e === undefined) return {};
  const out: Record<string, string> = { [TRACE_HEADERS.requestId]: e.id };
  if (e.trace !== undefined) {
    out[TRACE_HEADERS.traceparent] = e.trace.traceparent;
    if (e.trace.tracestate !== undefined) out[TRACE_HEADERS.tracestate] = e.trace.tracestate;
  }
  return out;
}

/** The core's `send`, with each attempt noted (replica, branch, count) and counted by result. */
export function observeAttempts(send: Send<Exchange>, metrics: () => RouterMetrics): Send<Exchange> {
  return (d, report) => {
    const e = entries.get(d.ctx.res);
    if (e !== undefined) {
      e.attempts++;
      e.replica = d.replica.id;
      e.branch = d.branch;
      e.expected = d.expectedCached;
    }
    send(d, (r) => {
      metrics().attempts.inc({ result: r.kind === 'done' ? r.outcome : r.kind });
      if (e !== undefined && r.kind === 'done' && r.usage?.cachedTokens !== undefined) {
        e.cached = r.usage.cachedTokens;
        e.promptReported = r.usage.promptTokens;
      }
      report(r);
    });
  };
}

/** The access log's receipt: expected and reported cached tokens, and whether it was a misroute. */
function receiptFields(e: Entry): Record<string, number | boolean> {
  if (e.expected === undefined) return {};
  if (e.cached === undefined || e.info === undefined) return { expectedCachedTokens: e.expected };
  const r = judge(e.expected, e.info.promptTokens, e.cached, e.promptReported);
  return { expectedCachedTokens: e.expected, cachedTokens: e.cached, misroute: r.misroute };
}

function finish(req: IncomingMessage, res: ServerResponse, e: Entry, deps: ObserveDeps): void {
  const end = performance.now();
  const status = res.headersSent ? res.statusCode : 499;
  const inference = ROUTES[e.path] !== undefined;
  deps.metrics.requests.inc({ route: e.route, status: statusLabel(status) });
  if (inference) {
    deps.metrics.durationSeconds.observe({ route: e.route }, (end - e.t0) / 1000);
    if (e.firstByteAt !== undefined)
      deps.metrics.ttftSeconds.observe({ route: e.route }, (e.firstByteAt - e.t0) / 1000);
  }
  // Inference and the OpenAI API at info; probes, scrapes and the fleet view at debug.
  const level = e.path.startsWith('/v1/') ? 'info' : 'debug';
  if (!deps.logger.isLevelEnabled(level)) return;
  const i = e.info;
  deps.logger[level](
    {
      requestId: e.id,
      method: req.method,
      path: e.path.slice(0, 256),
      status,
      durationMs: ms((end - e.t0) / 1000),
      ...(e.firstByteAt !== undefined ? { ttftMs: ms((e.firstByteAt - e.t0) / 1000) } : {}),
      ...(i !== undefined
        ? { model: i.requested, stream: i.stream, promptTokensEst: i.promptTokens, maxTokens: i.maxTokens }
        : {}),
      ...(e.replica !== undefined ? { replica: e.replica, branch: e.branch, attempts: e.attempts } : {}),
      ...receiptFields(e),
      ...(e.error !== undefined ? { error: e.error } : {}),
      ...(res.writableFinished ? {} : { aborted: true }),
      ...(e.trace !== undefined ? { traceId: e.trace.traceId } : {}),
      ...(e.prompt !== undefined ? { prompt: e.prompt } : {}),
    },
    'request',
  );
}
