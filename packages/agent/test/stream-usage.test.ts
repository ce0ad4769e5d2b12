import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startSimServer } from '@warmpath/sim';
import { RECEIPT_TAIL_BYTES, receiptComment, receiptOfComment } from '@warmpath/shared/wire';
import { startAgent } from '../src/index.ts';
import { askForUsage, MAX_EVENT_BYTES, UsageStrip } from '../src/stream-usage.ts';
import { UsageTap } from '../src/usage.ts';

const stream = (name: string): Buffer => readFileSync(new URL(`./fixtures/streams/${name}`, import.meta.url));

/** Feed `bytes` to a fresh strip cut at the given offsets; the bytes the client would see. */
function stripped(bytes: Buffer, dropNull: boolean, cuts: number[] = []): Buffer {
  const s = new UsageStrip(dropNull);
  const out: Buffer[] = [];
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(s.push(bytes.subarray(at, c)));
    at = c;
  }
  out.push(s.end());
  return Buffer.concat(out);
}

describe('askForUsage', () => {
  const raw = (o: unknown): Buffer => Buffer.from(JSON.stringify(o));
  const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true };

  it('splices include_usage into a streaming chat or completion body for vLLM and SGLang, leaving the rest byte for byte', () => {
    const body = Buffer.from(`  {"model":"m","stream":true,"prompt":"p"}`);
    const asked = askForUsage('vllm', 'completion', JSON.parse(body.toString()), body)!;
    expect(asked.body.toString()).toBe(
      `  {"stream_options":{"include_usage":true},"model":"m","stream":true,"prompt":"p"}`,
    );
    expect(asked.dropNullUsage).toBe(true);
    const sg = askForUsage('sglang', 'chat', chat, raw(chat))!;
    expect(JSON.parse(sg.body.toString())).toEqual({ ...chat, stream_options: { include_usage: true } });
    expect(sg.dropNullUsage).toBe(false);
  });

  it('re-serializes only when the client said include_usage false or null', () => {
    for (const so of [{ include_usage: false }, { include_usage: null }, null, {}]) {
      const body = { ...chat, stream_options: so };
      expect(JSON.parse(askForUsage('vllm', 'chat', body, raw(body))!.body.toString())).toEqual({
        ...chat,
        stream_options: { include_usage: true },
      });
    }
  });

  it('leaves the request alone when the client asked, set other stream options, does not stream, or the engine has nothing to tell', () => {
    const cases: Array<
      [Parameters<typeof askForUsage>[0], Parameters<typeof askForUsage>[1], Record<string, unknown>]
    > = [
      ['vllm', 'chat', { ...chat, stream_options: { include_usage: true } }],
      ['vllm', 'chat', { ...chat, stream_options: { include_usage: false, continuous_usage_stats: true } }],
      ['vllm', 'chat', { ...chat, stream: false }],
      ['vllm', 'chat', { ...chat, stream: 'yes' }],
      ['vllm', 'responses', { model: 'm', input: 'x', stream: true }],
      ['vllm', 'embedding', { model: 'm', input: 'x' }],
      ['llamacpp', 'chat', chat],
      ['tgi', 'chat', chat],
    ];
    for (const [engine, kind, body] of cases) expect(askForUsage(engine, kind, body, raw(body))).toBeUndefined();
  });
});

