/**
 * One conformance suite for every engine adapter: each is started against a
 * small HTTP server that answers with that engine's own output formats (the
 * fixtures beside this file; their provenance is in fixtures/README.md), and
 * every adapter must keep the same contract. The stream suite puts a real
 * agent in front of each fake engine: the client must see the engine's
 * unasked stream byte for byte, and the agent must learn cached tokens
 * wherever the engine reports them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { Agent as Dispatcher } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ENDPOINTS,
  RECEIPT_TAIL_BYTES,
  receiptComment,
  receiptOfComment,
  type EngineKind,
} from '@warmpath/shared/wire';
import { ADAPTERS, createAdapter, type EngineSnapshot } from '../src/engines/index.ts';
import { startAgent } from '../src/index.ts';
import { EngineError } from '../src/engines/types.ts';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const readStream = (name: string): Buffer => readFileSync(new URL(`./fixtures/streams/${name}`, import.meta.url));
/** OpenAI-style /v1/models as vLLM and SGLang answer it (vLLM marks adapters with `parent`). */
const openAiModels = JSON.stringify({
  object: 'list',
  data: [
    { id: 'meta-llama/Llama-3.1-8B-Instruct', object: 'model', owned_by: 'vllm', parent: null },
    { id: 'sql-lora', object: 'model', owned_by: 'vllm', parent: 'meta-llama/Llama-3.1-8B-Instruct' },
  ],
});

interface Case {
  /** Path → body, in the engine's own format. */
  routes: Record<string, string>;
  running: number;
  model: string;
  /** Routes that differ when the engine is idle (the stream suite needs room for its request). */
  idle?: Record<string, string>;
}

const CASES: Record<EngineKind, Case> = {
  vllm: {
    routes: { '/metrics': fixture('vllm-0.9.txt'), '/v1/models': openAiModels },
    running: 5,
    model: 'meta-llama/Llama-3.1-8B-Instruct',
  },
  sglang: {
    routes: { '/metrics': fixture('sglang.txt'), '/v1/models': openAiModels },
    running: 10,
    model: 'meta-llama/Llama-3.1-8B-Instruct',
  },
  tgi: {
    routes: {
      '/metrics': fixture('tgi.txt'),
      '/info': JSON.stringify({ model_id: 'bigscience/bloom', max_total_tokens: 4096 }),
    },
    running: 12,
    model: 'bigscience/bloom',
  },
  llamacpp: {
    routes: {
      '/slots': fixture('llamacpp-slots.json'),
      '/metrics': fixture('llamacpp-metrics.txt'),
      '/props': fixture('llamacpp-props.json'),
      '/v1/models': fixture('llamacpp-models.json'),
    },
    running: 2,
    model: 'tiny-llama',
    idle: { '/slots': fixture('llamacpp-slots-idle.json'), '/metrics': fixture('llamacpp-metrics-idle.txt') },
  },
};

const servers: Server[] = [];
const dispatcher = new Dispatcher();
afterAll(async () => {
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await dispatcher.close();
});

