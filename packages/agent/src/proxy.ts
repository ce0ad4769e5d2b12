/**
 * The data path: a streaming reverse proxy in front of one engine, the HTTP
 * end of the agent core.
 *
 * Steps per OpenAI POST: refuse at once when draining or the engine is down →
 * read the body (bounded) → describe it (model → base/adapter, prefix chain,
 * token estimates) → the core admits or refuses it (429 admission_rejected +
 * x-warmpath-reject-reason) → forward with undici (keep-alive pool) → pipe
 * a stream through as it arrives, honouring back-pressure both ways (a plain
 * 2xx answer is held to its end, up to HOLD_BYTES), tapping SSE/JSON for
 * usage → the core takes the engine's cached_tokens, and the client gets
 * them, with the prompt and completion tokens, as the receipt (headers on a
 * plain answer, a comment before a stream's [DONE]; relay.ts). A stream whose client did not ask for usage is asked for it on the client's
 * behalf, and the extra event is stripped on the way back (stream-usage.ts).
 * A routed request's priority band (x-warmpath-priority) scales admission's
 * thresholds and, with enginePriority, becomes the engine's `priority`
 * (priority.ts).
 * A client that disconnects aborts the upstream request. A failure after the
 * first byte ends an SSE stream with an error event (no retry: bytes reached
 * the client).
 * Complexity: O(body) per request for parsing and hashing; O(1) per chunk
 * relayed, plus one JSON.parse of the usage event.
 * Trade-off: the agent parses every request body (time linear in its size)
 * to know its prefix and work; that is the price of admission control and
 * exact digests (docs/SCALE.md, "Hot path").
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import {
  describeRequest,
  HEADERS,
  parseJsonBody,
  ROUTES,
  sendError,
  sseErrorEvent,
  WarmpathError,
} from '@warmpath/shared/wire';
import {
  bearerToken,
  callUpstream,
  drained,
  forwardHeaders,
  readBody,
  secretMatches,
  type UpstreamResponse,
} from '@warmpath/shared/runtime';
import type { EngineKind, RequestInfo } from '@warmpath/shared/wire';
import { receivesKv } from './disagg.ts';
import { noteFirstByte, noteRefusal, noteRequest, noteUsage, observe, type AccessLogDeps } from './access-log.ts';
import type { AgentCore, Refusal } from './core.ts';
import type { Admitted } from './ledger.ts';
import { askForUsage, UsageStrip, type UsageAsk } from './stream-usage.ts';
import { UsageTap } from './usage.ts';
import { relayBody } from './relay.ts';
import { bandOf, withPriority } from './priority.ts';

const CONNECT_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'EPIPE',
]);

export interface ProxyDeps {
  core: AgentCore;
  pool: Dispatcher;
  engineOrigin: string;
  /** Request ids and the access log (access-log.ts). */
  accessLog: AccessLogDeps;
  /** The routers' shared token (required on every route but /healthz) and the engine's API key; undefined = none. */
  token?: string | undefined;
  engineKey?: string | undefined;
}

/** One admitted request on its way through. */
interface Flight {
  req: IncomingMessage;
  res: ServerResponse;
  url: string;
  body: Buffer;
  info: RequestInfo;
  admitted: Admitted;
  t0: number;
  /** The agent asked the engine for usage the client did not want: strip it from the answer. */
  asked: UsageAsk | undefined;
}

export function createProxyHandler(deps: ProxyDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const m = deps.core.metrics;
  return (req, res) => {
    handle(deps, req, res).catch((err: unknown) => {
      m.upstreamErrors.inc({ phase: 'internal' });
      if (!res.headersSent) sendError(res, 'internal_error', (err as Error)?.message);
      else res.destroy();
    });
  };
}

