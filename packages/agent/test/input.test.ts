/**
 * Bad and impossible input at the agent: a stable 4xx from the error
 * registry, never a reset; a request larger than the replica's whole KV cache
 * is a non-retryable 400 context_length_exceeded (with reject reason
 * too_large, so a router tries a larger replica).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimServer, type SimServer } from '@warmpath/sim';
import { rawExchange } from '@warmpath/testkit';
import { startAgent, type Agent } from '../src/index.ts';
import { chatBody, post } from './helpers.ts';

describe('agent input', () => {
  let sim: SimServer;
  let agent: Agent;
  beforeAll(async () => {
    sim = await startSimServer({ port: 0, profile: 'tiny' });
    agent = await startAgent({ engineUrl: sim.url, gossip: false });
  });
  afterAll(async () => {
    await agent?.close();
    await sim?.close();
  });

  it('larger than the whole KV cache → 400 context_length_exceeded, reject reason too_large, no Retry-After', async () => {
    const kv = agent.core.ledger.capacity().kvTokens;
    expect(kv).toBeGreaterThan(0);
    const r = await post(
      `${agent.url}/v1/chat/completions`,
      chatBody(sim.modelName, 's'.repeat(kv * 4), 'hi', { max_tokens: 16 }),
    );
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error.code).toBe('context_length_exceeded');
    expect(r.headers.get('x-warmpath-reject-reason')).toBe('too_large');
    expect(r.headers.get('retry-after')).toBeNull();
  });

  it('max_tokens: 1e300 and 10,000-deep content → 400 invalid_request', async () => {
    const huge = await fetch(`${agent.url}/v1/chat/completions`, {
      method: 'POST',
      body: `{"model":"${sim.modelName}","messages":[{"role":"user","content":"x"}],"max_tokens":1e300}`,
    });
    expect(huge.status).toBe(400);
    expect(((await huge.json()) as { error: { param: string } }).error.param).toBe('max_tokens');
    const deep = await fetch(`${agent.url}/v1/chat/completions`, {
      method: 'POST',
      body: `{"model":"${sim.modelName}","messages":[{"role":"user","content":${'['.repeat(10_000)}${']'.repeat(10_000)}}]}`,
    });
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });

  it('an HTTP request node cannot parse → 400 with an OpenAI-shaped body on both ports', async () => {
    for (const url of [agent.url, agent.adminUrl]) {
      const { port } = new URL(url);
      const text = await rawExchange(Number(port), 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n');
      expect(text).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error.code).toBe('invalid_request');
    }
  });
});
