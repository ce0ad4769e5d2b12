import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startSimServer } from '@warmpath/sim';
import { FLOOD_BYTES, flood, type Flood } from '@warmpath/testkit';
import { startAgent } from '../src/index.ts';
import { chatBody, metricValue, post, until } from './helpers.ts';

describe('proxy', () => {
  it('streams, counts in flight, and aborts upstream when the client disconnects', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 0.5 });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false, scrapeIntervalMs: 50 });
    try {
      const ac = new AbortController();
      const res = await fetch(`${agent.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          chatBody(sim.modelName, 's'.repeat(1000), 'long answer', { max_tokens: 2000, stream: true }),
        ),
        signal: ac.signal,
      });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const reader = res.body!.getReader();
      await reader.read();
      expect(agent.state().load.inflight).toBe(1);
      expect(agent.state().load.inflightTokens).toBeGreaterThan(2000);
      ac.abort();
      await until('agent idle', () => agent.state().load.inflight === 0);
      await until(
        'engine idle',
        async () => (await metricValue(`${sim.url}/metrics`, 'vllm:num_requests_running')) === 0,
        5000,
        50,
      );
      expect(await metricValue(`${agent.adminUrl}/metrics`, 'warmpath_agent_client_aborts_total')).toBe(1);
    } finally {
      await agent.close();
      await sim.close();
    }
  });

  it("a slow client holds the engine's stream back: the agent pauses it instead of buffering it", async () => {
    // An engine that answers as vLLM and streams 128 MiB (testkit's flood) as fast as its connection takes it.
    let stream: Flood | undefined;
    let cut = 0;
    const engine = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return void res.end(
          'vllm:num_requests_running 0\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0\nvllm:cache_config_info{engine="0",num_gpu_blocks="100000",block_size="16"} 1\n',
        );
      }
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
      }
      req.resume();
      res.on('close', () => {
        if (!res.writableFinished) cut++;
      });
      stream = flood(res);
    });
    await new Promise<void>((r) => engine.listen(0, '127.0.0.1', r));
    const agent = await startAgent({
      engineUrl: `http://127.0.0.1:${(engine.address() as AddressInfo).port}`,
      gossip: false,
      scrapeIntervalMs: 50,
    });
    try {
      await until('agent ready', () => agent.state().status === 'ready');
      const res = await request(`${agent.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chatBody('m', 'system', 'q', { stream: true })),
      });
      expect(res.statusCode).toBe(200);
      const body = res.body[Symbol.asyncIterator]();
      let read = 0;
      while (read < 1024 * 1024) read += ((await body.next()).value as Buffer).length;
      // The client reads no more, its connection open: the agent stops reading the engine, whose write() is
      // refused and whose 'drain' never comes. An unpaused proxy would keep draining it (and buffer the 128 MiB).
      await stream!.heldBack();
      expect(stream!.written()).toBeLessThan(FLOOD_BYTES / 4);
      await body.return!();
      await until('the engine stream cut', () => cut > 0);
    } finally {
      await agent.close();
      engine.closeAllConnections();
      await new Promise((r) => engine.close(r));
    }
  });

  it("refuses a request when more prefill is queued than the router's x-warmpath-queue-limit (429, reason stale)", async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 0.01 });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false, scrapeIntervalMs: 50 });
    const ac = new AbortController();
    try {
      // A first request still in its prefill (the engine runs 100× slower than wall time).
      const first = fetch(`${agent.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chatBody(sim.modelName, 's'.repeat(2000), 'q', { max_tokens: 5, stream: true })),
        signal: ac.signal,
      }).catch(() => undefined);
      await until('first request queued for prefill', () => agent.state().load.prefillTokens > 0);
      const stale = await post(
        `${agent.url}/v1/chat/completions`,
        chatBody(sim.modelName, 'another', 'q', { max_tokens: 5 }),
        { 'x-warmpath-queue-limit': '10' },
      );
      expect(stale.status).toBe(429);
      expect(stale.headers.get('x-warmpath-reject-reason')).toBe('stale');
      // …and says how much is queued, for the router's view.
      expect(Number(stale.headers.get('x-warmpath-queued'))).toBeGreaterThan(10);
      expect(JSON.parse(stale.text).error.code).toBe('admission_rejected');
      expect(await metricValue(`${agent.adminUrl}/metrics`, 'warmpath_agent_rejected_total{reason="stale"}')).toBe(1);
      ac.abort();
      await first;
    } finally {
      ac.abort();
      await agent.close();
      await sim.close();
    }
  });

  it('answers OpenAI-shaped errors for bad input and unknown routes; passes /v1/models through', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny' });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false });
    try {
      const bad = await fetch(`${agent.url}/v1/chat/completions`, { method: 'POST', body: '{nope' });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
      expect((await post(`${agent.url}/v1/chat/completions`, { messages: [] })).status).toBe(400);
      expect((await fetch(`${agent.url}/v1/nope`)).status).toBe(404);
      const models = (await (await fetch(`${agent.url}/v1/models`)).json()) as { data: Array<{ id: string }> };
      expect(models.data[0]!.id).toBe(sim.modelName);
      const ok = await post(`${agent.url}/v1/completions`, {
        model: sim.modelName,
        prompt: 'p'.repeat(1100),
        max_tokens: 3,
      });
      expect(ok.status).toBe(200);
      expect(JSON.parse(ok.text).usage.prompt_tokens).toBeGreaterThan(0);
      const digest = await fetch(`${agent.adminUrl}/warmpath/v1/digest`);
      expect(digest.headers.get('content-type')).toBe('application/vnd.warmpath.digest+msgpack');
      expect(Number(digest.headers.get('x-warmpath-seq'))).toBeGreaterThanOrEqual(1);
      expect((await fetch(`${agent.adminUrl}/readyz`)).status).toBe(200);
    } finally {
      await agent.close();
      await sim.close();
    }
  });
});

describe('engine cache cleared behind the agent', () => {
  it('cached_tokens feedback drops what the engine lost', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 4 });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false });
    try {
      const q = { model: sim.modelName, prompt: 'Q'.repeat(1100), max_tokens: 2 };
      const p = { model: sim.modelName, prompt: 'P'.repeat(1100), max_tokens: 2 };
      expect((await post(`${agent.url}/v1/completions`, q)).status).toBe(200);
      expect((await post(`${agent.url}/v1/completions`, p)).status).toBe(200);
      const sizeBefore = agent.core.ledger.cache.size;
      expect(sizeBefore).toBe(8);
      await fetch(`${sim.url}/sim/v1/reset_prefix_cache`, { method: 'POST' });
      const again = await post(`${agent.url}/v1/completions`, p);
      expect(JSON.parse(again.text).usage.prompt_tokens_details.cached_tokens).toBe(0);
      // Q (older than P) is gone from the model; P was just recomputed and is cached again.
      expect(agent.core.ledger.cache.size).toBe(4);
      expect(agent.core.ledger.cache.stats.corrections).toBe(1);
    } finally {
      await agent.close();
      await sim.close();
    }
  });
});
