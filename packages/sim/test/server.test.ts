import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheus } from '@warmpath/shared/runtime';
import { startSimServer } from '../src/index.ts';
import type { SimServer } from '../src/index.ts';
import { metrics, postJson, readSse, state, waitFor } from './helpers.ts';

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  messages: [{ role: 'user', content }],
  ...extra,
});
const words = (n: number, seed: string): string => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');

describe('sim server (H100 profile, real time)', () => {
  let sim: SimServer;
  beforeAll(async () => {
    sim = await startSimServer({ port: 0 });
  });
  afterAll(() => sim.close());

  it('a repeated prefix raises cached_tokens and lowers TTFT', async () => {
    const prompt = 'shared system prompt. '.repeat(380); // ≈ 2,090 tokens
    const timeToFirstChunk = async (): Promise<{ ms: number; cached: number }> => {
      const t0 = performance.now();
      const res = await postJson(
        `${sim.url}/v1/chat/completions`,
        chat(prompt, { max_tokens: 2, stream: true, stream_options: { include_usage: true } }),
      );
      let first = 0;
      const { events, done } = await readSse(res, (_d, i) => {
        if (i === 1) first = performance.now() - t0; // [0] is the role chunk, [1] the first token
      });
      expect(done).toBe(true);
      const usage = (JSON.parse(events.at(-1)!) as { usage: { prompt_tokens_details: { cached_tokens: number } } })
        .usage;
      return { ms: first, cached: usage.prompt_tokens_details.cached_tokens };
    };
    const cold = await timeToFirstChunk();
    const warm = await timeToFirstChunk();
    expect(cold.cached).toBe(0);
    expect(warm.cached).toBeGreaterThan(2000);
    expect(warm.ms).toBeLessThan(cold.ms);
    expect(cold.ms).toBeGreaterThan(60); // ≈ 90 ms of simulated prefill
  });

  it('/metrics parses as Prometheus text and matches the model state', async () => {
    await Promise.all(
      [1, 2, 3].map((i) =>
        postJson(`${sim.url}/v1/completions`, { prompt: words(100, `m${i}`), max_tokens: 3 }).then((r) => r.json()),
      ),
    );
    const text = await (await fetch(`${sim.url}/metrics`)).text();
    const { series, types, skipped } = parsePrometheus(text);
    expect(skipped).toBe(0); // every line is valid exposition text
    const samples = [...series].flatMap(([name, list]) => list.map((s) => ({ name, ...s })));
    expect(types.get('vllm:prefix_cache_queries')).toBe('counter');
    expect(types.get('vllm:time_to_first_token_seconds')).toBe('histogram');
    expect(types.get('vllm:kv_cache_usage_perc')).toBe('gauge');
    for (const s of samples)
      if (s.name.startsWith('vllm:') && s.name !== 'vllm:lora_requests_info')
        expect(s.labels).toMatchObject({ engine: '0', model_name: sim.modelName });
    const m = await metrics(sim.url);
    const snap = sim.model.snapshot();
    expect(m.get('vllm:prefix_cache_queries_total')).toBe(snap.prefixQueriesTokens);
    expect(m.get('vllm:prefix_cache_hits_total')).toBe(snap.prefixHitsTokens);
    expect(m.get('vllm:prompt_tokens_total')).toBe(snap.promptTokens);
    expect(m.get('vllm:generation_tokens_total')).toBe(snap.generationTokens);
    expect(m.get('vllm:num_preemptions_total')).toBe(snap.preemptions);
    expect(m.get('vllm:num_requests_running')).toBe(0);
    expect(m.get('vllm:num_requests_waiting')).toBe(0);
    expect(m.get('vllm:time_to_first_token_seconds_count')).toBe(snap.finishedRequests);
    expect(m.get('vllm:e2e_request_latency_seconds_count')).toBe(snap.finishedRequests);
    expect(m.get('vllm:time_to_first_token_seconds_bucket{le=+Inf}')).toBe(snap.finishedRequests);
    expect(m.get('vllm:inter_token_latency_seconds_count')).toBe(snap.generationTokens - snap.finishedRequests);
    // Buckets are cumulative.
    const buckets = samples.filter((s) => s.name === 'vllm:time_to_first_token_seconds_bucket').map((s) => s.value);
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b));
    const info = samples.find((s) => s.name === 'vllm:cache_config_info')!;
    expect(info.labels).toMatchObject({ block_size: '16', num_gpu_blocks: '27000', enable_prefix_caching: 'True' });
    expect(info.value).toBe(1);
    expect(samples.some((s) => s.name === 'vllm:lora_requests_info')).toBe(false); // LoRA off
  });

  it('answers the admin and info routes', async () => {
    const health = await fetch(`${sim.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('');
    expect(((await (await fetch(`${sim.url}/version`)).json()) as { version: string }).version).toMatch(/^\d+\.\d+/);
    const models = (await (await fetch(`${sim.url}/v1/models`)).json()) as {
      data: { id: string; max_model_len: number; root: string }[];
    };
    expect(models.data[0]).toMatchObject({
      id: 'meta-llama/Llama-3.1-8B-Instruct',
      root: 'meta-llama/Llama-3.1-8B-Instruct',
      max_model_len: 131072,
    });
    const prompt = words(300, 'probe');
    await (await postJson(`${sim.url}/v1/chat/completions`, chat(prompt, { max_tokens: 1 }))).json();
    const probe = (await (await postJson(`${sim.url}/sim/v1/probe`, chat(prompt))).json()) as Record<string, unknown>;
    expect(probe).toMatchObject({ running: 0, waiting: 0, kvTotalBlocks: 27000, adapterHot: false });
    expect(probe.cachedTokens).toBeGreaterThan(0);
    expect(probe.promptTokens).toBeGreaterThan(probe.cachedTokens as number);
    const reset = await fetch(`${sim.url}/sim/v1/reset_prefix_cache`, { method: 'POST' });
    expect(reset.status).toBe(200);
    const after = (await (await postJson(`${sim.url}/sim/v1/probe`, chat(prompt))).json()) as Record<string, unknown>;
    expect(after.cachedTokens).toBe(0);
  });

  it('answers bad requests with OpenAI-shaped errors', async () => {
    const err = async (res: Response) => ({
      status: res.status,
      body: (await res.json()) as { error: { code: string; param: string | null; type: string } },
    });
    const unknown = await err(
      await postJson(`${sim.url}/v1/chat/completions`, { model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'model_not_found', param: 'model' });
    const malformed = await err(await fetch(`${sim.url}/v1/completions`, { method: 'POST', body: '{"prompt":' }));
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_json');
    const invalid = await err(await postJson(`${sim.url}/v1/chat/completions`, chat('x', { max_tokens: -1 })));
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({
      code: 'invalid_request',
      param: 'max_tokens',
      type: 'invalid_request_error',
    });
    const noMessages = await err(await postJson(`${sim.url}/v1/chat/completions`, { messages: [] }));
    expect(noMessages.body.error.param).toBe('messages');
    const tooLong = await err(await postJson(`${sim.url}/v1/completions`, { prompt: 'x', max_tokens: 200_000 }));
    expect(tooLong.status).toBe(400);
    // vLLM answers an unknown content part type 400 with param "type" (it used to be 501), and takes the known ones.
    const parts = (content: unknown[]) =>
      postJson(`${sim.url}/v1/chat/completions`, { messages: [{ role: 'user', content }] });
    const filePart = await err(
      await parts([
        { type: 'text', text: 'x' },
        { type: 'file', file: { file_id: 'f' } },
      ]),
    );
    expect(filePart.status).toBe(400);
    expect(filePart.body.error).toMatchObject({
      code: 'invalid_request',
      param: 'type',
      type: 'invalid_request_error',
    });
    expect((filePart.body.error as unknown as { message: string }).message).toMatch(
      /^Unsupported chat content part type: 'file'\. Supported types: .*image_url.*text/,
    );
    expect((await parts([{ text: 'no type' }])).status).toBe(400);
    const known = await parts([
      { type: 'text', text: 'x' },
      { type: 'image_url', image_url: { url: 'data:,' } },
      'bare',
    ]);
    expect(known.status).toBe(200);
    await known.json();
    const wrongMethod = await fetch(`${sim.url}/v1/chat/completions`);
    expect(wrongMethod.status).toBe(405);
    expect((await fetch(`${sim.url}/nope`)).status).toBe(404);
  });
});

describe('sim server (tiny profile)', () => {
  it('queues and preempts under KV exhaustion instead of failing', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 20 });
    try {
      let sawQueue = false;
      const poll = setInterval(() => {
        const s = sim.model.snapshot();
        if (s.waiting > 0 && s.running > 0) sawQueue = true;
      }, 2);
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          postJson(`${sim.url}/v1/completions`, { prompt: words(200, `p${i}-`).slice(0, 1024), max_tokens: 300 }).then(
            async (r) => ({ status: r.status, body: (await r.json()) as { usage: { completion_tokens: number } } }),
          ),
        ),
      );
      clearInterval(poll);
      for (const r of results) {
        expect(r.status).toBe(200);
        expect(r.body.usage.completion_tokens).toBe(300);
      }
      const m = await metrics(sim.url);
      expect(m.get('vllm:num_preemptions_total')).toBeGreaterThan(0);
      expect(sawQueue).toBe(true);
      expect(m.get('vllm:kv_cache_usage_perc')).toBe(0);
    } finally {
      await sim.close();
    }
  });

  it('a client disconnect aborts the request and frees its blocks', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny' });
    try {
      const ac = new AbortController();
      const res = await fetch(`${sim.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chat(words(200, 'd'), { max_tokens: 3000, stream: true })),
        signal: ac.signal,
      });
      let got = 0;
      await readSse(res, () => {
        if (++got === 4) ac.abort();
      });
      await waitFor(async () => {
        const s = (await state(sim.url)).engine;
        return s.running === 0 && s.kvUsedBlocks === 0;
      }, 'blocks to be freed');
      expect(sim.model.snapshot().abortedRequests).toBe(1);
    } finally {
      await sim.close();
    }
  });

  it('defers a request whose adapter has no slot, then loads it', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', adapters: ['a', 'b'], maxLoras: 1 });
    try {
      const resA = postJson(`${sim.url}/v1/completions`, { model: 'a', prompt: 'adapter a', max_tokens: 200 });
      await waitFor(() => sim.model.snapshot().running === 1, 'a to run');
      const resB = postJson(`${sim.url}/v1/completions`, { model: 'b', prompt: 'adapter b', max_tokens: 5 });
      await waitFor(() => sim.model.snapshot().waitingDeferred === 1, 'b to be deferred');
      const m = await metrics(sim.url);
      expect(
        m.get('vllm:lora_requests_info{max_lora=1,running_lora_adapters=a,waiting_lora_adapters=b}'),
      ).toBeGreaterThan(1e9);
      expect(m.get('vllm:num_requests_waiting_by_reason{reason=deferred}')).toBe(1);
      const probe = (await (await postJson(`${sim.url}/sim/v1/probe`, { model: 'b', prompt: 'adapter b' })).json()) as {
        adapterHot: boolean;
        adapterSlotsFree: number;
      };
      expect(probe).toMatchObject({ adapterHot: false, adapterSlotsFree: 0 });
      const [a, b] = await Promise.all([resA, resB]);
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(((await b.json()) as { model: string }).model).toBe('b');
      await a.arrayBuffer();
      const snap = sim.model.snapshot();
      expect(snap.lora.gpu).toEqual(['b']);
      expect(snap.lora.loads).toBe(2);
    } finally {
      await sim.close();
    }
  });

  it('loads and unloads adapters at runtime', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', enableLora: true });
    try {
      const load = await postJson(`${sim.url}/v1/load_lora_adapter`, { lora_name: 'sql', lora_path: '/loras/sql' });
      expect(load.status).toBe(200);
      expect(await load.text()).toMatch(/sql/);
      const models = (await (await fetch(`${sim.url}/v1/models`)).json()) as {
        data: { id: string; parent: string | null; root: string }[];
      };
      expect(models.data.find((d) => d.id === 'sql')).toMatchObject({ parent: sim.modelName, root: '/loras/sql' });
      const ok = await postJson(`${sim.url}/v1/completions`, { model: 'sql', prompt: 'select', max_tokens: 2 });
      expect(ok.status).toBe(200);
      await ok.arrayBuffer();
      expect((await postJson(`${sim.url}/v1/load_lora_adapter`, { lora_name: 'sql', lora_path: '/x' })).status).toBe(
        400,
      );
      expect((await postJson(`${sim.url}/v1/load_lora_adapter`, { lora_path: '/x' })).status).toBe(400);
      const unload = await postJson(`${sim.url}/v1/unload_lora_adapter`, { lora_name: 'sql' });
      expect(unload.status).toBe(200);
      await unload.arrayBuffer();
      const again = await postJson(`${sim.url}/v1/unload_lora_adapter`, { lora_name: 'sql' });
      expect(again.status).toBe(404);
      expect(((await again.json()) as { error: { code: string } }).error.code).toBe('adapter_not_found');
      const gone = await postJson(`${sim.url}/v1/completions`, { model: 'sql', prompt: 'select' });
      expect(gone.status).toBe(404);
      await gone.arrayBuffer();
    } finally {
      await sim.close();
    }
  });

  it('enforces the body limit', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', bodyLimitBytes: 2048 });
    try {
      const res = await postJson(`${sim.url}/v1/completions`, { prompt: 'x'.repeat(5000) });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('body_too_large');
    } finally {
      await sim.close();
    }
  });
});