async function handle(deps: ProxyDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { core } = deps;
  const t0 = performance.now();
  observe(req, res, deps.accessLog);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (path === '/healthz') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    return;
  }
  if (deps.token !== undefined && !secretMatches(bearerToken(req.headers.authorization), deps.token)) {
    req.resume();
    core.metrics.rejected.inc({ reason: 'unauthorized' });
    return sendError(res, 'unauthorized', 'This agent takes requests only from routers presenting its token.', {
      headers: { 'www-authenticate': 'Bearer' },
    });
  }
  if (path === '/v1/models') {
    if (req.method !== 'GET') return sendError(res, 'method_not_allowed');
    return passthrough(deps, req, res, url);
  }
  const kind = ROUTES[path];
  if (kind === undefined) return sendError(res, 'not_found', `No route ${req.method} ${path}.`);
  if (req.method !== 'POST') return sendError(res, 'method_not_allowed');
  const gated = core.gate();
  if (gated !== undefined) {
    req.resume();
    return refuse(res, gated);
  }
  let body: Buffer;
  let info: RequestInfo;
  let asked: UsageAsk | undefined;
  const band = bandOf(req.headers[HEADERS.priority]);
  let received = false;
  try {
    body = await readBody(req, core.config.maxBodyBytes);
    const keyHeader = req.headers[HEADERS.key];
    let parsed = parseJsonBody(body);
    received = receivesKv(parsed, core.role);
    const engine = core.config.engine as EngineKind;
    const prioritized =
      band !== undefined && core.config.enginePriority ? withPriority(engine, band, parsed, body) : undefined;
    if (prioritized !== undefined) ({ body, parsed } = prioritized);
    if (core.config.usageFeedback) asked = askForUsage(engine, kind, parsed, body);
    info = describeRequest(parsed, kind, {
      chunkChars: core.config.chunkChars,
      maxChunks: core.config.maxChunks,
      charsPerToken: core.config.charsPerToken,
      resolveModel: core.ledger.resolveModel,
      keyHeader: typeof keyHeader === 'string' ? keyHeader : undefined,
    });
    noteRequest(res, info, parsed);
  } catch (err) {
    core.metrics.rejected.inc({ reason: 'invalid' });
    if (err instanceof WarmpathError) return sendError(res, err.code, err.message, { param: err.param });
    if (!req.readableAborted) sendError(res, 'internal_error');
    return;
  }
  const admitted = core.admit(info, queueLimitOf(req.headers[HEADERS.queueLimit]), band, received);
  if ('reason' in admitted) return refuse(res, admitted.reason, admitted.queued);
  core.metrics.overhead.observe((performance.now() - t0) / 1000);
  let usage: { cachedTokens: number; promptTokens: number | undefined } | undefined;
  try {
    usage = await forward(deps, { req, res, url, body: asked?.body ?? body, info, admitted, t0, asked });
  } finally {
    core.finish(info, admitted, usage);
    core.metrics.duration.observe((performance.now() - t0) / 1000);
  }
}

/**
 * The client's headers as the engine gets them: hop-by-hop ones dropped; the
 * routers' token never passed on; the engine's own key when configured.
 */
function engineHeaders(deps: ProxyDeps, req: IncomingMessage): Record<string, string | string[]> {
  const headers = forwardHeaders(req.headers, 'request');
  if (deps.token !== undefined || deps.engineKey !== undefined) delete headers.authorization;
  if (deps.engineKey !== undefined) headers.authorization = `Bearer ${deps.engineKey}`;
  return headers;
}

