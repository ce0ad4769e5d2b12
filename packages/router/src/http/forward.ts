/**
 * The router core's `send` over HTTP: one attempt of one request to one
 * replica's agent, streamed back through undici.
 *
 * Steps: POST the raw body to the replica's origin over its keep-alive pool
 * (connect and first-byte deadlines in the pool, the total deadline in the
 * exchange's signal) → no response (connect failure, reset, timeout), the
 * agent's 429/503, or another 5xx → report it (the core may try another
 * replica; nothing reached the client) → otherwise commit: write the status
 * and headers (x-warmpath-replica/route/router/expected-cached-tokens
 * added), then pipe the body
 * unbuffered with back-pressure, under the between-chunks deadline. A
 * streaming request silent for heartbeatMs gets SSE comments, committed
 * early if need be (downstream.ts). A failure mid-stream ends an SSE stream
 * with an error event, a plain body by closing; a client disconnect aborts
 * the upstream request. A tenant's request (it has a band) carries its band
 * to the agent and its x-ratelimit-* headers to the client. The engine's
 * usage (the receipt: the agent's x-warmpath-*-tokens headers on a plain
 * answer, or a stream's receipt comment near its end, found in the last
 * RECEIPT_TAIL_BYTES) goes back to the core with the result, for the
 * receipts and tenant accounting alike.
 * Complexity: O(1) per relayed chunk.
 */
import {
  errorBody,
  HEADERS,
  isErrorCode,
  RECEIPT_TAIL_BYTES,
  receiptOfComment,
  receiptOfHeaders,
  sendError,
  sseErrorEvent,
  type EngineUsage,
  type ErrorCode,
} from '@warmpath/shared/wire';
import { callUpstream, drained, forwardHeaders, type UpstreamResponse } from '@warmpath/shared/runtime';
import type { Dispatch, Send, SendResult } from '../core/types.ts';
import { formatRoute } from '../placement/route.ts';
import { Downstream } from './downstream.ts';
import { forwardDecode, forwardPair } from './pd.ts';
import { noteFirstByte, upstreamHeaders } from './observe.ts';
import { classify, type Upstreams } from './upstream.ts';
import type { Exchange } from './exchange.ts';

/** An error body from a replica, passed on as an SSE event after an early commit: at most this many bytes are read. */
const ERROR_BODY_MAX = 64 * 1024;

/** `authorization`: the header presenting the agents' shared token, when one is configured. */
export function createSend(
  id: string,
  upstreams: Upstreams,
  heartbeatMs: number,
  authorization?: string,
): Send<Exchange> {
  const leg = (d: Dispatch<Exchange>): Promise<SendResult> => forward(id, upstreams, heartbeatMs, d, authorization);
  const pair = { id, upstreams, authorization };
  return (d, report) => {
    const sent =
      d.prefill !== undefined ? forwardPair(pair, d, leg) : d.transfer !== undefined ? forwardDecode(d, leg) : leg(d);
    sent.then(report, (err: unknown) => {
      // A bug, not an upstream failure: end the exchange rather than leave the client hanging.
      const res = d.ctx.res;
      if (!res.headersSent) sendError(res, 'internal_error');
      else res.destroy(err as Error);
      report({ kind: 'done', outcome: 'error' });
    });
  };
}

async function forward(
  id: string,
  upstreams: Upstreams,
  heartbeatMs: number,
  d: Dispatch<Exchange>,
  authorization: string | undefined,
): Promise<SendResult> {
  const { req, res, raw, path, signal } = d.ctx;
  const url = d.replica.state.url;
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  const origin = slash < 0 ? url : url.slice(0, slash);
  const base = slash < 0 ? '' : url.slice(slash).replace(/\/+$/, '');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(raw.byteLength),
    accept:
      typeof req.headers.accept === 'string'
        ? req.headers.accept
        : d.info.stream
          ? 'text/event-stream'
          : 'application/json',
    [HEADERS.router]: id,
    [HEADERS.attempt]: String(d.attempt + 1),
    ...upstreamHeaders(res),
  };
  if (d.info.routingKey !== undefined) headers[HEADERS.key] = d.info.routingKey;
  if (d.queueLimit !== undefined) headers[HEADERS.queueLimit] = String(d.queueLimit);
  if (authorization !== undefined) headers.authorization = authorization;
  if (d.band !== undefined) headers[HEADERS.priority] = d.band;
  const out = new Downstream(
    d.ctx.res,
    {
      ...d.headers,
      [HEADERS.replica]: d.replica.id,
      [HEADERS.route]: formatRoute(d.route),
      [HEADERS.router]: id,
      [HEADERS.expectedCached]: String(d.expectedCached),
    },
    d.info.stream ? heartbeatMs : 0,
  );
  try {
    let up: UpstreamResponse;
    try {
      up = await callUpstream(
        upstreams.pool(origin),
        { path: base + path, method: 'POST', headers, body: raw },
        signal,
      );
    } catch (err) {
      return noResponse(d.ctx, out, classify(err));
    }
    const status = up.statusCode;
    if (out.early) return await afterEarlyCommit(d.ctx, out, up);
    const reason = up.headers[HEADERS.rejectReason];
    // The agent's refusals: 429/503 (admission), and 400 too_large (this replica is too small; a larger one may fit).
    if (status === 429 || status === 503 || (status === 400 && reason === 'too_large')) {
      up.body.dump().catch(() => {});
      const queued = Number(up.headers[HEADERS.queued]);
      return {
        kind: 'rejected',
        status,
        ...(typeof reason === 'string' ? { reason } : {}),
        ...(Number.isFinite(queued) && queued >= 0 ? { queued } : {}),
      };
    }
    if (status >= 500) {
      up.body.dump().catch(() => {});
      return { kind: 'failed', status };
    }
    const ct = up.headers['content-type'];
    const sse = typeof ct === 'string' && ct.startsWith('text/event-stream');
    out.commit(status, forwardHeaders(up.headers, 'response'), sse);
    return await relay(d.ctx, out, up, sse);
  } finally {
    out.stop();
  }
}

