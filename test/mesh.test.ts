/**
 * Discovery and the router mesh end to end, across real processes on
 * loopback: router r0 listens on 127.0.0.1 with an identity file; router r1
 * and an agent find r0 only through `--bootstrap-dns localhost:<port>` (the
 * OS resolver; `localhost` also resolves to ::1, where nothing listens, and
 * that address is simply passed over). The agent can reach r0 alone, yet r1
 * holds its replica — relayed by r0 through the mesh and accepted under the
 * relayed-state rule — and serves requests to it.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { spawnUntilLine, waitFor } from '@warmpath/testkit';
import { afterAll, describe, expect, it } from 'vitest';

const CLI = new URL('../packages/cli/src/main.ts', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'wp-mesh-e2e-'));
const SWARM_KEY = join(dir, 'swarm.key');
writeFileSync(SWARM_KEY, execFileSync(process.execPath, [CLI, 'keygen']));
const children: ChildProcess[] = [];

async function start(args: string[]): Promise<string> {
  const { child, line } = spawnUntilLine(process.execPath, [CLI, ...args]);
  children.push(child);
  return line;
}
const field = (line: string, key: string): string => new RegExp(`${key}=(\\S+)`).exec(line)![1]!;

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('--bootstrap-dns and the router mesh, real processes', () => {
  it('an agent that reaches one router by DNS name is served by another router through the mesh', async () => {
    const common = ['--fleet', 'mesh-e2e', '--swarm-key', SWARM_KEY];
    const identity = join(dir, 'r0.key');
    const r0 = await start([
      'router',
      '--port',
      '0',
      '--gossip-listen',
      '/ip4/127.0.0.1/tcp/0',
      '--identity-file',
      identity,
      ...common,
    ]);
    const port = /\/tcp\/(\d+)/.exec(field(r0, 'peer'))![1]!;
    // The identity file was created on first start and holds r0's peer id.
    expect(existsSync(identity)).toBe(true);
    expect(execFileSync(process.execPath, [CLI, 'keygen', '--identity', identity], { encoding: 'utf8' }).trim()).toBe(
      /\/p2p\/(\w+)/.exec(field(r0, 'peer'))![1],
    );
    const dns = ['--bootstrap-dns', `localhost:${port}`, '--bootstrap-dns-interval-ms', '1000'];
    const r1 = await start(['router', '--port', '0', '--shutdown-delay-ms', '0', ...dns, ...common]);
    const sim = /(http:\/\/\S+)/.exec(await start(['sim', '--port', '0', '--profile', 'tiny', '--speed', '4']))![1]!;
    await start([
      'agent',
      '--engine',
      'vllm',
      '--engine-url',
      sim,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--replica-id',
      'dns-0',
      ...dns,
      ...common,
    ]);
    const r1Url = field(r1, 'url');
    await waitFor(
      async () => {
        const body = (await (await request(`${r1Url}/readyz`)).body.json()) as { replicas?: { ready?: number } };
        return (body.replicas?.ready ?? 0) >= 1;
      },
      { timeoutMs: 30_000, intervalMs: 200, message: 'router r1 to hold the agent r0 relays, ready' },
    );
    const models = (await (await request(`${r1Url}/v1/models`)).body.json()) as { data: Array<{ id: string }> };
    const res = await request(`${r1Url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: models.data[0]!.id,
        messages: [{ role: 'user', content: 'hello through the mesh' }],
        max_tokens: 4,
      }),
    });
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(200);
    expect(res.headers['x-warmpath-replica']).toBe('dns-0');
  }, 60_000);
});
