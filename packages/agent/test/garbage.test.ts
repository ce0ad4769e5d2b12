import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startAgent } from '../src/index.ts';
import { UsageTap } from '../src/usage.ts';
import { until } from './helpers.ts';

type Reply = { status: number; contentType: string; body: Uint8Array; cut: boolean };

/** A fake engine whose every answer is whatever `reply` currently says; `scraped` counts the agent's GETs since the last `set`. */
async function fakeEngine(): Promise<{ url: string; set(r: Reply): void; scraped(): number; server: Server }> {
  let reply: Reply = { status: 200, contentType: 'text/plain', body: new Uint8Array(), cut: false };
  let gets = 0;
  const server = createServer((req, res) => {
    req.resume();
    if (req.method === 'GET') gets++;
    const r = reply;
    res.writeHead(r.status, { 'content-type': r.contentType });
    if (r.cut) {
      res.write(r.body.subarray(0, r.body.length >> 1));
      setTimeout(() => res.destroy(), 2);
    } else res.end(r.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const set = (r: Reply): void => {
    reply = r;
    gets = 0;
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, set, scraped: () => gets, server };
}

const garbage = fc.record({
  status: fc.constantFrom(200, 200, 200, 404, 500, 503),
  contentType: fc.constantFrom('text/plain', 'application/json', 'text/event-stream', ''),
  body: fc.oneof(
    fc.uint8Array({ maxLength: 2000 }),
    fc.string({ maxLength: 500 }).map((s) => new TextEncoder().encode(s)),
    fc.jsonValue().map((v) => new TextEncoder().encode(JSON.stringify(v))),
    fc
      .array(fc.jsonValue(), { maxLength: 5 })
      .map((vs) => new TextEncoder().encode(vs.map((v) => `data: ${JSON.stringify({ usage: v })}\n\n`).join(''))),
    fc
      .constantFrom(
        'vllm:num_requests_running NaN\nvllm:cache_config_info{num_gpu_blocks="-5",block_size="x"} 1\nvllm:kv_cache_usage_perc 7e308\n',
        'data: {"usage":{"prompt_tokens":-1,"prompt_tokens_details":{"cached_tokens":1e309}}}\n\n',
        '{"data":[{"id":"m","parent":"m"},{"id":""}]}',
      )
      .map((s) => new TextEncoder().encode(s)),
  ),
  cut: fc.boolean(),
});

describe('malformed engine output', () => {
  it('a fake engine returning garbage never crashes the agent', async () => {
    const engine = await fakeEngine();
    const agent = await startAgent({
      engineUrl: engine.url,
      gossip: false,
      scrapeIntervalMs: 20,
      modelsIntervalMs: 100,
      scrapeTimeoutMs: 300,
    });
    try {
      const samples = fc.sample(garbage, { numRuns: 120, seed: 42 });
      for (const [i, g] of samples.entries()) {
        engine.set(g);
        await until(`a scrape of garbage sample ${i}`, () => engine.scraped() > 0, 5_000, 2);
        const res = await fetch(`${agent.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'm',
            messages: [{ role: 'user', content: `q${i} `.repeat(200) }],
            stream: i % 2 === 0,
          }),
        }).catch((e: unknown) => e as Error);
        if (!(res instanceof Error)) await res.arrayBuffer().catch(() => undefined);
      }
      expect((await fetch(`${agent.adminUrl}/healthz`)).status).toBe(200);
      expect((await fetch(`${agent.adminUrl}/warmpath/v1/state`)).status).toBe(200);
      // Sane again → the agent recovers by itself.
      engine.set({
        status: 200,
        contentType: 'text/plain',
        body: new TextEncoder().encode(
          'vllm:num_requests_running 1\nvllm:cache_config_info{block_size="16",num_gpu_blocks="100"} 1\n',
        ),
        cut: false,
      });
      await until('engine up', () => agent.state().status === 'ready' && agent.state().capacity.kvTokens === 1600);
      const s = agent.state();
      expect(Number.isFinite(s.load.kvUsedTokens)).toBe(true);
      expect(s.load.inflight).toBe(0);
    } finally {
      await agent.close();
      engine.server.closeAllConnections();
      engine.server.close();
    }
  });

  it('the usage tap never throws on arbitrary streams', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('text/event-stream', 'application/json'),
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 10 }),
        (ct, chunks) => {
          const tap = new UsageTap(ct);
          for (const c of chunks) tap.write(Buffer.from(c));
          tap.end();
        },
      ),
    );
    const tap = new UsageTap('text/event-stream');
    const ev =
      'data: {"choices":[],"usage":{"prompt_tokens":500,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":448}}}\n\ndata: [DONE]\n\n';
    for (let i = 0; i < ev.length; i += 7) tap.write(Buffer.from(ev.slice(i, i + 7)));
    expect(tap.end()).toEqual({ promptTokens: 500, cachedTokens: 448, completionTokens: 3 });
  });
});
