import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { FLOOD_BYTES, waitFor } from '@warmpath/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseRoute, startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';
import { chat, makeState } from './helpers.ts';

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) };
}

let seq = 1;
function announce(router: Router, id: string, url: string, extra: Parameters<typeof makeState>[1] = {}): void {
  router.view.apply(makeState(id, { fleet: 'default', url, seq: seq++, ...extra }));
}

/** Feeds the router states until it has heard the fleet for a whole stateTtlMs: only then is an unknown model a 404 rather than a retryable 503. */
async function settle(router: Router): Promise<void> {
  await waitFor(
    () => {
      announce(router, 'heard', 'http://127.0.0.1:1', { models: ['other'] });
      return router.view.settled(router.view.now());
    },
    { timeoutMs: 10_000, intervalMs: 100, message: 'the router to have heard the fleet for stateTtlMs' },
  );
}

describe('router HTTP: error shapes', () => {
  let router: Router;
  beforeAll(async () => {
    router = await startRouter({
      port: 0,
      gossip: false,
      maxBodyBytes: 4096,
      queueTimeoutMs: 100,
      stateTtlMs: 1_000,
      log: () => {},
    });
  });
  afterAll(() => router.close());

  it('malformed JSON → 400 invalid_json', async () => {
    const r = await post(router.url, '{nope');
    expect(r.status).toBe(400);
    expect(r.json().error).toMatchObject({ code: 'invalid_json', type: 'invalid_request_error' });
  });

  it('missing model → 400 model_required; unknown model → 404 model_not_found', async () => {
    expect((await post(router.url, { messages: [{ role: 'user', content: 'x' }] })).json().error.code).toBe(
      'model_required',
    );
    await settle(router);
    const r = await post(router.url, chat('x', { model: 'ghost' }));
    expect(r.status).toBe(404);
    expect(r.json().error).toMatchObject({ code: 'model_not_found', param: 'model' });
  });

  it('huge body → 413 body_too_large', async () => {
    const r = await post(router.url, chat('x'.repeat(10_000)));
    expect(r.status).toBe(413);
    expect(r.json().error.code).toBe('body_too_large');
  });

  it('known model but nothing ready → 503 no_replica with Retry-After', async () => {
    announce(router, 'down1', 'http://127.0.0.1:1', { status: 'down' });
    const r = await post(router.url, chat('x'));
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(r.json().error.code).toBe('no_replica');
  });

  it('saturated → waits in the queue, then 429 fleet_saturated with Retry-After', async () => {
    // Full, not too small: a request larger than every replica's KV is a 400 context_length_exceeded (input.test.ts).
    announce(router, 'full', 'http://127.0.0.1:1', {
      models: ['big'],
      capacity: { kvTokens: 100_000 },
      load: { kvUsedTokens: 100_000 },
    });
    const t0 = Date.now();
    const r = await post(router.url, chat('x', { model: 'big' }));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('1');
    expect(r.json().error.code).toBe('fleet_saturated');
  });

  it('embeddings for a model without an embedding replica → 404 unsupported_endpoint', async () => {
    await settle(router);
    announce(router, 'chatonly', 'http://127.0.0.1:1', { models: ['c'] });
    const res = await request(`${router.url}/v1/embeddings`, {
      method: 'POST',
      body: JSON.stringify({ model: 'c', input: 'x' }),
    });
    expect(res.statusCode).toBe(404);
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe('unsupported_endpoint');
  });

  it('unknown route → 404 not_found; wrong method → 405', async () => {
    const a = await request(`${router.url}/nope`);
    expect(a.statusCode).toBe(404);
    await a.body.dump();
    const b = await request(`${router.url}/v1/chat/completions`);
    expect(b.statusCode).toBe(405);
    await b.body.dump();
  });

  it('/healthz, /readyz and /metrics answer', async () => {
    expect((await request(`${router.url}/healthz`)).statusCode).toBe(200);
    const m = await (await request(`${router.url}/metrics`)).body.text();
    expect(m).toContain('warmpath_router_placements_total');
    expect(m).toContain('warmpath_router_replicas');
  });
});

