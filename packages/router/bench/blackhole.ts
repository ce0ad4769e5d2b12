/**
 * The black-hole replica, as a new user meets it: four tiny simulators, one
 * answering 500 to every request, one router with its defaults, 200 short
 * distinct chats four at a time. The failing one is the replica such chats
 * go to (the model's ring home, found with one request first), so it is the
 * worst case on any version. Prints how many were answered 200 and where
 * they went. Uses only flags and routes every version has, so it measures
 * old and new code alike (copy it into an older checkout to compare).
 *
 *   node packages/router/bench/blackhole.ts [requests=200] [concurrency=4]
 *
 * Smoke: 20 2
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { generateSwarmKey } from '@warmpath/shared/gossip';
import { scriptArgs } from '@warmpath/shared/runtime';

/** Positional arguments (the usage above); `--help` prints this file's header. */
const { positionals: argv } = scriptArgs(import.meta.url, { allowPositionals: true, options: {} });

const REQUESTS = Number(argv[0] ?? 200);
const CONCURRENCY = Number(argv[1] ?? 4);
const CLI = new URL('../../cli/src/main.ts', import.meta.url).pathname;
const children: ChildProcess[] = [];
// The fleet's gossip is private (a swarm key is required).
const swarmKey = join(mkdtempSync(join(tmpdir(), 'wp-blackhole-')), 'swarm.key');
writeFileSync(swarmKey, generateSwarmKey(), { mode: 0o600 });

function start(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`warmpath ${args[0]} exited ${code}`)));
  });
}
const field = (line: string, key: string): string => new RegExp(`${key}=(\\S+)`).exec(line)![1]!;

try {
  const router = await start(['router', '--port', '0', '--fleet', 'blackhole', '--swarm-key', swarmKey]);
  const url = field(router, 'url');
  const sims: Record<string, string> = {};
  for (let i = 0; i < 4; i++) {
    const sim = await start(['sim', '--port', '0', '--profile', 'tiny', '--speed', '4']);
    const simUrl = /(http:\/\/\S+)/.exec(sim)![1]!;
    sims[`replica-${i}`] = simUrl;
    await start([
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
      'blackhole',
      '--swarm-key',
      swarmKey,
      '--replica-id',
      `replica-${i}`,
      '--bootstrap',
      field(router, 'peer'),
    ]);
  }
  for (;;) {
    const body = (await (await request(`${url}/readyz`)).body.json()) as { replicas?: { ready?: number } };
    if ((body.replicas?.ready ?? 0) >= 4) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const model = ((await (await request(`${url}/v1/models`)).body.json()) as { data: Array<{ id: string }> }).data[0]!
    .id;
  const ask = (content: string) =>
    request(`${url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: 8 }),
    });
  const probe = await ask('where do short chats go?');
  await probe.body.dump();
  const bad = String(probe.headers['x-warmpath-replica']);
  await (
    await request(`${sims[bad]}/sim/v1/fault`, { method: 'POST', body: JSON.stringify({ errorRate: 1 }) })
  ).body.dump();
  const byStatus: Record<string, number> = {};
  const byReplica: Record<string, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const k = next++;
        const res = await ask(`question number ${k}: what is ${k} squared?`);
        await res.body.dump();
        byStatus[res.statusCode] = (byStatus[res.statusCode] ?? 0) + 1;
        const replica = String(res.headers['x-warmpath-replica'] ?? 'none');
        byReplica[replica] = (byReplica[replica] ?? 0) + 1;
      }
    }),
  );
  console.log(`${byStatus[200] ?? 0} of ${REQUESTS} answered 200 (${bad} fails every request)`);
  console.log(JSON.stringify({ byStatus, answeredBy: byReplica }));
} finally {
  for (const c of children) c.kill('SIGKILL');
}
