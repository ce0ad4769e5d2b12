/**
 * The agent's per-request observability, beside its proxy rather than in
 * it: the request id and one access-log line per request.
 *
 * Steps: on arrival `observe` takes the request id (the router's, a direct
 * client's, or a new one), puts it on the request headers the proxy passes
 * to the engine and on the response, and starts the clock → the proxy notes
 * the described request, a refusal, the first byte and the engine's usage →
 * when the response closes, one line. The client's `traceparent` and
 * `tracestate` reach the engine with the other headers; the line carries the
 * trace id.
 * Complexity: O(1) per request; one WeakMap entry per open request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@warmpath/shared/runtime';
import { HEADERS, TRACE_HEADERS, requestIdOf, traceContextOf, type RequestInfo } from '@warmpath/shared/wire';
import type { Usage } from './usage.ts';

export interface AccessLogDeps {
  readonly logger: Logger;
  /** Put the prompt in the access-log line (config logPrompts). */
  readonly logPrompts: boolean;
}

interface Entry {
  readonly id: string;
  readonly t0: number;
  readonly path: string;
  readonly traceId: string | undefined;
  readonly logPrompts: boolean;
  info?: RequestInfo;
  prompt?: unknown;
  refused?: string;
  firstByteAt?: number;
  usage?: Usage;
}

const entries = new WeakMap<ServerResponse, Entry>();
const ms = (milliseconds: number): number => Math.round(milliseconds * 10) / 10;

/** Starts observing one request: its id (on the engine request and the response), its clock, its line when it closes. */
export function observe(req: IncomingMessage, res: ServerResponse, deps: AccessLogDeps): void {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const id = requestIdOf(req.headers[TRACE_HEADERS.requestId]);
  // The proxy forwards the request's own headers: the engine (vLLM takes it as its request id) sees this one.
  req.headers[TRACE_HEADERS.requestId] = id;
  res.setHeader(TRACE_HEADERS.requestId, id);
  const entry: Entry = {
    id,
    t0: performance.now(),
    path: q < 0 ? url : url.slice(0, q),
    traceId: traceContextOf(req.headers)?.traceId,
    logPrompts: deps.logPrompts,
  };
  entries.set(res, entry);
  res.once('close', () => finish(req, res, entry, deps.logger));
}

/** The described request and, when prompts are logged, its prompt. */
export function noteRequest(res: ServerResponse, info: RequestInfo, body: Record<string, unknown>): void {
  const e = entries.get(res);
  if (e === undefined) return;
  e.info = info;
  if (e.logPrompts) e.prompt = body.messages ?? body.prompt ?? body.input;
}

/** Why the agent refused the request (admission, draining, engine down). */
export function noteRefusal(res: ServerResponse, reason: string): void {
  const e = entries.get(res);
  if (e !== undefined) e.refused = reason;
}

/** The engine's first response byte. */
export function noteFirstByte(res: ServerResponse): void {
  const e = entries.get(res);
  if (e !== undefined) e.firstByteAt ??= performance.now();
}

/** The usage the engine reported in its response. */
export function noteUsage(res: ServerResponse, usage: Usage | undefined): void {
  const e = entries.get(res);
  if (e !== undefined && usage !== undefined) e.usage = usage;
}

function finish(req: IncomingMessage, res: ServerResponse, e: Entry, logger: Logger): void {
  // Inference and the OpenAI API at info; the health probe at debug.
  const level = e.path.startsWith('/v1/') ? 'info' : 'debug';
  if (!logger.isLevelEnabled(level)) return;
  const end = performance.now();
  const attempt = req.headers[HEADERS.attempt];
  const { info, usage } = e;
  logger[level](
    {
      requestId: e.id,
      method: req.method,
      path: e.path.slice(0, 256),
      status: res.headersSent ? res.statusCode : 499,
      durationMs: ms(end - e.t0),
      ...(e.firstByteAt !== undefined ? { ttftMs: ms(e.firstByteAt - e.t0) } : {}),
      ...(info !== undefined
        ? { model: info.requested, stream: info.stream, promptTokensEst: info.promptTokens, maxTokens: info.maxTokens }
        : {}),
      ...(usage !== undefined
        ? {
            promptTokens: usage.promptTokens,
            cachedTokens: usage.cachedTokens,
            completionTokens: usage.completionTokens,
          }
        : {}),
      ...(e.refused !== undefined ? { refused: e.refused } : {}),
      ...(typeof attempt === 'string' ? { attempt: Number(attempt) } : {}),
      ...(res.writableFinished ? {} : { aborted: true }),
      ...(e.traceId !== undefined ? { traceId: e.traceId } : {}),
      ...(e.prompt !== undefined ? { prompt: e.prompt } : {}),
    },
    'request',
  );
}
