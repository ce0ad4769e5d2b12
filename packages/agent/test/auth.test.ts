/**
 * Auth between tiers at the agent: the routers' shared token on the proxy
 * port and the admin API (the probes stay open), and the engine's own API key
 * sent to the engine in place of whatever the client sent.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimServer, type SimServer } from '@warmpath/sim';
import { startAgent, type Agent } from '../src/index.ts';
import { chatBody, post } from './helpers.ts';

/** A pass-through in front of the simulator that records the headers of every request the engine gets. */
async function recordingEngine(
  target: string,
): Promise<{ url: string; seen: Array<{ path: string; headers: IncomingHttpHeaders }>; server: Server }> {
  const seen: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    const up = httpRequest(`${target}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    // The simulator closing under an in-flight scrape (teardown) resets this hop: end the exchange, not the test process.
    up.on('error', () => res.destroy());
    req.on('error', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe('agent auth', () => {
  let sim: SimServer;
  let engine: Awaited<ReturnType<typeof recordingEngine>>;
  let agent: Agent;
  const dir = mkdtempSync(join(tmpdir(), 'wp-agent-auth-'));
  beforeAll(async () => {
    sim = await startSimServer({ port: 0, profile: 'tiny', speed: 20 });
    engine = await recordingEngine(sim.url);
    writeFileSync(join(dir, 'token'), '# routers present this\ntier-secret\n');
    writeFileSync(join(dir, 'engine-key'), 'engine-secret\n');
    agent = await startAgent({
      engineUrl: engine.url,
      gossip: false,
      agentToken: join(dir, 'token'),
      engineApiKey: join(dir, 'engine-key'),
    });
  });
  afterAll(async () => {
    await agent?.close();
    engine?.server.close();
    await sim?.close();
  });

  it('the proxy refuses requests without the routers token (401); with it they reach the engine', async () => {
    const body = chatBody(sim.modelName, 'system', 'hi', { max_tokens: 2 });
    const none = await post(`${agent.url}/v1/chat/completions`, body);
    expect(none.status).toBe(401);
    expect(JSON.parse(none.text).error.code).toBe('unauthorized');
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect((await post(`${agent.url}/v1/chat/completions`, body, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await fetch(`${agent.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${agent.url}/healthz`)).status).toBe(200);
    const before = engine.seen.filter((s) => s.path === '/v1/chat/completions').length;
    expect(before).toBe(0);
    const ok = await post(`${agent.url}/v1/chat/completions`, body, { authorization: 'Bearer tier-secret' });
    expect(ok.status).toBe(200);
  });

  it("the engine gets its own key, never the routers' token, on requests and scrapes", async () => {
    const chats = engine.seen.filter((s) => s.path === '/v1/chat/completions');
    expect(chats.length).toBe(1);
    const scrapes = engine.seen.filter((s) => s.path === '/metrics' || s.path === '/v1/models');
    expect(scrapes.length).toBeGreaterThan(0);
    for (const s of [...chats, ...scrapes]) expect(s.headers.authorization).toBe('Bearer engine-secret');
  });

  it('the admin API needs the token, except the probes', async () => {
    for (const path of ['/warmpath/v1/digest', '/warmpath/v1/state', '/metrics']) {
      const res = await fetch(`${agent.adminUrl}${path}`);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      expect(
        (await fetch(`${agent.adminUrl}${path}`, { headers: { authorization: 'Bearer tier-secret' } })).status,
      ).toBe(200);
    }
    for (const path of ['/healthz', '/readyz']) expect((await fetch(`${agent.adminUrl}${path}`)).status).toBe(200);
  });

  it("without a token or an engine key, the client's Authorization reaches the engine as before", async () => {
    const open = await startAgent({ engineUrl: engine.url, gossip: false });
    try {
      const r = await post(`${open.url}/v1/chat/completions`, chatBody(sim.modelName, 'sys', 'yo', { max_tokens: 2 }), {
        authorization: 'Bearer client-key',
      });
      expect(r.status).toBe(200);
      expect(engine.seen.filter((s) => s.path === '/v1/chat/completions').at(-1)?.headers.authorization).toBe(
        'Bearer client-key',
      );
    } finally {
      await open.close();
    }
  });
});
