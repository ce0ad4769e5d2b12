/**
 * The data path: a streaming reverse proxy in front of one engine.
 *
 * Steps per OpenAI POST: refuse at once when draining or the engine is down →
 * read the body (bounded) → describe it (model → base/adapter, prefix chain,
 * token estimates) → predict its cached prefix from the cache model →
 * admission control (429 admission_rejected + x-warmpath-reject-reason) →
 * record its chain in the cache model and count it in flight → forward with
 * undici (keep-alive pool) → pipe the response through as it arrives,
 * honouring back-pressure both ways, tapping SSE/JSON for usage → feed the
 * engine's cached_tokens back into the cache model.
 * A client that disconnects aborts the upstream request. A failure after the
 * first byte ends an SSE stream with an error event (no retry: bytes reached
 * the client).
 * Complexity: O(body) per request for parsing and hashing; O(1) per chunk
 * relayed, plus one JSON.parse of the usage event.
 * Trade-off: the agent parses every request body (≈ 4 ms per MB) to know its
 * prefix and work; that is the price of admission control and exact digests.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { describeRequest, HEADERS, parseJsonBody, ROUTES, sendError, sseErrorEvent, WarmpathError } from '@warmpath/shared/wire';
import { drained, readBody } from '@warmpath/shared/runtime';
import type { RequestInfo } from '@warmpath/shared/wire';
import type { Admitted, AgentCore } from './core.ts';
import { UsageTap } from './usage.ts';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'content-length',
  'expect',
]);

function forwardHeaders(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  return out;
}

function responseHeaders(h: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  return out;
}

const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENOTFOUND', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'EPIPE']);

export interface ProxyDeps {
  core: AgentCore;
  pool: Dispatcher;
  engineOrigin: string;
  /** Ask the monitor to scrape now (the proxy saw the engine fail). */
  kick: () => void;
  /** Something routers should hear about at once (load jump). */
  poke: () => void;
}

export function createProxyHandler(deps: ProxyDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { core } = deps;
  const m = core.metrics;
  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      m.upstreamErrors.inc({ phase: 'internal' });
      if (!res.headersSent) sendError(res, 'internal_error', (err as Error)?.message);
      else res.destroy();
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const t0 = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (path === '/v1/models') {
      if (req.method !== 'GET') return sendError(res, 'method_not_allowed');
      return passthrough(req, res, url);
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    const kind = ROUTES[path];
    if (kind === undefined) return sendError(res, 'not_found', `No route ${req.method} ${path}.`);
    if (req.method !== 'POST') return sendError(res, 'method_not_allowed');
    if (core.draining || core.closed) {
      m.rejected.inc({ reason: 'draining' });
      req.resume();
      return sendError(res, 'draining', undefined, { headers: { 'retry-after': 1, [HEADERS.rejectReason]: 'draining' } });
    }
    if (!core.engineUp) {
      m.rejected.inc({ reason: 'engine_down' });
      req.resume();
      return sendError(res, 'engine_unavailable', undefined, { headers: { 'retry-after': 1, [HEADERS.rejectReason]: 'engine_down' } });
    }
    let body: Buffer;
    let info: RequestInfo;
    try {
      body = await readBody(req, core.config.maxBodyBytes);
      const keyHeader = req.headers[HEADERS.key];
      info = describeRequest(parseJsonBody(body), kind, {
        chunkChars: core.config.chunkChars,
        maxChunks: core.config.maxChunks,
        charsPerToken: core.config.charsPerToken,
        resolveModel: core.resolveModel,
        keyHeader: typeof keyHeader === 'string' ? keyHeader : undefined,
      });
    } catch (err) {
      m.rejected.inc({ reason: 'invalid' });
      if (err instanceof WarmpathError) return sendError(res, err.code, err.message, { param: err.param });
      res.destroy();
      return;
    }
    const admitted = core.admit(info);
    if ('reason' in admitted) {
      const reason = admitted.reason;
      m.rejected.inc({ reason });
      return sendError(res, 'admission_rejected', `This replica cannot take the request now (${reason}); try another replica.`, {
        headers: { [HEADERS.rejectReason]: reason },
      });
    }
    m.admitted.inc();
    m.overhead.observe((performance.now() - t0) / 1000);
    deps.poke();
    try {
      await forward(req, res, url, body, info, admitted, t0);
    } finally {
      core.end(admitted.flight);
      m.duration.observe((performance.now() - t0) / 1000);
    }
  }

  async function forward(
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    body: Buffer,
    info: RequestInfo,
    admitted: Admitted,
    t0: number,
  ): Promise<void> {
    const ac = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) {
        m.clientAborts.inc();
        ac.abort();
      }
    };
    res.on('close', onClose);
    let upstream: Dispatcher.ResponseData;
    try {
      upstream = await deps.pool.request({
        origin: deps.engineOrigin,
        path: url,
        method: 'POST',
        headers: { ...forwardHeaders(req.headers), 'content-length': String(body.length) },
        body,
        signal: ac.signal,
        headersTimeout: core.config.headersTimeoutMs,
        bodyTimeout: core.config.bodyTimeoutMs,
      });
    } catch (err) {
      res.off('close', onClose);
      if (ac.signal.aborted) return;
      const code = (err as { code?: string }).code ?? '';
      m.upstreamErrors.inc({ phase: 'connect' });
      if (CONNECT_ERRORS.has(code)) {
        deps.kick();
        return sendError(res, 'engine_unavailable', `The inference engine is unreachable (${code}).`, { headers: { 'retry-after': 1 } });
      }
      if (code === 'UND_ERR_HEADERS_TIMEOUT') return sendError(res, 'upstream_timeout');
      return sendError(res, 'upstream_error', `Engine request failed: ${(err as Error).message}`);
    }
    const contentType = String(upstream.headers['content-type'] ?? '');
    const tap = upstream.statusCode < 300 ? new UsageTap(contentType) : undefined;
    res.writeHead(upstream.statusCode, responseHeaders(upstream.headers));
    res.flushHeaders();
    let first = true;
    try {
      for await (const chunk of upstream.body as AsyncIterable<Buffer>) {
        if (first) {
          first = false;
          core.firstByte(admitted.flight);
          m.firstByte.observe((performance.now() - t0) / 1000);
        }
        tap?.write(chunk);
        if (res.destroyed) break;
        if (!res.write(chunk)) await drained(res);
      }
      if (!res.destroyed) res.end();
    } catch {
      if (ac.signal.aborted || res.destroyed) {
        upstream.body.destroy();
        return;
      }
      m.upstreamErrors.inc({ phase: 'stream' });
      if (contentType.includes('text/event-stream')) res.end(sseErrorEvent('stream_interrupted'));
      else res.destroy();
      return;
    } finally {
      res.off('close', onClose);
    }
    const usage = tap?.end();
    if (usage?.cachedTokens !== undefined) core.feedback(info, admitted, usage.cachedTokens, usage.promptTokens);
  }

  async function passthrough(req: IncomingMessage, res: ServerResponse, url: string): Promise<void> {
    try {
      const up = await deps.pool.request({ origin: deps.engineOrigin, path: url, method: 'GET', headers: forwardHeaders(req.headers) });
      res.writeHead(up.statusCode, responseHeaders(up.headers));
      for await (const chunk of up.body as AsyncIterable<Buffer>) if (!res.write(chunk)) await drained(res);
      res.end();
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (CONNECT_ERRORS.has(code)) {
        deps.kick();
        return sendError(res, 'engine_unavailable');
      }
      sendError(res, 'upstream_error', (err as Error).message);
    }
  }
}
