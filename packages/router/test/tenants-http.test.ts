/**
 * Tenants at the router's HTTP end: keys → tenants (401 otherwise), the
 * OpenAI rate-limit answer and its headers, the same headers on success,
 * the concurrent limit given back however a request ends, bands capped and
 * passed to the agent, usage read from the answers, and a file edit that
 * keeps the last good file when it is invalid.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { waitFor } from '@warmpath/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent, type Mode } from './fake-agent.ts';
import { makeState } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'wp-tenants-'));
let n = 0;
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

const TENANTS = `
tenants:
  - name: search
    keys: [sk-search]
    weight: 2
    priorities: [standard, batch]
    limits: { requestsPerMinute: 3, concurrent: 8 }
  - name: evals
    keys: [sk-evals]
    priorities: [batch]
    limits: { tokensPerMinute: 1000 }
  - name: chat
    keys: [sk-chat]
    priorities: [interactive]
    limits: { concurrent: 1 }
`;

async function start(
  text: string,
  mode: Mode = 'ok',
  extra: Record<string, unknown> = {},
): Promise<{ router: Router; agent: FakeAgent; file: string }> {
  const file = join(dir, `tenants-${n++}.yaml`);
  writeFileSync(file, text);
  const agent = await startFakeAgent('a0', mode);
  const router = await startRouter({ port: 0, gossip: false, tenants: file, log: () => {}, ...extra });
  cleanup.push(async () => {
    await router.close();
    await agent.close();
  });
  router.view.apply(makeState('a0', { fleet: 'default', url: agent.url }));
  return { router, agent, file };
}

function post(
  router: Router,
  key: string | undefined,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  return request(`${router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }], max_tokens: 50, ...body }),
  });
}

describe('tenants over HTTP', () => {
  it('answers 401 without a known key, OpenAI-shaped', async () => {
    const { router } = await start(TENANTS);
    for (const key of [undefined, 'sk-nobody']) {
      const res = await post(router, key);
      expect(res.statusCode).toBe(401);
      expect(((await res.body.json()) as { error: { code: string; type: string } }).error).toMatchObject({
        code: 'unauthorized',
        type: 'authentication_error',
      });
    }
    const ok = await post(router, 'sk-search');
    await ok.body.dump();
    expect(ok.statusCode).toBe(200);
  });

  it('refuses past requestsPerMinute with 429 rate_limit_exceeded, Retry-After and the x-ratelimit headers; the same headers on success', async () => {
    const { router } = await start(TENANTS);
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await post(router, 'sk-search');
      await res.body.dump();
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit-requests']).toBe('3');
      seen.push(String(res.headers['x-ratelimit-remaining-requests']));
      expect(res.headers['x-ratelimit-reset-requests']).toMatch(/^(\d+ms|\d+(\.\d+)?s|\d+m\d+(\.\d+)?s)$/);
    }
    expect(seen).toEqual(['2', '1', '0']);
    const res = await post(router, 'sk-search');
    expect(res.statusCode).toBe(429);
    const body = (await res.body.json()) as { error: { code: string; type: string; message: string } };
    expect(body.error.code).toBe('rate_limit_exceeded');
    expect(body.error.message).toMatch(/requests per minute/);
    expect(res.headers['x-ratelimit-remaining-requests']).toBe('0');
    const retry = Number(res.headers['retry-after']);
    expect(retry).toBeGreaterThanOrEqual(59);
    expect(retry).toBeLessThanOrEqual(61);
    // Another tenant is not held back by it.
    const other = await post(router, 'sk-chat');
    await other.body.dump();
    expect(other.statusCode).toBe(200);
    expect(other.headers['x-ratelimit-limit-requests']).toBeUndefined(); // no per-minute limits, no headers
    const metrics = await (
      await request(`${router.url}/metrics`, { headers: { authorization: 'Bearer sk-search' } })
    ).body.text();
    expect(metrics).toMatch(/warmpath_router_tenant_limited_total\{tenant="search",limit="requests"\} 1/);
  });

  it('reserves prompt + max_tokens, then settles on the engine usage; a request larger than the limit gets no Retry-After', async () => {
    const { router } = await start(TENANTS);
    // About 2 + 400 tokens reserved; the fake engine reports 5 + 3.
    const a = await post(router, 'sk-evals', { max_tokens: 400 });
    await a.body.dump();
    expect(a.statusCode).toBe(200);
    expect(Number(a.headers['x-ratelimit-remaining-tokens'])).toBeLessThan(600);
    const b = await post(router, 'sk-evals', { max_tokens: 900 });
    await b.body.dump();
    expect(b.statusCode).toBe(200); // 8 used + ~902 reserved ≤ 1000 once the first was settled
    const c = await post(router, 'sk-evals', { max_tokens: 5_000 });
    expect(c.statusCode).toBe(429);
    expect(((await c.body.json()) as { error: { message: string } }).error.message).toMatch(/too large/);
    expect(c.headers['retry-after']).toBeUndefined();
    expect(c.headers['x-ratelimit-limit-tokens']).toBe('1000');
  });

  it('gives the concurrent slot back when a request ends, the client leaving included', async () => {
    const { router, agent } = await start(TENANTS, 'slow-stream');
    const first = await post(router, 'sk-chat', { stream: true });
    expect(first.statusCode).toBe(200);
    const second = await post(router, 'sk-chat', { stream: true });
    expect(second.statusCode).toBe(429);
    expect(((await second.body.json()) as { error: { message: string } }).error.message).toMatch(/in flight/);
    first.body.destroy(); // the client leaves mid-stream
    await waitFor(() => router.tenancy!.limiter.inFlight('chat') === 0, { message: 'the slot given back' });
    const third = await post(router, 'sk-chat', { stream: true });
    expect(third.statusCode).toBe(200);
    await third.body.text();
    expect(router.tenancy!.limiter.inFlight('chat')).toBe(0);
    expect(agent.hits).toBe(2);
  });

  it('caps the band to the tenant and passes it to the agent; counts usage from JSON and stream answers', async () => {
    const { router, agent } = await start(TENANTS);
    const cases: Array<[string, string | undefined, string]> = [
      ['sk-search', 'interactive', 'standard'], // above its bands: its highest
      ['sk-search', 'batch', 'batch'],
      ['sk-search', undefined, 'standard'], // its default
      ['sk-evals', 'interactive', 'batch'],
    ];
    for (const [key, asked, band] of cases) {
      const res = await post(router, key, {}, asked !== undefined ? { 'x-warmpath-priority': asked } : {});
      await res.body.dump();
      expect({ key, asked, band: agent.lastHeaders?.['x-warmpath-priority'] }).toEqual({ key, asked, band });
    }
    const s = await post(router, 'sk-chat', { stream: true });
    const text = await s.body.text();
    expect(text).toContain('data: [DONE]');
    const usage = (await (
      await request(`${router.url}/warmpath/v1/usage`, { headers: { authorization: 'Bearer sk-search' } })
    ).body.json()) as { tenants: Array<{ tenant: string; total: Record<string, number>; models: unknown[] }> };
    // A tenant's key sees its own usage only.
    expect(usage.tenants.map((t) => t.tenant)).toEqual(['search']);
    expect(usage.tenants[0]!.total).toEqual({ requests: 3, promptTokens: 15, cachedTokens: 0, completionTokens: 9 });
    const metrics = await (
      await request(`${router.url}/metrics`, { headers: { authorization: 'Bearer sk-chat' } })
    ).body.text();
    expect(metrics).toContain('warmpath_router_tenant_tokens_total{tenant="chat",kind="prompt"} 7');
    expect(metrics).toContain('warmpath_router_tenant_tokens_total{tenant="chat",kind="completion"} 4');
    const status = (await (
      await request(`${router.url}/warmpath/v1/status.json`, { headers: { authorization: 'Bearer sk-chat' } })
    ).body.json()) as { tenants: Array<{ tenant: string; lastMinute: { requests: number } }> };
    expect(status.tenants.map((t) => [t.tenant, t.lastMinute.requests])).toEqual([
      ['search', 3],
      ['chat', 1],
      ['evals', 1],
    ]);
  });

  it('re-reads the file when it changes; an invalid edit keeps the last good file and is counted', async () => {
    const { router, file } = await start(TENANTS, 'ok', { tenantsPollMs: 100 });
    writeFileSync(file, 'tenants:\n  - name: search\n    keys: []\n');
    await waitFor(
      async () => {
        const m = await (
          await request(`${router.url}/metrics`, { headers: { authorization: 'Bearer sk-search' } })
        ).body.text();
        return m.includes('warmpath_router_tenants_reloads_total{result="invalid"} 1');
      },
      { message: 'the invalid file counted' },
    );
    const still = await post(router, 'sk-chat');
    await still.body.dump();
    expect(still.statusCode).toBe(200);
    writeFileSync(file, 'tenants:\n  - name: fresh\n    keys: [sk-fresh]\n');
    await waitFor(() => router.tenancy!.tenants.has('fresh'), { message: 'the new file in force' });
    const gone = await post(router, 'sk-chat');
    await gone.body.dump();
    expect(gone.statusCode).toBe(401);
    const fresh = await post(router, 'sk-fresh');
    await fresh.body.dump();
    expect(fresh.statusCode).toBe(200);
  });

  it('refuses to start on an invalid file, naming each problem', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'tenants:\n  - name: a\n    keys: [k]\n    priorities: [urgent]\n  - name: a\n    keys: [k]\n    limits: { rpm: 5 }\n',
    );
    await expect(startRouter({ port: 0, gossip: false, tenants: file, log: () => {} })).rejects.toThrow(
      /tenants\[0\]\.priorities[\s\S]*tenants\[1\]\.limits\.rpm: unknown limit/,
    );
  });
});
