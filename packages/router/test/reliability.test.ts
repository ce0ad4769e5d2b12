/**
 * The router's HTTP transport under faults, against fake agents on
 * 127.0.0.1: 5xx retried and ejected, the SSE heartbeat (and the early commit
 * of a stream whose replica is still silent), the between-chunks and total
 * deadlines, readiness, the empty view, the connection cap and the drain.
 */
import { connect } from 'node:net';
import { request } from 'undici';
import { waitFor } from '@warmpath/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';
import { chat, makeState } from './helpers.ts';

async function post(url: string, body: unknown) {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

let seq = 1;
const agents: FakeAgent[] = [];
let router: Router | undefined;
afterEach(async () => {
  await router?.close();
  router = undefined;
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

async function start(
  modes: Array<FakeAgent['mode']>,
  options: Parameters<typeof startRouter>[0] = {},
  receivedAt?: number,
): Promise<Router> {
  for (const [i, m] of modes.entries()) agents.push(await startFakeAgent(`a${i}`, m));
  router = await startRouter({ port: 0, gossip: false, id: 'r-test', log: () => {}, ...options });
  announceAll(receivedAt);
  return router;
}
/** Every fake agent's state, as received at `receivedAt` (default now). */
function announceAll(receivedAt?: number): void {
  agents.forEach((a, i) =>
    router!.view.apply(
      makeState(`a${i}`, { fleet: 'default', url: a.url, seq: seq++ }),
      receivedAt ?? router!.view.now(),
    ),
  );
}

describe('router transport under faults', () => {
  it('a replica answering 500 is retried elsewhere and ejected after ejectAfterFailures; the client never sees the 500', async () => {
    const r = await start(['ok', 'ok', 'ok', 'ok'], { ejectAfterFailures: 2, ejectBaseMs: 60_000 });
    // Short distinct prompts: no prefix to share, so all share the model's ring home.
    const home = (await post(r.url, chat('q', {}, ''))).headers['x-warmpath-replica'] as string;
    const bad = agents[Number(home.slice(1))]!;
    bad.mode = 'error-500';
    bad.hits = 0;
    for (let i = 0; i < 10; i++) {
      const res = await post(r.url, chat(`q${i}`, {}, ''));
      expect(res.status).toBe(200);
      expect(res.headers['x-warmpath-replica']).not.toBe(home);
    }
    expect(bad.hits).toBe(2); // then ejected: no more traffic
    expect(r.local.isEjected(home, r.view.now())).toBe(true);
    const m = await (await request(`${r.url}/metrics`)).body.text();
    expect(m).toMatch(/warmpath_router_ejections_total 1/);
    expect(m).toMatch(/warmpath_router_ejected_replicas 1/);
    expect(m).toMatch(/warmpath_router_upstream_errors_total\{kind="failed"\} 2/);
  });

  it('a stream whose replica sends no headers for heartbeatMs is committed early and kept alive with SSE comments, then relayed', async () => {
    const r = await start(['late-headers'], { heartbeatMs: 100 });
    agents[0]!.delayMs = 450;
    const s = await post(r.url, chat('q', { stream: true }));
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toContain('text/event-stream');
    expect(s.headers['x-warmpath-replica']).toBe('a0');
    const beats = s.text.split(': keep-alive\n\n').length - 1;
    expect(beats).toBeGreaterThanOrEqual(2);
    expect(s.text.indexOf(': keep-alive')).toBeLessThan(s.text.indexOf('data: {'));
    expect(s.text).toContain('data: [DONE]');
    expect(s.text).toContain('"content":"a0"');
  });

  it('after an early commit, a replica that fails ends the stream with an SSE error event, not a status', async () => {
    const r = await start(['late-headers'], { heartbeatMs: 100, headersTimeoutMs: 300 });
    agents[0]!.delayMs = 5_000;
    const s = await post(r.url, chat('q', { stream: true }));
    expect(s.status).toBe(200);
    expect(s.text).toContain(': keep-alive');
    expect(s.text).toMatch(/data: \{"error":\{.*"code":"upstream_timeout"/);
  });

  it('silence between chunks: heartbeats at event boundaries, then stream_interrupted at the between-chunks deadline', async () => {
    const r = await start(['stall-mid-stream'], { heartbeatMs: 100, bodyTimeoutMs: 700 });
    agents[0]!.delayMs = 10_000;
    const t0 = performance.now();
    const s = await post(r.url, chat('q', { stream: true }));
    const ms = performance.now() - t0;
    expect(s.text).toMatch(/"content":"lo "\}\}\]\}\n\n: keep-alive\n\n/);
    expect(s.text).toMatch(/data: \{"error":\{.*"code":"stream_interrupted"/);
    expect(s.text).not.toContain('[DONE]');
    expect(ms).toBeGreaterThanOrEqual(600);
    expect(ms).toBeLessThan(5_000);
  });

  it('the total deadline ends a stream with upstream_timeout', async () => {
    const r = await start(['slow-stream'], { totalTimeoutMs: 300 });
    const s = await post(r.url, chat('q', { stream: true }));
    expect(s.text).toContain('data: {"id"');
    expect(s.text).toMatch(/data: \{"error":\{.*"code":"upstream_timeout"/);
    expect(s.text).not.toContain('[DONE]');
  });

  it('an empty view answers 503 no_replica with Retry-After for any model, and /readyz is 503; fresh state makes it ready, stale state unready again', async () => {
    const r = await start([], { stateTtlMs: 300 });
    const res = await post(r.url, chat('q', { model: 'anything' }));
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(JSON.parse(res.text).error.code).toBe('no_replica');
    expect((await request(`${r.url}/readyz`)).statusCode).toBe(503);
    agents.push(await startFakeAgent('a0'));
    announceAll();
    expect((await request(`${r.url}/readyz`)).statusCode).toBe(200);
    await waitFor(async () => (await request(`${r.url}/readyz`)).statusCode === 503, {
      timeoutMs: 5_000,
      message: '/readyz to fail once the state is stale',
    });
  });

  it('keeps routing on the last state while gossip is silent (the whole view stale), not on a replica gone silent alone', async () => {
    const r = await start(['ok', 'ok'], {}, Date.now() - 6_000); // nobody has said anything for two stateTtlMs
    r.view.sweep();
    expect(r.view.statusCounts().stale).toBe(2);
    expect((await post(r.url, chat('q'))).status).toBe(200);
    r.view.apply(makeState('a0', { fleet: 'default', url: agents[0]!.url, seq: seq++ })); // a0 speaks again, a1 stays silent
    r.view.sweep();
    for (let i = 0; i < 5; i++) expect((await post(r.url, chat(`q${i}`))).headers['x-warmpath-replica']).toBe('a0');
  });

  it('refuses connections over maxConnections', async () => {
    const r = await start(['ok'], { maxConnections: 2 });
    // Two kept-alive connections, each with an answered request: the server holds both.
    const held = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<ReturnType<typeof connect>>((resolve) => {
            const s = connect(r.port, '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'));
            s.once('data', () => resolve(s));
          }),
      ),
    );
    const third = connect(r.port, '127.0.0.1', () => third.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'));
    let answered = false;
    third.on('data', () => (answered = true));
    third.on('error', () => {});
    await new Promise<void>((resolve) => third.once('close', () => resolve()));
    expect(answered).toBe(false);
    for (const s of held) s.destroy();
    await waitFor(async () => (await post(r.url, chat('q'))).status === 200, {
      message: 'a request once the held connections are gone',
    });
  });

  it('drain: /readyz fails at once, an in-flight stream ends with [DONE], new connections are refused after the delay', async () => {
    const r = await start(['slow-stream'], { shutdownDelayMs: 100, shutdownTimeoutMs: 10_000 });
    const stream = post(r.url, chat('q', { stream: true }));
    await waitFor(() => agents[0]!.hits === 1, { message: 'the stream to reach the agent' });
    const drained = r.drain();
    const ready = await request(`${r.url}/readyz`);
    expect(ready.statusCode).toBe(503);
    expect(((await ready.body.json()) as { ready: boolean }).ready).toBe(false);
    const s = await stream;
    expect(s.text).toContain('data: [DONE]');
    await drained;
    await expect(request(`${r.url}/healthz`)).rejects.toThrow();
  });
});
