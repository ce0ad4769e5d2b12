import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startSimServer } from '../src/index.ts';
import type { SimServer } from '../src/index.ts';

describe('the official openai SDK against the simulator', () => {
  let sim: SimServer;
  let client: OpenAI;
  beforeAll(async () => {
    sim = await startSimServer({ port: 0, profile: 'tiny', adapters: ['sql-lora'] });
    client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(() => sim.close());

  it('chat completions', async () => {
    const r = await client.chat.completions.create({
      model: sim.modelName,
      messages: [{ role: 'user', content: 'Say hi' }],
      max_completion_tokens: 7,
    });
    expect(r.object).toBe('chat.completion');
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.choices[0]!.message.content!.trim().split(' ')).toHaveLength(7);
    expect(r.usage).toMatchObject({ completion_tokens: 7, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('completions, with an adapter', async () => {
    const r = await client.completions.create({ model: 'sql-lora', prompt: 'SELECT', max_tokens: 4 });
    expect(r.object).toBe('text_completion');
    expect(r.model).toBe('sql-lora');
    expect(r.usage!.completion_tokens).toBe(4);
  });

  it('streaming chat with include_usage', async () => {
    const stream = await client.chat.completions.create({
      model: sim.modelName,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Count' },
      ],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe('chat.completion.chunk');
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBe(1 + 5 + 1); // role, 5 tokens, usage
    expect(text.trim().split(' ')).toHaveLength(5);
    expect(usage).toMatchObject({ completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('streaming completions', async () => {
    const stream = await client.completions.create({
      model: sim.modelName,
      prompt: 'Once upon a time',
      max_tokens: 3,
      stream: true,
    });
    const parts: string[] = [];
    for await (const chunk of stream) parts.push(chunk.choices[0]?.text ?? '');
    expect(parts).toHaveLength(3);
  });

  it('models', async () => {
    const list = await client.models.list();
    const ids = list.data.map((m) => m.id);
    expect(ids).toEqual([sim.modelName, 'sql-lora']);
  });

  it('errors surface as APIError with status', async () => {
    const err = await client.chat.completions
      .create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(404);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('model_not_found');
    const bad = await client.completions
      .create({ model: sim.modelName, prompt: 'x', max_tokens: 0 })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.APIError>).param).toBe('max_tokens');
  });
});