describe('router HTTP: auth', () => {
  it('with --api-keys, a missing or unknown bearer key → 401 unauthorized', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wp-keys-'));
    writeFileSync(join(dir, 'keys'), '# comment\nsk-one\n\nsk-two\n');
    const router = await startRouter({
      port: 0,
      gossip: false,
      apiKeys: join(dir, 'keys'),
      stateTtlMs: 1_000,
      log: () => {},
    });
    try {
      await settle(router);
      const none = await post(router.url, chat('x'));
      expect(none.status).toBe(401);
      expect(none.json().error).toMatchObject({ code: 'unauthorized', type: 'authentication_error' });
      expect((await post(router.url, chat('x'), { authorization: 'Bearer sk-bad' })).status).toBe(401);
      expect((await post(router.url, chat('x', { model: 'ghost' }), { authorization: 'Bearer sk-two' })).status).toBe(
        404,
      );
      expect((await request(`${router.url}/healthz`)).statusCode).toBe(200);
    } finally {
      await router.close();
    }
  });
});

describe('router HTTP: proxying to fake agents', () => {
  const agents: FakeAgent[] = [];
  let router: Router | undefined;
  afterEach(async () => {
    await router?.close();
    router = undefined;
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });
  const start = async (...modes: Array<FakeAgent['mode']>) => {
    for (const [i, m] of modes.entries()) agents.push(await startFakeAgent(`a${i}`, m));
    router = await startRouter({ port: 0, gossip: false, id: 'r-test', log: () => {} });
    agents.forEach((a, i) => announce(router!, `a${i}`, a.url));
    return router;
  };

  it('routes non-streaming and streaming requests with the x-warmpath headers', async () => {
    const r = await start('ok', 'ok', 'ok');
    const a = await post(r.url, chat('hello'));
    expect(a.status).toBe(200);
    expect(a.headers['x-warmpath-router']).toBe('r-test');
    expect(a.headers['x-warmpath-route']).toBe('ring; step=cold; attempt=first; by=ring');
    const replica = a.headers['x-warmpath-replica'];
    expect(a.json().choices[0].message.content).toBe(`hello from ${replica}`);
    const s = await post(r.url, chat('hello', { stream: true }));
    expect(s.headers['content-type']).toContain('text/event-stream');
    expect(s.text).toContain('data: [DONE]');
    expect(s.headers['x-warmpath-replica']).toBe(replica); // same prefix key → same replica
    const agent = agents[Number(String(replica).slice(1))]!;
    expect(agent.lastHeaders!['x-warmpath-router']).toBe('r-test');
    // A first attempt carries warmpath's queue limit: the prefill the router expects there, this request's included.
    expect(Number(agent.lastHeaders!['x-warmpath-queue-limit'])).toBeGreaterThan(0);
    expect(JSON.parse(agent.lastBody).messages[1].content).toBe('hello');
  });

  it("retries another replica on an agent's 429 before the first byte", async () => {
    const r = await start('ok', 'ok');
    const home = (await post(r.url, chat('q'))).headers['x-warmpath-replica'] as string;
    const homeAgent = agents[Number(home.slice(1))]!;
    homeAgent.mode = 'reject';
    const res = await post(r.url, chat('q'));
    expect(res.status).toBe(200);
    expect(res.headers['x-warmpath-replica']).not.toBe(home);
    // The attempt's kind beside the step and branch that placed it (one router: the cold ring's next member).
    expect(parseRoute(res.headers['x-warmpath-route'] as string)).toMatchObject({ attempt: 'retry', step: 'cold' });
    expect(homeAgent.hits).toBe(2);
  });

  it('retries on connection refused and marks the replica suspect', async () => {
    const r = await start('ok', 'ok');
    const home = (await post(r.url, chat('q'))).headers['x-warmpath-replica'] as string;
    const dead = agents[Number(home.slice(1))]!;
    await dead.close();
    const res = await post(r.url, chat('q'));
    expect(res.status).toBe(200);
    expect(parseRoute(res.headers['x-warmpath-route'] as string)?.attempt).toBe('retry');
    const again = await post(r.url, chat('q'));
    expect(parseRoute(again.headers['x-warmpath-route'] as string)?.attempt).toBe('first'); // suspect: not tried again
    expect(again.headers['x-warmpath-replica']).not.toBe(home);
  });

  it('all replicas refuse → 429 fleet_saturated', async () => {
    const r = await start('reject', 'reject');
    const res = await post(r.url, chat('q'));
    expect(res.status).toBe(429);
    expect(res.json().error.code).toBe('fleet_saturated');
  });

  it('a failure mid-stream ends the stream with an SSE error event', async () => {
    const r = await start('die-mid-stream');
    const s = await post(r.url, chat('q', { stream: true }));
    expect(s.status).toBe(200);
    expect(s.text).toContain('data: {"id"');
    expect(s.text).toMatch(/data: \{"error":\{.*"code":"stream_interrupted"/);
    expect(agents[0]!.hits).toBe(1); // no retry after the first byte
  });

  it("an engine's error event inside a 200 stream is passed through and counted as interrupted", async () => {
    const r = await start('error-mid-stream');
    const s = await post(r.url, chat('q', { stream: true }));
    expect(s.status).toBe(200);
    expect(s.text).toContain('data: {"error":{"code":500,"message":"Failed to parse input"');
    expect(s.text).not.toContain('[DONE]');
    const m = await (await request(`${r.url}/metrics`)).body.text();
    expect(m).toMatch(/warmpath_router_upstream_errors_total\{kind="interrupted"\} 1/);
    // A healthy stream is not: the same router, one more request, still one.
    agents[0]!.mode = 'ok';
    expect((await post(r.url, chat('q2', { stream: true }))).text).toContain('[DONE]');
    expect(await (await request(`${r.url}/metrics`)).body.text()).toMatch(
      /warmpath_router_upstream_errors_total\{kind="interrupted"\} 1/,
    );
  });

  it('a client disconnect aborts the upstream request', async () => {
    const r = await start('slow-stream');
    const ac = new AbortController();
    const res = await request(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(chat('q', { stream: true })),
      signal: ac.signal,
    });
    for await (const _ of res.body) {
      ac.abort();
      break;
    }
    await waitFor(() => agents[0]!.aborted > 0, {
      timeoutMs: 2_000,
      intervalMs: 10,
      message: 'the upstream request to be aborted',
    });
    expect(agents[0]!.aborted).toBe(1);
  });

  it('a slow client holds the replica back: the router pauses the upstream stream instead of buffering it', async () => {
    const r = await start('flood');
    const res = await request(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(chat('q', { stream: true })),
    });
    expect(res.statusCode).toBe(200);
    const body = res.body[Symbol.asyncIterator]();
    let read = 0;
    while (read < 1024 * 1024) read += ((await body.next()).value as Buffer).length;
    // The client reads no more, its connection open: the router stops reading the replica, whose write() is
    // refused and whose 'drain' never comes. An unpaused relay would keep draining it (and buffer the 128 MiB).
    await agents[0]!.flood!.heldBack();
    expect(agents[0]!.flood!.written()).toBeLessThan(FLOOD_BYTES / 4);
    await body.return!();
    await waitFor(() => agents[0]!.aborted > 0, {
      timeoutMs: 5_000,
      intervalMs: 10,
      message: 'the upstream stream to be aborted',
    });
  });

  it('/v1/models lists base models and adapters with parent; /readyz is ready', async () => {
    const r = await start('ok');
    announce(r, 'lora', agents[0]!.url, { models: ['base'], adapters: ['fin'] });
    const body = (await (await request(`${r.url}/v1/models`)).body.json()) as {
      data: Array<{ id: string; parent: string | null }>;
    };
    expect(body.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: 'm', parent: null }),
        expect.objectContaining({ id: 'fin', parent: 'base' }),
      ]),
    );
    expect((await request(`${r.url}/readyz`)).statusCode).toBe(200);
  });
});