describe('UsageStrip', () => {
  const pairs = [
    ['vllm-0.10-chat-usage.sse', 'vllm-0.10-chat.sse', true],
    ['sglang-chat-usage.sse', 'sglang-chat.sse', false],
    ['sglang-0.4-chat-usage.sse', 'sglang-0.4-chat.sse', false],
  ] as const;

  it.each(pairs)('%s: the client sees %s exactly, however the bytes are cut', (asked, plain, dropNull) => {
    const bytes = stream(asked);
    const want = stream(plain);
    expect(stripped(bytes, dropNull).equals(want)).toBe(true);
    // Every single cut (inside multi-byte characters and blank lines too), and every byte on its own.
    for (let c = 1; c < bytes.length; c++) expect(stripped(bytes, dropNull, [c]).equals(want)).toBe(true);
    expect(
      stripped(
        bytes,
        dropNull,
        Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
      ).equals(want),
    ).toBe(true);
  });

  it('takes out "usage":null members in the dialect that adds them only when asked (and CRLF framing)', () => {
    const asked =
      'data: {"id":"a","choices":[{"index":0,"delta":{"content":"x"}}],"usage":null}\r\n\r\ndata: {"id":"a","choices":[],"usage":{"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}\r\n\r\ndata: [DONE]\r\n\r\n';
    const want = 'data: {"id":"a","choices":[{"index":0,"delta":{"content":"x"}}]}\r\n\r\ndata: [DONE]\r\n\r\n';
    expect(stripped(Buffer.from(asked), true).toString()).toBe(want);
    // The other dialect keeps the null member (its engine writes it unasked too).
    expect(stripped(Buffer.from(asked), false).toString()).toBe(
      asked.replace(/data: \{"id":"a","choices":\[\],[^\n]*\n\r\n/, ''),
    );
  });

  it('keeps every event that is not a usage-only chunk, and passes oversized events unexamined', () => {
    const keep = [
      'data: {"choices":[],"usage":null}\n\n',
      'data: {"choices":[{"index":0}],"usage":{"prompt_tokens":1}}\n\n',
      'event: note\ndata: {"choices": [], "note": "usage"}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":1}\n\n', // not JSON
      ': comment "usage"\n\n',
    ].join('');
    expect(stripped(Buffer.from(keep), false).toString()).toBe(keep);
    expect(stripped(Buffer.from(keep), true).toString()).toBe(
      keep.replace('{"choices":[],"usage":null}', '{"choices":[]}'),
    );
    const big = `data: {"choices":[],"usage":{"prompt_tokens":1},"pad":"${'x'.repeat(MAX_EVENT_BYTES)}"}\n\n`;
    expect(stripped(Buffer.from(big), true, [10, MAX_EVENT_BYTES + 20]).toString()).toBe(big);
    // An unterminated last event is still judged at the end.
    expect(stripped(Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":1}}'), true).length).toBe(0);
  });

  it('llama.cpp is not asked: taking its usage chunk out would take the timings the client gets unasked with it', () => {
    const plain = stream('llamacpp-chat.sse').toString();
    const asked = stream('llamacpp-chat-usage.sse');
    const strip = new UsageStrip(false);
    const seen = Buffer.concat([strip.push(asked), strip.end()]).toString();
    expect(strip.dropped).toBe(1);
    expect(plain).toContain('"timings":{"cache_n":');
    expect(seen).not.toContain('"timings"');
  });

  it('the usage tap reads cached tokens from each engine stream the agent sees', () => {
    const cached = (name: string): number | undefined => {
      const tap = new UsageTap('text/event-stream');
      tap.write(stream(name));
      return tap.end()?.cachedTokens;
    };
    expect(cached('vllm-0.10-chat-usage.sse')).toBe(1024);
    expect(cached('sglang-chat-usage.sse')).toBe(1024);
    expect(cached('sglang-0.4-chat-usage.sse')).toBe(1024);
    // llama.cpp b8668: unasked, timings.cache_n on the finish chunk; asked, usage.prompt_tokens_details on an extra chunk.
    expect(cached('llamacpp-chat.sse')).toBe(204);
    expect(cached('llamacpp-chat-usage.sse')).toBe(250);
    expect(cached('llamacpp-completion.sse')).toBe(0);
    const json = new UsageTap('application/json');
    json.write(readFileSync(new URL('./fixtures/llamacpp-chat.json', import.meta.url)));
    expect(json.end()).toEqual({ promptTokens: 251, cachedTokens: 250, completionTokens: 8 });
    expect(cached('tgi-chat.sse')).toBeUndefined();
  });
});

describe('cache feedback from clients that did not ask for usage (sim engine, real HTTP)', () => {
  const norm = (s: string): string => s.replace(/"id":"[^"]*"/g, '"id":"X"').replace(/"created":\d+/g, '"created":0');

  async function streamText(url: string, body: Record<string, unknown>): Promise<string> {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return res.text();
  }

  it('the client stream is what the engine sends unasked with the receipt comment before [DONE], and the cache model still learns the eviction', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 4 });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false });
    try {
      const q = { model: sim.modelName, prompt: 'Q'.repeat(1100), max_tokens: 3, stream: true };
      const p = { model: sim.modelName, prompt: 'P'.repeat(1100), max_tokens: 3, stream: true };
      const viaAgent = await streamText(agent.url, q);
      const direct = await streamText(sim.url, q);
      expect(direct).not.toContain('"usage"');
      // The agent's one addition: the engine's usage, as an SSE comment before the closing [DONE].
      const receipt = receiptComment({ cachedTokens: 0, promptTokens: 275, completionTokens: 3 });
      expect(viaAgent.endsWith(`${receipt}data: [DONE]\n\n`)).toBe(true);
      expect(receiptOfComment(viaAgent.slice(-RECEIPT_TAIL_BYTES))).toEqual({
        cachedTokens: 0,
        promptTokens: 275,
        completionTokens: 3,
      });
      expect(norm(viaAgent.replace(receipt, ''))).toBe(norm(direct));
      await streamText(agent.url, p);
      expect(agent.core.ledger.cache.size).toBe(8);
      await fetch(`${sim.url}/sim/v1/reset_prefix_cache`, { method: 'POST' });
      const again = await streamText(agent.url, p);
      expect(again).not.toContain('"usage"');
      expect(agent.core.ledger.cache.stats.corrections).toBe(1);
      expect(agent.core.ledger.cache.size).toBe(4);
      // A client that asked gets its usage chunk, as before.
      const asked = await streamText(agent.url, { ...p, stream_options: { include_usage: true } });
      expect(asked).toContain('"choices":[],"usage":{');
      expect(asked).toContain('"usage":null');
    } finally {
      await agent.close();
      await sim.close();
    }
  });

  it('usageFeedback off: bodies go through unchanged, and such streams teach the cache model nothing', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 4 });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false, usageFeedback: false });
    try {
      const p = { model: sim.modelName, prompt: 'P'.repeat(1100), max_tokens: 3, stream: true };
      await streamText(agent.url, p);
      await fetch(`${sim.url}/sim/v1/reset_prefix_cache`, { method: 'POST' });
      await streamText(agent.url, p);
      expect(agent.core.ledger.cache.stats.corrections).toBe(0);
    } finally {
      await agent.close();
      await sim.close();
    }
  });
});
