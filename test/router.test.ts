/**
 * End to end across real processes: simulators, agents and routers talking
 * real HTTP and real gossip on loopback, driven by the official openai SDK.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { request } from 'undici';
import { spawnUntilLine, waitFor } from '@warmpath/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = new URL('../packages/cli/src/main.ts', import.meta.url).pathname;
/** The fleet's swarm key, made as an operator would: `warmpath keygen > swarm.key`. */
const SWARM_KEY = join(mkdtempSync(join(tmpdir(), 'wp-e2e-')), 'swarm.key');
writeFileSync(SWARM_KEY, execFileSync(process.execPath, [CLI, 'keygen']));
const children: ChildProcess[] = [];

/** Starts `warmpath <args>` and resolves with its first stdout line. */
async function start(args: string[]): Promise<{ child: ChildProcess; line: string }> {
  const { child, line } = spawnUntilLine(process.execPath, [CLI, ...args]);
  children.push(child);
  return { child, line: await line };
}
const field = (line: string, key: string): string => new RegExp(`${key}=(\\S+)`).exec(line)![1]!;

interface Fleet {
  routers: Array<{ child: ChildProcess; url: string; peer: string }>;
  agents: Array<{ child: ChildProcess; url: string; replica: string; peer: string }>;
}

async function startRouter(bootstrap: string[], port = 0): Promise<Fleet['routers'][number]> {
  const { child, line } = await start([
    'router',
    '--port',
    String(port),
    '--fleet',
    'e2e',
    '--swarm-key',
    SWARM_KEY,
    '--shutdown-delay-ms',
    '0',
    ...bootstrap.flatMap((b) => ['--bootstrap', b]),
  ]);
  return { child, url: field(line, 'url'), peer: field(line, 'peer') };
}

async function waitReady(url: string, replicas: number): Promise<void> {
  await waitFor(
    async () => {
      const body = (await (await request(`${url}/readyz`)).body.json()) as { replicas?: { ready?: number } };
      const ready = body.replicas?.ready ?? 0;
      if (ready < replicas) throw new Error(`router ${url} saw ${ready}/${replicas} ready replicas`);
      return true;
    },
    { timeoutMs: 30_000, intervalMs: 100, message: `router ${url} to see ${replicas} ready replicas` },
  );
}

const SYSTEM = 'You are the support assistant of a large company. '.repeat(60);
const fleet: Fleet = { routers: [], agents: [] };

beforeAll(async () => {
  const r0 = await startRouter([]);
  const r1 = await startRouter([r0.peer]);
  fleet.routers.push(r0, r1);
  const sims = await Promise.all(
    [0, 1, 2].map(() => start(['sim', '--port', '0', '--profile', 'tiny', '--speed', '4'])),
  );
  for (const [i, s] of sims.entries()) {
    const simUrl = /(http:\/\/\S+)/.exec(s.line)![1]!;
    const a = await start([
      'agent',
      '--engine',
      'vllm',
      '--engine-url',
      simUrl,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--fleet',
      'e2e',
      '--swarm-key',
      SWARM_KEY,
      '--replica-id',
      `agent-${i}`,
      '--bootstrap',
      r0.peer,
      '--bootstrap',
      r1.peer,
    ]);
    fleet.agents.push({
      child: a.child,
      url: field(a.line, 'proxy'),
      replica: `agent-${i}`,
      peer: field(a.line, 'peer'),
    });
  }
  await Promise.all(fleet.routers.map((r) => waitReady(r.url, 3)));
});

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });

describe('warmpath router end to end', () => {
  it('serves the openai SDK, streaming and not, with routing headers', async () => {
    const ai = client(fleet.routers[0]!.url);
    const models = await ai.models.list();
    expect(models.data.length).toBeGreaterThan(0);
    const model = models.data[0]!.id;
    const { data, response } = await ai.chat.completions
      .create({
        model,
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'hello' },
        ],
        max_tokens: 8,
      })
      .withResponse();
    expect(data.choices[0]!.message.content).toBeTruthy();
    expect(response.headers.get('x-warmpath-replica')).toMatch(/^agent-/);
    expect(response.headers.get('x-warmpath-route')).toMatch(
      /^(ring|warm|spill); step=(cold|warm); attempt=first; by=\w+$/,
    );
    const stream = await ai.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'stream please' }],
      max_tokens: 8,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it("a content part type the engine does not know passes the router's schema and comes back as the engine's 400", async () => {
    const model = (await client(fleet.routers[0]!.url).models.list()).data[0]!.id;
    const res = await request(`${fleet.routers[0]!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'f-1' } }] }],
        max_tokens: 4,
      }),
    });
    const body = (await res.body.json()) as { error: { param: string; message: string } };
    expect(res.statusCode).toBe(400);
    expect(body.error.param).toBe('type');
    expect(body.error.message).toMatch(/^Unsupported chat content part type: 'file'/);
    expect(res.headers['x-warmpath-replica']).toMatch(/^agent-/); // answered by a replica, not the router
  });

  it('two routers pick the same replica for the same requests, and a shared prefix stays on one replica', async () => {
    const model = (await client(fleet.routers[0]!.url).models.list()).data[0]!.id;
    const picks: string[][] = [[], []];
    for (let k = 0; k < 6; k++) {
      for (const [i, r] of fleet.routers.entries()) {
        const res = await request(`${r.url}/v1/chat/completions`, {
          method: 'POST',
          body: JSON.stringify({
            model,
            messages: [
              { role: 'system', content: SYSTEM },
              { role: 'user', content: `question ${k}` },
            ],
            max_tokens: 4,
          }),
        });
        await res.body.dump();
        picks[i]!.push(String(res.headers['x-warmpath-replica']));
      }
    }
    expect(picks[0]).toEqual(picks[1]);
    expect(new Set(picks[0]).size).toBe(1);
  });

  it('a fan-out routing key keeps an agent swarm together', async () => {
    const model = (await client(fleet.routers[0]!.url).models.list()).data[0]!.id;
    const seen = new Set<string>();
    await Promise.all(
      Array.from({ length: 6 }, async (_, k) => {
        const res = await request(`${fleet.routers[k % 2]!.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'x-warmpath-key': 'swarm-42' },
          body: JSON.stringify({
            model,
            messages: [{ role: 'user', content: `sub-task ${k} ${'x'.repeat(k * 300)}` }],
            max_tokens: 4,
          }),
        });
        await res.body.dump();
        expect(res.statusCode).toBe(200);
        seen.add(String(res.headers['x-warmpath-replica']));
      }),
    );
    expect(seen.size).toBeLessThanOrEqual(2); // the key's home, plus at most one deterministic spill
  });

  it('a replica killed mid-stream ends the stream with an error event; the next request goes elsewhere', async () => {
    const r = fleet.routers[0]!;
    const model = (await client(r.url).models.list()).data[0]!.id;
    const res = await request(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: 'tell a long story' }],
        max_tokens: 400,
        stream: true,
      }),
    });
    const replica = String(res.headers['x-warmpath-replica']);
    const victim = fleet.agents.find((a) => a.replica === replica)!;
    let text = '';
    let killed = false;
    for await (const chunk of res.body) {
      text += chunk.toString();
      if (!killed && text.includes('data: {')) {
        killed = true;
        victim.child.kill('SIGKILL');
      }
    }
    expect(text).toContain('"code":"stream_interrupted"');
    const again = await request(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'tell a long story' }], max_tokens: 4 }),
    });
    await again.body.dump();
    expect(again.statusCode).toBe(200);
    expect(again.headers['x-warmpath-replica']).not.toBe(replica);
  });

  it('a restarted router relearns the fleet from gossip and routes again', async () => {
    const old = fleet.routers[1]!;
    const port = Number(new URL(old.url).port);
    old.child.kill('SIGTERM');
    await new Promise((r) => old.child.once('exit', r));
    // It dials the agents itself: a router takes an agent's state only over a direct connection (docs/SECURITY.md).
    const again = await startRouter(
      [
        fleet.routers[0]!.peer,
        ...fleet.agents.filter((a) => a.child.exitCode === null && a.child.signalCode === null).map((a) => a.peer),
      ],
      port,
    );
    fleet.routers[1] = again;
    await waitReady(again.url, 2);
    const model = (await client(again.url).models.list()).data[0]!.id;
    const out = await client(again.url).chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'back?' }],
      max_tokens: 4,
    });
    expect(out.choices[0]!.message.content).toBeTruthy();
  });
});
