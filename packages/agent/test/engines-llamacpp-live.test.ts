/**
 * The llama.cpp adapter and an agent against a real llama-server. Opt-in:
 * runs only when WARMPATH_LLAMA_SERVER (the binary) and WARMPATH_LLAMA_MODEL
 * (a GGUF model) are set, and is skipped otherwise — no server binary ships
 * with the repository. fixtures/README.md says how to build one, make a tiny
 * model, and re-record the fixtures the other suites read.
 */
import { Agent as Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter, startAgent } from '../src/index.ts';
import type { Agent } from '../src/index.ts';
import {
  busy,
  LLAMA_ALIAS,
  LLAMA_CTX,
  LLAMA_SLOTS,
  post,
  SAMPLING,
  startLlamaServer,
  TURN1,
  turn2,
} from './fixtures/record-llamacpp.ts';
import type { LlamaServer, Message } from './fixtures/record-llamacpp.ts';
import { metricValue, subscribe, SWARM_KEY_FILE, until } from './helpers.ts';
import type { Subscriber } from './helpers.ts';

const BIN = process.env.WARMPATH_LLAMA_SERVER ?? '';
const MODEL = process.env.WARMPATH_LLAMA_MODEL ?? '';
const LIVE = BIN !== '' && MODEL !== '';
const TITLE = LIVE
  ? 'llama.cpp server, live'
  : 'llama.cpp server, live (skipped: set WARMPATH_LLAMA_SERVER and WARMPATH_LLAMA_MODEL; see fixtures/README.md)';

/** A streamed chat as the client sees it: the text and the engine's `timings.cache_n`. */
async function streamChat(url: string, messages: Message[]): Promise<{ text: string; cacheN: number | undefined }> {
  const res = await post(url, '/v1/chat/completions', { model: LLAMA_ALIAS, messages, ...SAMPLING, stream: true });
  expect(res.status).toBe(200);
  let text = '';
  let cacheN: number | undefined;
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as {
      choices: Array<{ delta?: { content?: string | null } }>;
      timings?: { cache_n?: number };
    };
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.timings?.cache_n !== undefined) cacheN = chunk.timings.cache_n;
  }
  return { text, cacheN };
}

describe.skipIf(!LIVE)(TITLE, () => {
  let server: LlamaServer;
  const dispatcher = new Dispatcher();
  beforeAll(async () => {
    server = await startLlamaServer(BIN, MODEL);
  }, 90_000);
  afterAll(async () => {
    await server?.close();
    await dispatcher.close();
  });

  it('the adapter reads an idle server, then one with every slot busy and a request deferred', async () => {
    const a = createAdapter('llamacpp', { dispatcher, baseUrl: server.url });
    const idle = await a.scrape(AbortSignal.timeout(5_000));
    expect(idle).toMatchObject({
      running: 0,
      waiting: 0,
      maxRunning: LLAMA_SLOTS,
      kvCapacityTokens: LLAMA_CTX,
      kvUsedFraction: 0,
      configHint: `slots:${LLAMA_SLOTS},ctx:${LLAMA_CTX}`,
    });
    expect(idle.prefixQueries).toBeUndefined();
    expect(idle.counters).toHaveLength(3);
    expect((await a.models(AbortSignal.timeout(5_000))).map((m) => m.id)).toEqual([LLAMA_ALIAS]);
    const stop = await busy(server.url);
    try {
      // The deferred request reaches the queue just after the other two start.
      await until('one request deferred', async () => (await a.scrape(AbortSignal.timeout(5_000))).waiting === 1);
      const full = await a.scrape(AbortSignal.timeout(5_000));
      expect(full).toMatchObject({ running: LLAMA_SLOTS, waiting: 1, kvUsedFraction: 1 });
      expect(full.counters[2]!).toBeGreaterThan(idle.counters[2]!);
    } finally {
      await stop();
    }
  }, 60_000);

  describe('an agent in front of it', () => {
    let agent: Agent;
    let sub: Subscriber;
    beforeAll(async () => {
      agent = await startAgent({
        engine: 'llamacpp',
        engineUrl: server.url,
        fleet: 'llama-live',
        swarmKey: SWARM_KEY_FILE,
        publishIntervalMs: 100,
        scrapeIntervalMs: 100,
      });
      sub = await subscribe('llama-live', agent.peerAddrs);
    });
    afterAll(async () => {
      await sub?.close();
      await agent?.close();
    });

    it('learns the cached tokens of a session’s second turn from the unasked stream, and publishes them', async () => {
      const ready = await sub.waitFor(
        'ready with the model',
        (s) => s.status === 'ready' && s.models.includes(LLAMA_ALIAS),
      );
      expect(ready.capacity.kvTokens).toBe(LLAMA_CTX);
      expect(ready.capacity.maxRunning).toBe(LLAMA_SLOTS);
      const reported = (): Promise<number> =>
        metricValue(`${agent.adminUrl}/metrics`, 'warmpath_agent_reported_cached_tokens_total');
      const one = await streamChat(agent.url, TURN1);
      expect(agent.core.ledger.feedbacks).toBe(1);
      const before = await reported();
      const two = await streamChat(agent.url, turn2(one.text));
      expect(agent.core.ledger.feedbacks).toBe(2);
      // Turn 2 starts with turn 1's prompt: the engine reused it, and the agent counted what the engine said.
      expect(two.cacheN).toBeGreaterThan(0);
      expect((await reported()) - before).toBe(two.cacheN);
      expect(agent.core.ledger.cache.size).toBeGreaterThan(0);
      const seq = agent.publisher.seq;
      await until('the subscriber mirrors the digest', () => sub.mirrorSeq > seq);
      expect(sub.mirror.size).toBe(agent.core.ledger.cache.size);
    }, 60_000);
  });
});
