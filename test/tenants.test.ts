/**
 * Tenants end to end: a router process with --tenants in front of a real
 * agent and simulator, driven by the official openai SDK. The limit answer
 * is one the SDK understands; a stream's usage reaches the router's
 * accounting through the agent although the client never asked for it, and
 * the client's stream carries none.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { request } from 'undici';
import { launchFleet, type LocalFleet } from '@warmpath/launch';
import { waitFor } from '@warmpath/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const FILE = join(mkdtempSync(join(tmpdir(), 'wp-e2e-tenants-')), 'tenants.yaml');
writeFileSync(
  FILE,
  `tenants:
  - name: chat
    keys: [sk-chat]
    priorities: [interactive]
  - name: evals
    keys: [sk-evals]
    priorities: [batch]
    limits: { requestsPerMinute: 2 }
`,
);

let fleet: LocalFleet;
let router: string;
let model: string;

beforeAll(async () => {
  fleet = await launchFleet({ replicas: 1, routers: 1, profile: 'tiny', speed: 4, routerArgs: ['--tenants', FILE] });
  router = fleet.routerUrls[0]!;
  await waitFor(async () => ((await (await request(`${router}/readyz`)).body.json()) as { ready: boolean }).ready, {
    timeoutMs: 60_000,
    intervalMs: 100,
    message: 'the router to see its replica',
  });
  const models = await new OpenAI({ apiKey: 'sk-chat', baseURL: `${router}/v1` }).models.list();
  model = models.data[0]!.id;
});

afterAll(async () => {
  await fleet?.stop();
});

const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${router}/v1`, maxRetries: 0 });

describe('tenants across real processes', () => {
  it("counts a stream's usage the client did not ask for, and keeps it out of the client's stream", async () => {
    const stream = await client('sk-chat').chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Say something about load balancers. '.repeat(10) }],
      max_tokens: 16,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) {
      expect(chunk.usage ?? null).toBeNull();
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text.length).toBeGreaterThan(0);
    const usage = (await (
      await request(`${router}/warmpath/v1/usage`, { headers: { authorization: 'Bearer sk-chat' } })
    ).body.json()) as { tenants: Array<{ tenant: string; total: Record<string, number> }> };
    expect(usage.tenants).toHaveLength(1);
    expect(usage.tenants[0]!.tenant).toBe('chat');
    expect(usage.tenants[0]!.total.requests).toBe(1);
    expect(usage.tenants[0]!.total.promptTokens).toBeGreaterThan(50);
    expect(usage.tenants[0]!.total.completionTokens).toBeGreaterThan(0);
  });

  it('answers a tenant over its limit as OpenAI does, and an unknown key with 401', async () => {
    const c = client('sk-evals');
    for (let i = 0; i < 2; i++)
      await c.chat.completions.create({ model, messages: [{ role: 'user', content: `hi ${i}` }], max_tokens: 4 });
    const err = await c.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'once more' }], max_tokens: 4 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const rl = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rl.code).toBe('rate_limit_exceeded');
    expect(rl.headers?.get('x-ratelimit-limit-requests')).toBe('2');
    expect(rl.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(Number(rl.headers?.get('retry-after'))).toBeGreaterThan(0);
    const denied = await client('sk-nobody')
      .chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(denied).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
