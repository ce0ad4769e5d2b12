import { afterEach, describe, expect, it } from 'vitest';
import { PROFILES, kvTransferMs, startSimServer, stepTimeMs } from '../src/index.ts';
import type { SimServer, SimServerOptions } from '../src/index.ts';
import { postJson, readSse, state } from './helpers.ts';

const H100 = PROFILES['h100-llama3-8b'];
/** ≈ 2,000 tokens at 4 characters per token. */
const LONG = 'a long shared document about disaggregated serving. '.repeat(154);

interface Answer {
  usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
  kv_transfer_params: Record<string, unknown> | null;
  choices: { text?: string; message?: { content: string } }[];
}

let servers: SimServer[] = [];
async function sim(o: SimServerOptions): Promise<SimServer> {
  const s = await startSimServer({ port: 0, speed: 10, ...o });
  servers.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

const PREFILL_PARAMS = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
};

/** The first leg as vLLM's toy proxy sends it: kv_transfer_params with do_remote_decode, max_tokens 1, no stream. */
async function prefill(p: SimServer, prompt: string): Promise<Answer> {
  const res = await postJson(`${p.url}/v1/completions`, {
    prompt,
    max_tokens: 1,
    stream: false,
    kv_transfer_params: PREFILL_PARAMS,
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Answer;
}

/** Mean TTFT of the model's own histogram, ms (exact: the model stamps it). */
const meanTtftMs = (s: SimServer): number => (s.model.ttft.sum / s.model.ttft.count) * 1e3;

describe('vLLM disaggregated protocol (NixlConnector, toy proxy)', () => {
  it('a prefill request answers kv_transfer_params naming its engine, blocks, host and port', async () => {
    const p = await sim({ role: 'prefill' });
    const a = await prefill(p, LONG);
    const kv = a.kv_transfer_params!;
    expect(kv).toMatchObject({
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_host: '127.0.0.1',
      remote_port: p.port,
      tp_size: 1,
    });
    expect(kv.remote_engine_id).toMatch(/^sim-engine-/);
    expect(typeof kv.remote_request_id).toBe('string');
    expect(kv.remote_block_ids).toHaveLength(Math.ceil(a.usage.prompt_tokens / 16));
    // The prefill worker holds those blocks for the decode worker (vLLM's delayed free) until it reads them.
    const held = await state(p.url);
    expect(held.kv).toMatchObject({ heldRequests: 1, filed: 1, produced: 1 });
    expect(held.engine.kvUsedBlocks).toBe((kv.remote_block_ids as number[]).length);
    const read = await fetch(`${p.url}/sim/v1/kv/${kv.remote_request_id as string}`);
    expect(((await read.json()) as { blockIds: number[] }).blockIds).toEqual(kv.remote_block_ids);
    const freed = await state(p.url);
    expect(freed.kv).toMatchObject({ heldRequests: 0, filed: 0 });
    expect(freed.engine.kvUsedBlocks).toBe(0);
    expect((await fetch(`${p.url}/sim/v1/kv/${kv.remote_request_id as string}`)).status).toBe(404); // read once
    // A request without the params is an ordinary one, even on a prefill worker.
    const plain = (await (
      await postJson(`${p.url}/v1/completions`, { prompt: 'hello', max_tokens: 2 })
    ).json()) as Answer;
    expect(plain.kv_transfer_params).toBeNull();
  });

  it('the decode worker skips the prefill: its TTFT is the modelled transfer plus one decode step', async () => {
    const gbps = 10;
    const p = await sim({ role: 'prefill' });
    const d = await sim({ role: 'decode', kvLinkGbps: gbps, kvLinkLatencyMs: 2 });
    const first = await prefill(p, LONG);
    const res = await postJson(`${d.url}/v1/completions`, {
      prompt: LONG,
      max_tokens: 4,
      kv_transfer_params: first.kv_transfer_params,
    });
    expect(res.status).toBe(200);
    const a = (await res.json()) as Answer;
    const tokens = a.usage.prompt_tokens;
    expect(a.usage.prompt_tokens_details.cached_tokens).toBe(0); // nothing was cached locally
    const transfer = kvTransferMs(H100, tokens, { gbps, latencyMs: 2 });
    const expected = d.model.frontendDelayMs(tokens) + transfer + stepTimeMs(H100, tokens, 0, 0);
    expect(transfer).toBeGreaterThan(200); // a slow link: the transfer dominates
    expect(meanTtftMs(d)).toBeCloseTo(expected, 0);
    // At 10 Gbit/s the transfer costs more than prefilling locally would.
    expect(transfer).toBeGreaterThan((tokens / H100.prefillTokensPerS) * 1e3);
    const st = await state(d.url);
    expect(st.role).toBe('decode');
    expect(st.kv).toMatchObject({ received: 1, failed: 0 });
    // The decode worker keeps what it received: the same prompt again is a local prefix hit.
    const again = (await (await postJson(`${d.url}/v1/completions`, { prompt: LONG, max_tokens: 2 })).json()) as Answer;
    expect(again.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(tokens - 32);
  });

  it('a decode request pulls only what the decode worker does not already cache', async () => {
    const p = await sim({ role: 'prefill' });
    const d = await sim({ role: 'decode', kvLinkGbps: 10, kvLinkLatencyMs: 2 });
    await postJson(`${d.url}/v1/completions`, { prompt: LONG, max_tokens: 1 }).then((r) => r.json());
    d.model.ttft.reset();
    const first = await prefill(p, LONG);
    const a = (await (
      await postJson(`${d.url}/v1/completions`, {
        prompt: LONG,
        max_tokens: 2,
        kv_transfer_params: first.kv_transfer_params,
      })
    ).json()) as Answer;
    const cached = a.usage.prompt_tokens_details.cached_tokens;
    expect(cached).toBeGreaterThan(1900);
    const transfer = kvTransferMs(H100, a.usage.prompt_tokens - cached, { gbps: 10, latencyMs: 2 });
    expect(transfer).toBeLessThan(10);
    expect(meanTtftMs(d)).toBeLessThan(60);
  });

  it('without kv_transfer_params a decode-only worker prefills locally, as vLLM does', async () => {
    const d = await sim({ role: 'decode', kvLinkGbps: 10 });
    const a = (await (await postJson(`${d.url}/v1/completions`, { prompt: LONG, max_tokens: 2 })).json()) as Answer;
    expect(a.kv_transfer_params).toBeNull();
    const tokens = a.usage.prompt_tokens;
    // TTFT holds the prefill (no transfer): frontend + one chunked step of the whole prompt.
    const expected = d.model.frontendDelayMs(tokens) + stepTimeMs(H100, tokens, tokens, 0);
    expect(meanTtftMs(d)).toBeCloseTo(expected, 0);
    expect((await state(d.url)).kv).toMatchObject({ received: 0, failed: 0 });
  });

  it('a worker asked for the direction its role lacks answers 400', async () => {
    const p = await sim({ role: 'prefill' });
    const d = await sim({ role: 'decode' });
    const toDecode = await postJson(`${d.url}/v1/completions`, { prompt: 'x', kv_transfer_params: PREFILL_PARAMS });
    expect(toDecode.status).toBe(400);
    const toPrefill = await postJson(`${p.url}/v1/completions`, {
      prompt: 'x',
      kv_transfer_params: { do_remote_prefill: true, remote_host: '127.0.0.1', remote_port: 1, remote_request_id: 'r' },
    });
    expect(toPrefill.status).toBe(400);
    const bad = await postJson(`${d.url}/v1/completions`, { prompt: 'x', kv_transfer_params: [1] });
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('kv_transfer_params');
  });
});

describe("SGLang's protocol (bootstrap_host, bootstrap_port, bootstrap_room)", () => {
  it('the same request to both: the decode worker waits for the room, then streams', async () => {
    const p = await sim({ role: 'prefill' });
    const d = await sim({ role: 'decode', kvLinkGbps: 100 });
    const body = {
      messages: [{ role: 'user', content: LONG }],
      max_tokens: 5,
      stream: true,
      bootstrap_host: '127.0.0.1',
      bootstrap_port: p.port,
      bootstrap_room: 4242,
    };
    // The decode request first: it must wait for the prefill of its room.
    const decoded = postJson(`${d.url}/v1/chat/completions`, body);
    await new Promise((r) => setTimeout(r, 30));
    const pre = await postJson(`${p.url}/v1/chat/completions`, { ...body, stream: false });
    expect(pre.status).toBe(200);
    const pa = (await pre.json()) as Answer & { usage: { completion_tokens: number } };
    expect(pa.usage.completion_tokens).toBe(1); // the prefill worker runs the prompt and one token
    const { events, done } = await readSse(await decoded);
    expect(done).toBe(true);
    expect(events.filter((e) => e.includes('"content":" ')).length).toBe(5);
    expect((await state(d.url)).kv).toMatchObject({ received: 1 });
    // The decode worker did not prefill: its TTFT is under what a local prefill of the prompt costs.
    const tokens = pa.usage.prompt_tokens;
    expect(meanTtftMs(d)).toBeLessThan(d.model.frontendDelayMs(tokens) + stepTimeMs(H100, tokens, tokens, 0));
  });
});

describe('disaggregation faults', () => {
  it('a prefill worker dying fails its own requests', async () => {
    const p = await sim({ role: 'prefill', faults: ['slow=50'] });
    const pending = prefill(p, LONG).then(
      () => 'answered',
      () => 'failed',
    );
    await new Promise((r) => setTimeout(r, 50));
    p.setFaults({ crash: true });
    expect(await pending).toBe('failed');
  });

  it('a dead prefill worker: the decode worker recomputes (default) or fails (policy fail)', async () => {
    const p = await sim({ role: 'prefill' });
    const recompute = await sim({ role: 'decode' });
    const fail = await sim({ role: 'decode', kvLoadFailurePolicy: 'fail' });
    const first = await prefill(p, LONG);
    // An unknown request id fails at once (vLLM's decode leg comes after the prefill answered: nothing to wait for).
    const unknown = { ...(first.kv_transfer_params as object), remote_request_id: 'never-filed' };
    const t0 = performance.now();
    const u = await postJson(`${recompute.url}/v1/completions`, {
      prompt: 'x',
      max_tokens: 1,
      kv_transfer_params: unknown,
    });
    expect(u.status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(1_000);
    await p.close(); // the prefill worker dies holding the KV
    const body = { prompt: LONG, max_tokens: 2, kv_transfer_params: first.kv_transfer_params };
    const a = await postJson(`${recompute.url}/v1/completions`, body);
    expect(a.status).toBe(200);
    expect((await state(recompute.url)).kv).toMatchObject({ received: 0, failed: 2, recomputed: 2 });
    const b = await postJson(`${fail.url}/v1/completions`, body);
    expect(b.status).toBe(500);
    expect(((await b.json()) as { error: { message: string } }).error.message).toMatch(/KV load failed/);
  });

  it('kv-fail and kv-timeout: a failed transfer recomputes, a timed-out one first waits the timeout', async () => {
    const p = await sim({ role: 'prefill' });
    const d = await sim({ role: 'decode', faults: ['kv-fail=1'], kvTimeoutMs: 2_000 });
    const one = await prefill(p, LONG);
    await postJson(`${d.url}/v1/completions`, {
      prompt: LONG,
      max_tokens: 1,
      kv_transfer_params: one.kv_transfer_params,
    });
    const failedTtft = meanTtftMs(d);
    expect(failedTtft).toBeGreaterThan(60); // the prompt was prefilled here
    expect(failedTtft).toBeLessThan(200);
    d.setFaults({ clear: true, kvTimeout: 1 });
    await fetch(`${d.url}/reset_prefix_cache`, { method: 'POST' });
    d.model.ttft.reset();
    const two = await prefill(p, LONG);
    const t0 = performance.now();
    const res = await postJson(`${d.url}/v1/completions`, {
      prompt: LONG,
      max_tokens: 1,
      kv_transfer_params: two.kv_transfer_params,
    });
    expect(res.status).toBe(200);
    expect(meanTtftMs(d)).toBeGreaterThan(2_000); // waited the timeout, then prefilled
    expect(performance.now() - t0).toBeGreaterThan(150); // 2 s of simulated time at speed 10
    expect((await state(d.url)).kv).toMatchObject({ failed: 2, recomputed: 2 });
  });

  it('an SGLang room that never fills: the decode worker waits its KV timeout, then recomputes', async () => {
    const p = await sim({ role: 'prefill' });
    const d = await sim({ role: 'decode', kvTimeoutMs: 1_000 });
    const t0 = performance.now();
    const res = await postJson(`${d.url}/v1/completions`, {
      prompt: LONG,
      max_tokens: 1,
      bootstrap_host: '127.0.0.1',
      bootstrap_port: p.port,
      bootstrap_room: 7,
    });
    expect(res.status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThan(90); // 1 s of simulated time at speed 10
    expect((await state(d.url)).kv).toMatchObject({ received: 0, failed: 1, recomputed: 1 });
  });

  it('a decode worker dying mid-stream cuts the stream without [DONE]', async () => {
    const p = await sim({ role: 'prefill' });
    const d = await sim({ role: 'decode', faults: ['die-after-tokens=2'] });
    const first = await prefill(p, LONG);
    const res = await postJson(`${d.url}/v1/completions`, {
      prompt: LONG,
      max_tokens: 10,
      stream: true,
      kv_transfer_params: first.kv_transfer_params,
    });
    const { events, done } = await readSse(res);
    expect(done).toBe(false);
    expect(events.length).toBe(2);
  });
});