/** The router's x-warmpath-queue-limit, tokens; a missing or malformed value sets no limit. */
function queueLimitOf(h: string | string[] | undefined): number | undefined {
  if (typeof h !== 'string') return undefined;
  const n = Number(h);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** `queued`: on a stale refusal, the prefill queued here now, for the router's view (x-warmpath-queued). */
function refuse(res: ServerResponse, reason: Refusal, queued?: number): void {
  noteRefusal(res, reason);
  if (reason === 'draining')
    return sendError(res, 'draining', undefined, { headers: { 'retry-after': 1, [HEADERS.rejectReason]: reason } });
  if (reason === 'engine_down')
    return sendError(res, 'engine_unavailable', undefined, {
      headers: { 'retry-after': 1, [HEADERS.rejectReason]: reason },
    });
  // Larger than this replica's whole KV cache: it can never run here, so not retryable (a router still tries a larger replica).
  if (reason === 'too_large')
    return sendError(
      res,
      'context_length_exceeded',
      "The prompt plus max_tokens is larger than this replica's KV cache.",
      { headers: { [HEADERS.rejectReason]: reason } },
    );
  // Retry-After: the refusal is momentary.
  const headers = {
    'retry-after': 1,
    [HEADERS.rejectReason]: reason,
    ...(queued !== undefined ? { [HEADERS.queued]: Math.round(queued) } : {}),
  };
  sendError(res, 'admission_rejected', `This replica cannot take the request now (${reason}); try another replica.`, {
    headers,
  });
}

/** Forwards one admitted request and streams the answer; resolves with the engine's usage when it reported cached tokens. */
async function forward(
  deps: ProxyDeps,
  f: Flight,
): Promise<{ cachedTokens: number; promptTokens: number | undefined } | undefined> {
  const { core } = deps;
  const m = core.metrics;
  const { req, res } = f;
  const ac = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) {
      m.clientAborts.inc();
      ac.abort();
    }
  };
  res.on('close', onClose);
  let upstream: UpstreamResponse;
  try {
    upstream = await callUpstream(
      deps.pool,
      {
        origin: deps.engineOrigin,
        path: f.url,
        method: 'POST',
        headers: { ...engineHeaders(deps, req), 'content-length': String(f.body.length) },
        body: f.body,
        headersTimeout: core.config.headersTimeoutMs,
        bodyTimeout: core.config.bodyTimeoutMs,
      },
      ac.signal,
    );
  } catch (err) {
    res.off('close', onClose);
    if (!ac.signal.aborted) engineFailed(deps, res, err);
    return undefined;
  }
  const contentType = String(upstream.headers['content-type'] ?? '');
  const tap = upstream.statusCode < 300 ? new UsageTap(contentType) : undefined;
  const sse = contentType.includes('text/event-stream');
  const strip = f.asked !== undefined && tap !== undefined && sse ? new UsageStrip(f.asked.dropNullUsage) : undefined;
  const headers = forwardHeaders(upstream.headers, 'response');
  if (strip !== undefined || (sse && tap !== undefined)) delete headers['content-length'];
  // A plain answer is held (up to HOLD_BYTES) so its headers can carry the engine's cached tokens: the engine sends it whole anyway.
  const held: Buffer[] | undefined = tap !== undefined && !sse ? [] : undefined;
  if (held === undefined) res.writeHead(upstream.statusCode, headers);
  // A stream's client sees its status at once.
  if (sse) res.flushHeaders();
  try {
    const firstByte = (): void => {
      core.firstByte(f.admitted);
      noteFirstByte(res);
      m.firstByte.observe((performance.now() - f.t0) / 1000);
    };
    await relayBody(res, upstream.body, { tap, strip, held, headers, status: upstream.statusCode, firstByte });
  } catch {
    if (ac.signal.aborted || res.destroyed) {
      upstream.body.destroy();
      return undefined;
    }
    m.upstreamErrors.inc({ phase: 'stream' });
    if (sse && res.headersSent) res.end(sseErrorEvent('stream_interrupted'));
    else res.destroy();
    return undefined;
  } finally {
    res.off('close', onClose);
  }
  const usage = tap?.end();
  noteUsage(res, usage);
  return usage?.cachedTokens !== undefined
    ? { cachedTokens: usage.cachedTokens, promptTokens: usage.promptTokens }
    : undefined;
}

/** The engine request failed before any response: answer, and scrape at once if the engine looks gone. */
function engineFailed(deps: ProxyDeps, res: ServerResponse, err: unknown): void {
  const code = (err as { code?: string }).code ?? '';
  deps.core.metrics.upstreamErrors.inc({ phase: 'connect' });
  if (CONNECT_ERRORS.has(code)) {
    deps.core.kick();
    return sendError(res, 'engine_unavailable', `The inference engine is unreachable (${code}).`, {
      headers: { 'retry-after': 1 },
    });
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return sendError(res, 'upstream_timeout');
  sendError(res, 'upstream_error', `Engine request failed: ${(err as Error).message}`);
}

async function passthrough(deps: ProxyDeps, req: IncomingMessage, res: ServerResponse, url: string): Promise<void> {
  try {
    const up = await callUpstream(deps.pool, {
      origin: deps.engineOrigin,
      path: url,
      method: 'GET',
      headers: engineHeaders(deps, req),
    });
    res.writeHead(up.statusCode, forwardHeaders(up.headers, 'response'));
    for await (const chunk of up.body) if (!res.write(chunk)) await drained(res);
    res.end();
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (CONNECT_ERRORS.has(code)) {
      deps.core.kick();
      return sendError(res, 'engine_unavailable');
    }
    sendError(res, 'upstream_error', (err as Error).message);
  }
}
