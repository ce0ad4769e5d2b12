/**
 * Proxy added latency: the same requests straight to the engine and through
 * the agent, interleaved in one run (same engine, same moment), so the
 * difference is the agent's cost: body read, JSON parse, prefix hashing,
 * admission, one more loopback hop, and streaming relay.
 *
 * Reports p50/p99 of time-to-first-byte (streaming) and total time
 * (non-streaming), direct vs agent, at concurrency 1 and 8. Simulator and
 * agent run as separate processes (the `warmpath` CLI), as deployed; the load
 * generator is this process. Their logs (the agent's access log at the
 * default level) go to /dev/null, their cost included.
 *
 * Run: node packages/agent/bench/proxy.ts [--requests N] [--prompt-chars C]
 *
 * Smoke: --requests 20 --prompt-chars 2000
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSwarmKey } from '@warmpath/shared/gossip';
import { scriptArgs } from '@warmpath/shared/runtime';

const MAIN = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));
const children: ChildProcess[] = [];
async function launch(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${args[0]} exited ${code}`)));
  });
}

const { values } = scriptArgs(import.meta.url, {
  options: {
    requests: { type: 'string', default: '600' },
    'prompt-chars': { type: 'string', default: '8000' },
    speed: { type: 'string', default: '100' },
  },
});
const N = Number(values.requests);
const PROMPT = Number(values['prompt-chars']);

/** The fleet's swarm key, as every deployment has one. */
const swarmKey = join(mkdtempSync(join(tmpdir(), 'wp-bench-')), 'swarm.key');
writeFileSync(swarmKey, generateSwarmKey(), { mode: 0o600 });

const simLine = await launch(['sim', '--port', '0', '--profile', 'h100-llama3-8b', '--speed', String(values.speed)]);
const simUrl = /http:\/\/127\.0\.0\.1:\d+/.exec(simLine)![0];
const agentLine = await launch([
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
  'bench-proxy',
  '--swarm-key',
  swarmKey,
]);
const agentUrl = /proxy=(\S+)/.exec(agentLine)![1]!;
const model = ((await (await fetch(`${simUrl}/v1/models`)).json()) as { data: Array<{ id: string }> }).data[0]!.id;
const direct = new Pool(simUrl, { connections: 64 });
const viaAgent = new Pool(agentUrl, { connections: 64 });

const system = 'You are a helpful assistant. '.repeat(Math.ceil(PROMPT / 29)).slice(0, PROMPT);
let n = 0;

async function one(pool: Pool, stream: boolean): Promise<{ ttfb: number; total: number }> {
  const body = JSON.stringify({
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: `question ${n++}` },
    ],
    max_tokens: 16,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });
  const t0 = performance.now();
  const res = await pool.request({
    path: '/v1/chat/completions',
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
  });
  let ttfb = -1;
  for await (const _chunk of res.body) if (ttfb < 0) ttfb = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
  return { ttfb, total: performance.now() - t0 };
}

const q = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

async function run(concurrency: number, stream: boolean, print = true): Promise<void> {
  const d: number[] = [];
  const a: number[] = [];
  let left = N;
  // Each worker alternates direct/agent so both see the same engine state over time.
  const worker = async (w: number): Promise<void> => {
    let flip = w % 2 === 0;
    while (left-- > 0) {
      flip = !flip;
      const r = await one(flip ? viaAgent : direct, stream);
      (flip ? a : d).push(stream ? r.ttfb : r.total);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  if (!print) return;
  const what = stream ? 'TTFB (stream)' : 'total (non-stream)';
  const f = (x: number): string => `${x.toFixed(2)} ms`;
  console.log(
    `  c=${String(concurrency).padEnd(2)} ${what.padEnd(20)} direct p50 ${f(q(d, 0.5))} p99 ${f(q(d, 0.99))} | agent p50 ${f(q(a, 0.5))} p99 ${f(q(a, 0.99))} | added p50 ${f(q(a, 0.5) - q(d, 0.5))} p99 ${f(q(a, 0.99) - q(d, 0.99))}`,
  );
}

console.log(
  `proxy bench: ${N} requests per row, ${PROMPT}-char prompts, 16 output tokens, sim h100-llama3-8b at speed ${values.speed}`,
);
await run(1, false, false); // warm-up (keep-alive, JIT)
for (const c of [1, 8]) for (const stream of [true, false]) await run(c, stream);
await direct.close();
await viaAgent.close();
for (const c of children) c.kill('SIGTERM');
