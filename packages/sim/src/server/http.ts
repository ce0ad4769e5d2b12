/** The simulator's HTTP body and response helpers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { WarmpathError } from '@warmpath/shared/wire';

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      req.resume();
      reject(new WarmpathError('body_too_large', `Request body exceeds ${limit} bytes.`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) over = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (over) reject(new WarmpathError('body_too_large', `Request body exceeds ${limit} bytes.`));
      else resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new WarmpathError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
  }
}
