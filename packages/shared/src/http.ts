/** Small HTTP helpers shared by the agent, the router and the simulator. */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody, WarmpathError } from './errors.ts';

/** Default request body limit: 16 MiB (long-context chats with images as URLs fit). */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * Reads a request body up to `limit` bytes. Over the limit: rejects with
 * body_too_large as soon as the limit is crossed (checked against
 * content-length first), without buffering the rest.
 */
export function readBody(req: IncomingMessage, limit = DEFAULT_MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(
      new WarmpathError('body_too_large', `Request body of ${declared} bytes exceeds the limit of ${limit} bytes.`),
    );
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new WarmpathError('body_too_large', `Request body exceeds the limit of ${limit} bytes.`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('client aborted')));
  });
}

/** JSON response with content-length. */
export function sendJson(
  res: import('node:http').ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string | number> = {},
): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/**
 * Resolves when `res` can take more data ('drain') or is gone ('close'):
 * the backpressure wait of a streaming proxy after `res.write()` returned false.
 */
export function drained(res: import('node:http').ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1, plus the legacy `keep-alive` and
 * `proxy-connection`): they describe one connection, not the message, so a
 * proxy never forwards them, in either direction. The router and the agent
 * both filter through `forwardHeaders`.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Request headers a proxy sets itself when it forwards: its own Host, and the framing of the body it sends. */
const REQUEST_OWN_HEADERS: ReadonlySet<string> = new Set(['host', 'content-length', 'expect']);

/**
 * The headers of a request (or response) a proxy passes on: all but the
 * hop-by-hop ones (and, for a request, the ones it sets itself); undefined
 * values dropped. Returns a new object.
 */
export function forwardHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  of: 'request' | 'response',
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k in headers) {
    const v = headers[k];
    if (v === undefined || HOP_BY_HOP_HEADERS.has(k) || (of === 'request' && REQUEST_OWN_HEADERS.has(k))) continue;
    out[k] = v;
  }
  return out;
}

/**
 * node:http server timeouts of the router's and the agent's proxy ports, ms.
 * keepAliveTimeout 72 s: longer than clients' and load balancers' own idle
 * timeout (commonly 60 s), so the client closes an idle connection, never
 * the server while a request is on its way. headersTimeout 60 s: a client has
 * a minute to send its request headers; requestTimeout 120 s: and two to send
 * the whole request, body included (a 16 MiB body at 140 kB/s). Both bound
 * only the request: node stops the clock once it has been received, so a
 * generation may stream its answer for as long as it takes. A slow-loris
 * client holds a connection two minutes at most (checked every 30 s), and
 * the connection cap bounds how many it holds.
 */
export const SERVER_TIMEOUTS = Object.freeze({
  keepAliveTimeout: 72_000,
  requestTimeout: 120_000,
  headersTimeout: 60_000,
});

/** Client connections a proxy port holds at most (node's server.maxConnections); more are refused at once. Each costs a file descriptor, and a proxy needs one per upstream connection too. */
export const DEFAULT_MAX_CONNECTIONS = 8_192;

/** Idle time of a keep-alive connection in the proxies' upstream undici pools, ms: below the agent's 72 s server keep-alive, so the pool closes first. */
export const UPSTREAM_KEEP_ALIVE_MS = 60_000;

/**
 * A server's 'clientError' listener: a request node:http could not parse
 * (bad request line or headers, headers too large, a header timeout) gets an
 * OpenAI-shaped answer and the connection is closed, rather than a reset.
 * 431 and 408 keep node's own status codes; the body's code is
 * invalid_request either way.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable || (socket as Duplex & { _httpMessage?: unknown })._httpMessage != null) {
    socket.destroy();
    return;
  }
  const [status, reason] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout']
        : [400, 'Bad Request'];
  const body = JSON.stringify(errorBody('invalid_request', `Malformed HTTP request (${err.code ?? 'parse error'}).`));
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
