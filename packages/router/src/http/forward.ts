/**
 * The router core's `send` over HTTP: one attempt of one request to one
 * replica's agent, streamed back through undici.
 *
 * Steps: POST the raw body to the replica's origin over its keep-alive pool →
 * no response (connect failure, reset, timeout) or the agent's 429/503 →
 * report it (the core may try another replica; nothing reached the client) →
 * otherwise commit: write the status and headers (x-warmpath-replica/route/
 * router added), then pipe the body unbuffered with back-pressure. A failure
 * mid-stream ends an SSE stream with an error event, a plain body by
 * closing; a client disconnect aborts the upstream request.
 * Complexity: O(1) per relayed chunk.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HEADERS, sendError, sseErrorEvent } from '@warmpath/shared/wire';
import { drained, forwardHeaders } from '@warmpath/shared/runtime';
import type { Dispatch, Send, SendResult } from '../core/types.ts';
import { noteFirstByte, upstreamHeaders } from './observe.ts';
import { classify, type Upstreams } from './upstream.ts';

/** One client exchange: what the transport needs on every attempt. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The request body exactly as received. */
  readonly raw: Buffer;
  /** /v1/… path, appended to the replica's base URL. */
  readonly path: string;
  /** Aborted when the client leaves. */
  readonly signal: AbortSignal;
}

/** `authorization`: the header presenting the agents' shared token, when one is configured. */
export function createSend(id: string, upstreams: Upstreams, authorization?: string): Send<Exchange> {
  return (d, report) => {
    forward(id, upstreams, d, authorization).then(report, (err: unknown) => {
      // A bug, not an upstream failure: end the exchange rather than leave the client hanging.
      const res = d.ctx.res;
      if (!res.headersSent) sendError(res, 'internal_error');
      else res.destroy(err as Error);
      report({ kind: 'done', outcome: 'error' });
    });
  };
}

async function forward(id: string, upstreams: Upstreams, d: Dispatch<Exchange>, authorization: string | undefined): Promise<SendResult> {
  const { req, res, raw, path, signal } = d.ctx;
  const url = d.replica.state.url;
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  const origin = slash < 0 ? url : url.slice(0, slash);
  const base = slash < 0 ? '' : url.slice(slash).replace(/\/+$/, '');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(raw.byteLength),
    accept: typeof req.headers.accept === 'string' ? req.headers.accept : d.info.stream ? 'text/event-stream' : 'application/json',
    [HEADERS.router]: id,
    [HEADERS.attempt]: String(d.attempt + 1),
    ...upstreamHeaders(res),
  };
  if (d.info.routingKey !== undefined) headers[HEADERS.key] = d.info.routingKey;
  if (authorization !== undefined) headers.authorization = authorization;
  let up;
  try {
    up = await upstreams.pool(origin).request({ path: base + path, method: 'POST', headers, body: raw, signal });
  } catch (err) {
    const kind = classify(err);
    if (kind === 'aborted' || signal.aborted) return { kind: 'done', outcome: 'aborted' };
    if (kind === 'timeout') return { kind: 'timeout' };
    return { kind: kind === 'connect' ? 'connect' : 'reset' };
  }
  const status = up.statusCode;
  const reason = up.headers[HEADERS.rejectReason];
  // The agent's refusals: 429/503 (admission), and 400 too_large (this replica is too small; a larger one may fit).
  if (status === 429 || status === 503 || (status === 400 && reason === 'too_large')) {
    up.body.dump().catch(() => {});
    return { kind: 'rejected', status, ...(typeof reason === 'string' ? { reason } : {}) };
  }
  const out = forwardHeaders(up.headers, 'response');
  out[HEADERS.replica] = d.replica.id;
  out[HEADERS.route] = d.branch;
  out[HEADERS.router] = id;
  const ct = up.headers['content-type'];
  const sse = typeof ct === 'string' && ct.startsWith('text/event-stream');
  res.writeHead(status, out);
  if (sse) res.flushHeaders();
  try {
    for await (const chunk of up.body) {
      noteFirstByte(res);
      if (!res.write(chunk)) await drained(res);
      if (res.destroyed) break;
    }
    res.end();
  } catch (err) {
    if (signal.aborted || res.destroyed) return { kind: 'done', outcome: 'aborted', error: 'aborted' };
    if (sse) res.end(sseErrorEvent('stream_interrupted'));
    else res.destroy(err as Error);
    return { kind: 'done', outcome: 'error', error: 'interrupted' };
  }
  return { kind: 'done', outcome: res.destroyed && !res.writableFinished ? 'aborted' : 'ok' };
}