/** A fake engine: `answer(path)` gives status and body; undefined = never answer. */
async function engine(answer: (path: string) => { status: number; body: string } | undefined): Promise<string> {
  const server = createServer((req, res) => {
    const a = answer(req.url ?? '/');
    if (a === undefined) return; // hang
    res.writeHead(a.status, {
      'content-type': a.body.startsWith('{') || a.body.startsWith('[') ? 'application/json' : 'text/plain',
    });
    res.end(a.body);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function expectValidSnapshot(s: EngineSnapshot): void {
  for (const v of [s.running, s.waiting]) {
    expect(Number.isFinite(v)).toBe(true);
    expect(v).toBeGreaterThanOrEqual(0);
  }
  if (s.kvUsedFraction !== undefined) expect(s.kvUsedFraction >= 0 && s.kvUsedFraction <= 1).toBe(true);
  if (s.kvCapacityTokens !== undefined) expect(s.kvCapacityTokens).toBeGreaterThan(0);
  for (const v of [s.prefixQueries, s.prefixHits, s.preemptions, s.maxRunning])
    if (v !== undefined) expect(Number.isFinite(v) && v >= 0).toBe(true);
  expect(s.counters.every((c) => Number.isFinite(c))).toBe(true);
  expect(s.hotAdapters.every((a) => typeof a === 'string')).toBe(true);
  expect(Number.isInteger(s.adapterSlots) && s.adapterSlots >= 0).toBe(true);
  expect(typeof s.configHint).toBe('string');
}

const kinds = Object.keys(ADAPTERS) as EngineKind[];

describe.each(kinds)('engine adapter conformance: %s', (kind) => {
  const c = CASES[kind];

  it("reads the engine's own output into a valid snapshot and model list", async () => {
    const baseUrl = await engine((path) =>
      c.routes[path] !== undefined ? { status: 200, body: c.routes[path]! } : { status: 404, body: 'not found' },
    );
    const a = createAdapter(kind, { dispatcher, baseUrl });
    expect(a.kind).toBe(kind);
    expect(a.endpoints.length).toBeGreaterThan(0);
    expect(a.endpoints.every((e) => (ENDPOINTS as readonly string[]).includes(e))).toBe(true);
    const s = await a.scrape(AbortSignal.timeout(5_000));
    expectValidSnapshot(s);
    expect(s.running).toBe(c.running);
    const models = await a.models(AbortSignal.timeout(5_000));
    expect(models.map((m) => m.id)).toContain(c.model);
    expect(
      models.every((m) => typeof m.id === 'string' && (m.parent === undefined || typeof m.parent === 'string')),
    ).toBe(true);
  });

  it('rejects with a stable EngineError code when the engine answers errors', async () => {
    const baseUrl = await engine(() => ({ status: 500, body: 'internal error' }));
    const a = createAdapter(kind, { dispatcher, baseUrl });
    await expect(a.scrape(AbortSignal.timeout(5_000))).rejects.toSatisfy(
      (e: unknown) => e instanceof EngineError && e.code === 'ENGINE_HTTP',
    );
    await expect(a.models(AbortSignal.timeout(5_000))).rejects.toSatisfy(
      (e: unknown) => e instanceof EngineError && e.code === 'ENGINE_HTTP',
    );
  });

  it('answers junk with a valid snapshot or an ENGINE_FORMAT error, never NaN or a stray exception', async () => {
    const baseUrl = await engine((path) => ({
      status: 200,
      body: path === '/metrics' ? 'vllm:num_requests_running{ NaN\n# junk\nx y z' : '{"slots": "no", "data": 7',
    }));
    const a = createAdapter(kind, { dispatcher, baseUrl });
    const outcome = await a.scrape(AbortSignal.timeout(5_000)).then(
      (s) => ({ s }),
      (e: unknown) => ({ e }),
    );
    if ('s' in outcome) expectValidSnapshot(outcome.s);
    else expect(outcome.e instanceof EngineError && outcome.e.code === 'ENGINE_FORMAT').toBe(true);
  });

  it('gives up when its signal aborts, even if the engine never answers', async () => {
    const baseUrl = await engine(() => undefined);
    const a = createAdapter(kind, { dispatcher, baseUrl });
    const started = performance.now();
    await expect(a.scrape(AbortSignal.timeout(200))).rejects.toBeDefined();
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

/** Each engine's chat stream: as sent unasked, as sent with include_usage (when the agent asks that engine), and the cached tokens it reports. */
const STREAMS: Record<EngineKind, { plain: string; asked: string | undefined; cached: number | undefined }> = {
  vllm: { plain: 'vllm-0.10-chat.sse', asked: 'vllm-0.10-chat-usage.sse', cached: 1024 },
  sglang: { plain: 'sglang-chat.sse', asked: 'sglang-chat-usage.sse', cached: 1024 },
  llamacpp: { plain: 'llamacpp-chat.sse', asked: undefined, cached: 204 },
  tgi: { plain: 'tgi-chat.sse', asked: undefined, cached: undefined },
};

describe.each(kinds)('engine stream conformance through the agent: %s', (kind) => {
  const c = CASES[kind];
  const st = STREAMS[kind];

  it('the client sees the engine stream it would get unasked, byte for byte but for the receipt, and the agent learns what the engine reports', async () => {
    let askedUsage: unknown;
    const server = createServer((req, res) => {
      const path = req.url ?? '/';
      if (req.method === 'POST') {
        const parts: Buffer[] = [];
        req.on('data', (b: Buffer) => parts.push(b));
        req.on('end', () => {
          const body = JSON.parse(Buffer.concat(parts).toString()) as { stream_options?: { include_usage?: boolean } };
          askedUsage = body.stream_options?.include_usage;
          const bytes = readStream(askedUsage === true && st.asked !== undefined ? st.asked : st.plain);
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          // Cut mid-event (and mid-character) to exercise reassembly.
          res.write(bytes.subarray(0, 301));
          res.end(bytes.subarray(301));
        });
        return;
      }
      const body = c.idle?.[path] ?? c.routes[path];
      res.writeHead(body === undefined ? 404 : 200, {
        'content-type': body?.startsWith('{') ? 'application/json' : 'text/plain',
      });
      res.end(body ?? 'not found');
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const engineUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const agent = await startAgent({ engine: kind, engineUrl, gossip: false, scrapeIntervalMs: 50 });
    try {
      const res = await fetch(`${agent.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: c.model,
          messages: [{ role: 'user', content: 'The capital of France? '.repeat(60) }],
          max_tokens: 4,
          stream: true,
        }),
      });
      expect(res.status).toBe(200);
      // Byte for byte, but for the agent's receipt comment before [DONE] when the engine reported usage.
      const text = Buffer.from(await res.arrayBuffer()).toString('utf8');
      const receipt = receiptOfComment(text.slice(-RECEIPT_TAIL_BYTES));
      expect(receipt?.cachedTokens).toBe(st.cached);
      const plain = receipt === undefined ? text : text.replace(receiptComment(receipt), '');
      expect(Buffer.from(plain).equals(readStream(st.plain))).toBe(true);
      expect(askedUsage === true).toBe(st.asked !== undefined);
      expect(agent.core.ledger.feedbacks).toBe(st.cached !== undefined ? 1 : 0);
      expect((await agent.core.ledger.metrics.reportedCached.get()).values[0]?.value ?? 0).toBe(st.cached ?? 0);
    } finally {
      await agent.close();
    }
  });
});

describe('llama.cpp: a stream that fails after it started', () => {
  it('reaches the client as the engine sent it (200, then an error event, no [DONE]), and the agent learns nothing from it', async () => {
    const bytes = readStream('llamacpp-chat-error.sse');
    expect(bytes.toString()).toMatch(/data: \{"error":\{"code":500,[^\n]*\n\n$/);
    const routes = { ...CASES.llamacpp.routes, ...CASES.llamacpp.idle };
    const baseUrl = await engine((path) =>
      path === '/v1/chat/completions'
        ? { status: 200, body: bytes.toString() }
        : routes[path] !== undefined
          ? { status: 200, body: routes[path]! }
          : { status: 404, body: 'not found' },
    );
    const agent = await startAgent({ engine: 'llamacpp', engineUrl: baseUrl, gossip: false, scrapeIntervalMs: 50 });
    try {
      const res = await fetch(`${agent.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'tiny-llama',
          messages: [{ role: 'user', content: 'Where is my booking? '.repeat(60) }],
          max_tokens: 8,
          stream: true,
        }),
      });
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      expect(agent.core.ledger.feedbacks).toBe(0);
    } finally {
      await agent.close();
    }
  });
});
