/**
 * Bad and impossible input at the router: every malformed or impossible
 * request is a 4xx with a stable code from the error registry — never a
 * reset, never a 5xx, never a retryable code for a request that can never
 * fit — and none of them reaches a replica.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, isErrorCode } from '@warmpath/shared/wire';
import { rawExchange } from '@warmpath/testkit';
import { parseRoute, startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';
import { makeState } from './helpers.ts';

async function post(
  url: string,
  body: string,
): Promise<{
  status: number;
  headers: Record<string, unknown>;
  error: { code: string; param: string | null; type: string };
}> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  const json = (await res.body.json()) as { error: { code: string; param: string | null; type: string } };
  return { status: res.statusCode, headers: res.headers, error: json.error };
}

const ok = { role: 'user', content: 'hello' };
/** Fifteen kinds of malformed chat request (one body each), with the code each must get. */
export const MALFORMED: ReadonlyArray<[kind: string, body: string, code: string]> = [
  ['not JSON', '{"model": "m", "messages": [', 'invalid_json'],
  ['empty body', '', 'invalid_json'],
  ['a JSON array', '[1, 2]', 'invalid_request'],
  ['no model', JSON.stringify({ messages: [ok] }), 'model_required'],
  ['model not a string', JSON.stringify({ model: 7, messages: [ok] }), 'invalid_request'],
  ['no messages', JSON.stringify({ model: 'm' }), 'invalid_request'],
  ['messages not an array', JSON.stringify({ model: 'm', messages: 'hello' }), 'invalid_request'],
  ['empty messages', JSON.stringify({ model: 'm', messages: [] }), 'invalid_request'],
  ['message not an object', JSON.stringify({ model: 'm', messages: ['hello'] }), 'invalid_request'],
  ['message without role', JSON.stringify({ model: 'm', messages: [{ content: 'hello' }] }), 'invalid_request'],
  ['unknown role', JSON.stringify({ model: 'm', messages: [{ role: 'wizard', content: 'hello' }] }), 'invalid_request'],
  ['user message without content', JSON.stringify({ model: 'm', messages: [{ role: 'user' }] }), 'invalid_request'],
  ['content a number', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 42 }] }), 'invalid_request'],
  ['stream not a boolean', JSON.stringify({ model: 'm', messages: [ok], stream: 'yes' }), 'invalid_request'],
  ['max_tokens negative', JSON.stringify({ model: 'm', messages: [ok], max_tokens: -5 }), 'invalid_request'],
];

describe('router input', () => {
  let router: Router;
  let agent: FakeAgent;
  let small: Server;
  let smallHits = 0;
  beforeAll(async () => {
    agent = await startFakeAgent('big');
    // A replica too small for the request: its agent refuses with 400 too_large, as the real agent does.
    small = createServer((req, res) => {
      req.resume();
      smallHits++;
      res.writeHead(400, { 'content-type': 'application/json', 'x-warmpath-reject-reason': 'too_large' });
      res.end(
        JSON.stringify({
          error: { message: 'too large', type: 'invalid_request_error', param: null, code: 'context_length_exceeded' },
        }),
      );
    });
    await new Promise<void>((r) => small.listen(0, '127.0.0.1', r));
    // Round-robin places blindly, so some requests do land on the small replica and must move on.
    router = await startRouter({ port: 0, gossip: false, policy: 'round-robin', log: () => {} });
    router.view.apply(makeState('big', { fleet: 'default', url: agent.url, capacity: { kvTokens: 50_000 } }));
    router.view.apply(
      makeState('small', {
        fleet: 'default',
        url: `http://127.0.0.1:${(small.address() as AddressInfo).port}`,
        capacity: { kvTokens: 2_000 },
      }),
    );
  });
  afterAll(async () => {
    await router.close();
    await agent.close();
    await new Promise<void>((r) => small.close(() => r()));
  });

  it('fifteen kinds of malformed chat request: each a 4xx with its stable code, none forwarded', async () => {
    for (const [kind, body, code] of MALFORMED) {
      const r = await post(router.url, body);
      expect({ kind, status: r.status, code: r.error.code }).toEqual({
        kind,
        status: ERRORS[code as keyof typeof ERRORS].status,
        code,
      });
      expect(isErrorCode(r.error.code)).toBe(true);
    }
    expect(agent.hits + smallHits).toBe(0);
  });

  it('max_tokens: 1e300 → 400 invalid_request naming max_tokens', async () => {
    const r = await post(router.url, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1e300}`);
    expect(r.status).toBe(400);
    expect(r.error).toMatchObject({ code: 'invalid_request', param: 'max_tokens' });
  });

  it('content nested 10,000 levels deep → 400 invalid_request, not a reset', async () => {
    const deep = `{"model":"m","messages":[{"role":"user","content":${'['.repeat(10_000)}${']'.repeat(10_000)}}]}`;
    const r = await post(router.url, deep);
    expect(r.status).toBe(400);
    expect(r.error.code).toBe('invalid_request');
  });

  it('a prompt larger than every replica KV → 400 context_length_exceeded, not retryable', async () => {
    const r = await post(
      router.url,
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(50_000 * 4) }], max_tokens: 16 }),
    );
    expect(r.status).toBe(400);
    expect(r.headers['retry-after']).toBeUndefined();
    expect(r.error).toMatchObject({
      code: 'context_length_exceeded',
      param: 'messages',
      type: 'invalid_request_error',
    });
    expect(agent.hits + smallHits).toBe(0);
  });

  it('a prompt too large for one replica but not another: the small one refuses (400 too_large), the larger one answers', async () => {
    const body = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'y'.repeat(30_000) }],
      max_tokens: 16,
    });
    const routes = new Set<unknown>();
    for (let i = 0; i < 8; i++) {
      const res = await request(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        body: body.replace('yyy', `y${i}y`),
      });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-warmpath-replica']).toBe('big');
      routes.add(parseRoute(String(res.headers['x-warmpath-route']))?.attempt);
    }
    expect(smallHits).toBeGreaterThan(0);
    expect(routes.has('retry')).toBe(true);
  });

  it('an HTTP request node cannot parse → 400 with an OpenAI-shaped body, then a clean close', async () => {
    const port = Number(new URL(router.url).port);
    const text = await rawExchange(port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error.code).toBe('invalid_request');
  });
});