/** The request got no response: before a commit the core decides; after an early commit the stream ends with an error event. */
function noResponse(ex: Exchange, out: Downstream, kind: ReturnType<typeof classify>): SendResult {
  const timedOut = kind === 'timeout' || ex.deadline.aborted;
  if (!timedOut && (kind === 'aborted' || ex.signal.aborted)) {
    if (out.early) out.end();
    return { kind: 'done', outcome: 'aborted' };
  }
  if (!out.early) return timedOut ? { kind: 'timeout' } : { kind: kind === 'connect' ? 'connect' : 'reset' };
  out.end(sseErrorEvent(timedOut ? 'upstream_timeout' : 'upstream_error'));
  return { kind: 'done', outcome: 'error', error: timedOut && ex.deadline.aborted ? 'timeout' : 'interrupted' };
}

/** Committed early (SSE, 200) and the replica answered: relay a stream, or turn any other answer into an error event. */
async function afterEarlyCommit(ex: Exchange, out: Downstream, up: UpstreamResponse): Promise<SendResult> {
  const ct = up.headers['content-type'];
  if (up.statusCode < 300 && typeof ct === 'string' && ct.startsWith('text/event-stream'))
    return relay(ex, out, up, true);
  let text = '';
  try {
    text = await up.body.text(ERROR_BODY_MAX);
  } catch {
    /* the error event below says enough */
  }
  out.end(errorEvent(up.statusCode, text));
  return { kind: 'done', outcome: 'error', status: up.statusCode };
}

/** The replica's OpenAI error body as an SSE event, or a generic one. */
function errorEvent(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    const code = body.error?.code;
    if (isErrorCode(code))
      return `data: ${JSON.stringify(errorBody(code, typeof body.error?.message === 'string' ? body.error.message : undefined))}\n\n`;
  } catch {
    /* not JSON: the generic event */
  }
  const code: ErrorCode = status === 429 ? 'fleet_saturated' : 'upstream_error';
  return sseErrorEvent(code, `The replica answered ${status}.`);
}

/** An engine's error event inside a 200 stream (llama.cpp, SGLang, vLLM: `data: {"error"…`). */
const STREAM_ERROR = Buffer.from('data: {"error"');

/** Does `chunk`, or the end of the previous one (`tail`) joined to it, hold STREAM_ERROR? No copy unless a chunk boundary could split it. */
function holdsStreamError(tail: Buffer, chunk: Buffer): boolean {
  if (chunk.includes(STREAM_ERROR)) return true;
  return tail.length > 0 && Buffer.concat([tail, chunk.subarray(0, STREAM_ERROR.length - 1)]).includes(STREAM_ERROR);
}

/**
 * Pipe the committed body to the client. A stream that carries an engine's
 * error event is passed through as sent and counted as interrupted: the
 * client saw a failed answer even though the status was 200.
 */
async function relay(ex: Exchange, out: Downstream, up: UpstreamResponse, sse: boolean): Promise<SendResult> {
  const res = ex.res;
  let failed = false;
  let usage: EngineUsage | undefined;
  try {
    let first = true;
    // The end of the previous chunk, so a marker split across two chunks is still found.
    let tail: Buffer = Buffer.alloc(0);
    // The stream's last bytes, where the agent's receipt comment is.
    let end: Buffer = Buffer.alloc(0);
    for await (const chunk of up.body) {
      if (first) {
        first = false;
        noteFirstByte(res);
      }
      if (sse && !failed) {
        failed = holdsStreamError(tail, chunk);
        const keep = STREAM_ERROR.length - 1;
        tail = chunk.length >= keep ? chunk.subarray(-keep) : Buffer.concat([tail, chunk]).subarray(-keep);
      }
      if (sse)
        end =
          chunk.length >= RECEIPT_TAIL_BYTES
            ? chunk.subarray(-RECEIPT_TAIL_BYTES)
            : Buffer.concat([end, chunk]).subarray(-RECEIPT_TAIL_BYTES);
      if (!out.write(chunk)) await drained(res);
      if (res.destroyed) break;
    }
    out.end();
    if (failed) return { kind: 'done', outcome: 'error', error: 'interrupted' };
    usage = sse ? receiptOfComment(end.toString('latin1')) : receiptOfHeaders(up.headers);
  } catch (err) {
    const deadline = ex.deadline.aborted;
    if (!deadline && (res.destroyed || ex.signal.aborted))
      return { kind: 'done', outcome: 'aborted', error: 'aborted' };
    if (sse)
      out.end(
        sseErrorEvent(
          deadline ? 'upstream_timeout' : 'stream_interrupted',
          deadline ? 'The request passed its total deadline.' : undefined,
        ),
      );
    else res.destroy(err as Error);
    return { kind: 'done', outcome: 'error', error: deadline ? 'timeout' : 'interrupted' };
  }
  const outcome = res.destroyed && !res.writableFinished ? 'aborted' : 'ok';
  return { kind: 'done', outcome, ...(usage !== undefined ? { usage } : {}) };
}
