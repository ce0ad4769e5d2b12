import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { lastArrivalMs, runLoad, type PlannedRequest } from '../src/loadgen.ts';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe('load generator', () => {
  it('is open-loop: a slow server sees every request at once, none held back in the client', async () => {
    const n = 700;
    const held: ServerResponse[] = [];
    let peak = 0;
    const answer = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n');
    };
    const release = () => held.splice(0).forEach(answer);
    const server = createServer((req, res) => {
      req.resume();
      held.push(res);
      peak = Math.max(peak, held.length);
      if (held.length === n) release();
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    // If the client capped its connections, the server would never see n at once: answer after 5 s anyway.
    const fallback = setTimeout(release, 5000);
    close = () => {
      clearTimeout(fallback);
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    };
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const plan: PlannedRequest[] = Array.from({ length: n }, () => ({
      at: 0,
      body: { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 },
    }));
    const results = await runLoad(plan, [url], { timeoutMs: 20_000 });
    expect(peak).toBe(n);
    expect(results.filter((r) => r.ok)).toHaveLength(n);
  });
});

describe('plan span', () => {
  it('finds the last arrival of a plan too large for a spread (fleet-scale DES runs)', () => {
    const plan: PlannedRequest[] = Array.from({ length: 400_000 }, (_, i) => ({ at: (i * 7919) % 400_000, body: {} }));
    expect(lastArrivalMs(plan)).toBe(399_999);
    expect(lastArrivalMs([])).toBe(0);
  });
});
