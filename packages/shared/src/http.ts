/** Small HTTP helpers shared by the agent, the router and the simulator. */
import type { IncomingMessage } from 'node:http';
import { WarmpathError } from './errors.ts';

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
    return Promise.reject(new WarmpathError('body_too_large', `Request body of ${declared} bytes exceeds the limit of ${limit} bytes.`));
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
export function sendJson(res: import('node:http').ServerResponse, status: number, value: unknown, headers: Record<string, string | number> = {}): void {
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