describe('fault injection', () => {
  let sim: SimServer;
  beforeAll(async () => {
    sim = await startSimServer({ port: 0, profile: 'tiny' });
  });
  afterAll(() => sim.close());

  it('die-after-tokens cuts the stream after N tokens', async () => {
    const set = await postJson(`${sim.url}/sim/v1/fault`, { dieAfterTokens: 3 });
    expect(set.status).toBe(200);
    expect(((await set.json()) as { dieAfterTokens: number }).dieAfterTokens).toBe(3);
    const res = await postJson(`${sim.url}/v1/chat/completions`, chat('hello', { max_tokens: 10, stream: true }));
    expect(res.status).toBe(200);
    const { events, done, error } = await readSse(res);
    expect(done).toBe(false);
    expect(error).toBeDefined();
    const tokens = events.filter(
      (e) => (JSON.parse(e) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content,
    );
    expect(tokens.length).toBe(3);
    await waitFor(() => sim.model.snapshot().kvUsedBlocks === 0, 'blocks freed');
    await (await postJson(`${sim.url}/sim/v1/fault`, { clear: true })).arrayBuffer();
  });

  it('error-rate answers 500s', async () => {
    await (await postJson(`${sim.url}/sim/v1/fault`, { errorRate: 1 })).arrayBuffer();
    const res = await postJson(`${sim.url}/v1/completions`, { prompt: 'x' });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('internal_error');
    await (await postJson(`${sim.url}/sim/v1/fault`, { spec: 'error-rate=0.5' })).arrayBuffer();
    const statuses = await Promise.all(
      Array.from({ length: 40 }, () =>
        postJson(`${sim.url}/v1/completions`, { prompt: 'x', max_tokens: 1 }).then(
          async (r) => (await r.arrayBuffer(), r.status),
        ),
      ),
    );
    expect(statuses.filter((s) => s === 500).length).toBeGreaterThan(5);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(5);
    await (await postJson(`${sim.url}/sim/v1/fault`, { clear: true })).arrayBuffer();
  });

  it('hang stops answering until cleared; slow stretches steps', async () => {
    await (await postJson(`${sim.url}/sim/v1/fault`, { hang: true })).arrayBuffer();
    const pending = fetch(`${sim.url}/health`);
    const raced = await Promise.race([pending.then(() => 'answered'), new Promise((r) => setTimeout(r, 300, 'hung'))]);
    expect(raced).toBe('hung');
    expect((await fetch(`${sim.url}/sim/v1/state`)).status).toBe(200);
    await (await postJson(`${sim.url}/sim/v1/fault`, { hang: false })).arrayBuffer();
    expect((await pending).status).toBe(200);

    await (await postJson(`${sim.url}/sim/v1/fault`, { slow: 50 })).arrayBuffer();
    const t0 = performance.now();
    await (await postJson(`${sim.url}/v1/completions`, { prompt: 'x', max_tokens: 5 })).arrayBuffer();
    expect(performance.now() - t0).toBeGreaterThan(5 * 1.38 * 50 * 0.5); // ≈ 345 ms simulated, generous
    const bad = await postJson(`${sim.url}/sim/v1/fault`, { bogus: 1 });
    expect(bad.status).toBe(400);
    await bad.arrayBuffer();
    await (await postJson(`${sim.url}/sim/v1/fault`, { clear: true })).arrayBuffer();
  });
});
