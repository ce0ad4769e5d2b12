import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pool } from 'undici';
import { flood, type Flood } from '@warmpath/testkit';
import { BODY_BUFFER_MAX, callUpstream } from '../src/upstream-call.ts';

// A real HTTP server whose routes misbehave on purpose.
let server: Server;
let pool: Pool;
/** Responses held open by /hold, to be finished or cut by the test. */
const held: ServerResponse[] = [];
/** The last /big stream: how far it got before the test stopped reading. */
let big: Flood | undefined;
let closedEarly = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      switch (req.url) {
        case '/echo':
          res.writeHead(201, { 'content-type': 'text/plain', 'x-method': req.method });
          res.end(Buffer.concat(chunks));
          return;
        case '/hints':
          res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('final');
          return;
        case '/chunks':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: 1\n\n');
          setTimeout(() => res.end('data: 2\n\n'), 20);
          return;
        case '/cut':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: 1\n\n');
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        case '/hold':
          res.on('close', () => {
            if (!res.writableFinished) closedEarly++;
          });
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: 1\n\n');
          held.push(res);
          return;
        case '/big':
          // testkit's flood: 128 MiB as fast as the client takes it.
          big = flood(res);
          return;
        default:
          res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 4 });
});

afterAll(async () => {
  for (const res of held) res.destroy();
  await pool.destroy();
  await new Promise((resolve) => server.close(resolve));
});

describe('callUpstream', () => {
  it('resolves with the status and headers and reads the body in order', async () => {
    const up = await callUpstream(pool, {
      path: '/echo',
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(up.statusCode).toBe(201);
    expect(up.headers['x-method']).toBe('POST');
    expect(await up.body.text()).toBe('hello');
    const sse = await callUpstream(pool, { path: '/chunks', method: 'GET' });
    const seen: string[] = [];
    for await (const chunk of sse.body) seen.push(chunk.toString());
    expect(seen.join('')).toBe('data: 1\n\ndata: 2\n\n');
  });

  it('skips an informational answer (103 Early Hints) and resolves with the final one', async () => {
    const up = await callUpstream(pool, { path: '/hints', method: 'GET' });
    expect(up.statusCode).toBe(200);
    expect(await up.body.text()).toBe('final');
  });

  it('rejects when no response comes (connection refused), with undici’s error code', async () => {
    const dead = new Pool('http://127.0.0.1:1');
    await expect(callUpstream(dead, { path: '/', method: 'GET' })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await dead.destroy();
  });

  it('throws mid-body when the connection is cut, after the chunks that came before', async () => {
    const up = await callUpstream(pool, { path: '/cut', method: 'GET' });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of up.body) seen.push(chunk.toString());
      })(),
    ).rejects.toBeDefined();
    expect(seen.join('')).toBe('data: 1\n\n');
  });

  it('aborts with the signal: before the head it rejects with the reason, mid-body the reader throws it and the server sees the close', async () => {
    const before = new AbortController();
    before.abort();
    await expect(callUpstream(pool, { path: '/echo', method: 'POST', body: 'x' }, before.signal)).rejects.toMatchObject(
      { name: 'AbortError' },
    );

    const ac = new AbortController();
    const up = await callUpstream(pool, { path: '/hold', method: 'GET' }, ac.signal);
    const reading = (async () => {
      for await (const _ of up.body) ac.abort();
    })();
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
    await expect.poll(() => closedEarly).toBeGreaterThanOrEqual(1);
  });

  it('a reader that breaks out of the loop aborts the request', async () => {
    const start = closedEarly;
    const up = await callUpstream(pool, { path: '/hold', method: 'GET' });
    for await (const _ of up.body) break;
    await expect.poll(() => closedEarly).toBe(start + 1);
  });

  it('pauses the connection while the reader lags: the server cannot run far ahead of what was read', async () => {
    const up = await callUpstream(pool, { path: '/big', method: 'GET' });
    const body = up.body[Symbol.asyncIterator]();
    let read = 0;
    while (read < 1024 * 1024) read += ((await body.next()).value as Buffer).length;
    // The reader stops, the connection open: the server's write() is refused and its 'drain' never comes. A
    // connection left flowing would keep draining it into the buffer.
    await big!.heldBack();
    // What the server wrote beyond what was read sits in this buffer (BODY_BUFFER_MAX) and the sockets' (a few MiB on loopback), not the rest of 128 MiB.
    expect(big!.written() - read).toBeLessThan(16 * 1024 * 1024 + BODY_BUFFER_MAX);
    await body.return!();
  });

  it('dump() reads a body to its end and leaves the connection usable', async () => {
    const up = await callUpstream(pool, { path: '/chunks', method: 'GET' });
    await up.body.dump();
    const again = await callUpstream(pool, { path: '/echo', method: 'POST', body: 'after' });
    expect(await again.body.text()).toBe('after');
  });
});
