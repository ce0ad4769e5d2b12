/**
 * The agent's request ids and access log over real HTTP, in front of the
 * simulator seen through a recording hop (what the engine receives): the id
 * and trace context reach the engine, the id comes back, one line per
 * request with the engine's usage and no prompt unless asked, and the
 * process metrics on the admin port.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { startSimServer, type SimServer } from '@warmpath/sim';
import { accessLine } from '@warmpath/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../src/index.ts';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const SECRET = 'the-prompt-words-5521';
type Line = Record<string, unknown>;

/** An HTTP hop in front of the simulator that records the headers of each inference request. */
async function recordingHop(
  target: string,
): Promise<{ url: string; seen: IncomingHttpHeaders[]; close(): Promise<void> }> {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/v1/') && req.method === 'POST') seen.push(req.headers);
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    request(`${target}${req.url}`, {
      method: req.method as 'GET' | 'POST',
      headers,
      body: req.method === 'POST' ? req : null,
    }).then(
      async (up) => {
        res.writeHead(up.statusCode, up.headers as Record<string, string>);
        for await (const chunk of up.body) res.write(chunk);
        res.end();
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

describe('agent request ids and access log', () => {
  let sim: SimServer;
  let hop: Awaited<ReturnType<typeof recordingHop>>;
  let agent: Agent;
  const lines: Line[] = [];
  const body = (extra: Record<string, unknown> = {}) => ({
    model: sim.modelName,
    messages: [{ role: 'user', content: `${SECRET} hello` }],
    max_tokens: 3,
    ...extra,
  });

  beforeAll(async () => {
    sim = await startSimServer({ port: 0, profile: 'tiny' });
    hop = await recordingHop(sim.url);
    agent = await startAgent(
      { engineUrl: hop.url, gossip: false, replicaId: 'obs-a' },
      { log: (l) => lines.push(JSON.parse(l) as Line) },
    );
  });
  afterAll(async () => {
    await agent.close();
    await hop.close();
    await sim.close();
  });

  it("passes the router's request id and the trace context to the engine and returns the id", async () => {
    const r = await post(agent.url, body(), {
      'x-request-id': 'from-router-1',
      traceparent: TRACEPARENT,
      'x-warmpath-attempt': '2',
    });
    expect(r.status).toBe(200);
    expect(r.headers['x-request-id']).toBe('from-router-1');
    expect(hop.seen.at(-1)).toMatchObject({ 'x-request-id': 'from-router-1', traceparent: TRACEPARENT });
    const line = await accessLine(lines, 'from-router-1');
    expect(line).toMatchObject({
      level: 'info',
      name: 'agent',
      replica: 'obs-a',
      status: 200,
      model: sim.modelName,
      stream: false,
      maxTokens: 3,
      promptTokens: expect.any(Number),
      cachedTokens: expect.any(Number),
      completionTokens: 3,
      attempt: 2,
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
    expect(line.ttftMs).toBeGreaterThan(0);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it('makes an id for a direct client, and the engine gets the same one', async () => {
    const r = await post(agent.url, body());
    const id = r.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(hop.seen.at(-1)!['x-request-id']).toBe(id);
    expect(hop.seen.at(-1)!.traceparent).toBeUndefined();
    expect(await accessLine(lines, id as string)).toMatchObject({ status: 200 });
  });

  it('logs a refusal with its reason', async () => {
    agent.core.ledger.draining = true;
    try {
      const r = await post(agent.url, body(), { 'x-request-id': 'refused-1' });
      expect(r.status).toBe(503);
      expect(r.headers['x-request-id']).toBe('refused-1');
      expect(await accessLine(lines, 'refused-1')).toMatchObject({ status: 503, refused: 'draining' });
    } finally {
      agent.core.ledger.draining = false;
    }
  });

  it('exposes the process metrics on the admin port', async () => {
    const text = await (await request(`${agent.adminUrl}/metrics`)).body.text();
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).not.toMatch(/^nodejs_active_handles_total /m);
  });
});

describe('agent access log with logPrompts', () => {
  it('puts the prompt in the line when asked', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny' });
    const lines: Line[] = [];
    const agent = await startAgent(
      { engineUrl: sim.url, gossip: false, logPrompts: true },
      { log: (l) => lines.push(JSON.parse(l) as Line) },
    );
    try {
      await post(
        agent.url,
        { model: sim.modelName, messages: [{ role: 'user', content: SECRET }], max_tokens: 2 },
        { 'x-request-id': 'p-1' },
      );
      expect(JSON.stringify((await accessLine(lines, 'p-1')).prompt)).toContain(SECRET);
    } finally {
      await agent.close();
      await sim.close();
    }
  });
});
