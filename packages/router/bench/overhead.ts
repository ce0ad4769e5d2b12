/**
 * Router overhead: the same small non-streaming chat requests, straight to an
 * upstream and through a router process, side by side in one run.
 *
 * The upstream is an instant OpenAI-shaped responder (so the figures are the
 * router's own cost, not an engine's); the router runs as a separate
 * `warmpath router` process fed by real gossip, and its CPU time is read from
 * /proc to give requests/s per core. Its logs (one access-log line per
 * request at the default level) go to /dev/null, their cost included;
 * WARMPATH_LOG_LEVEL=warn measures without them.
 *
 *   node packages/router/bench/overhead.ts [seconds=5] [concurrency=16]
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { encodeState } from '@warmpath/shared/wire';
import { Pool } from 'undici';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGossipNode, generateSwarmKey } from '@warmpath/shared/gossip';

const SECONDS = Number(process.argv[2] ?? 5);
const CONCURRENCY = Number(process.argv[3] ?? 16);
const CLI = new URL('../../cli/src/main.ts', import.meta.url).pathname;

const answer = JSON.stringify({ id: 'x', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 50, completion_tokens: 1, total_tokens: 51 } });
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
    res.end(answer);
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const swarmKeyText = generateSwarmKey();
const swarmKey = join(mkdtempSync(join(tmpdir(), 'wp-bench-')), 'swarm.key');
writeFileSync(swarmKey, swarmKeyText, { mode: 0o600 });
const gossip = await createGossipNode({ fleet: 'overhead', swarmKey: swarmKeyText, onWarning: null });
await gossip.start();
let seq = 0;
const publish = (): void => {
  seq++;
  const state = {
    v: 1 as const, fleet: 'overhead', replica: 'up', boot: 'b', bootAt: 1, seq, sentAt: Date.now(), url: upstreamUrl, admin: upstreamUrl, engine: 'vllm' as const,
    models: ['m'], adapters: [], hotAdapters: [], endpoints: ['chat' as const], capacity: { kvTokens: 0, adapterSlots: 0, weight: 1, maxRunning: 0 },
    load: { running: 0, waiting: 0, kvUsedTokens: 0, inflight: 0, inflightTokens: 0, prefillTokens: 0 }, status: 'ready' as const, chunkChars: 256,
    digest: { from: -1, added: new BigUint64Array(0), removed: new BigUint64Array(0), size: 0 },
  };
  gossip.publish(encodeState(state)).catch(() => {});
};
const timer = setInterval(publish, 250);

const child = spawn(process.execPath, [CLI, 'router', '--port', '0', '--fleet', 'overhead', '--swarm-key', swarmKey, '--bootstrap', gossip.multiaddrs()[0]!], { stdio: ['ignore', 'pipe', 'ignore'] });
const line = await new Promise<string>((resolve, reject) => {
  createInterface({ input: child.stdout! }).once('line', resolve);
  child.once('exit', (code) => reject(new Error(`router exited ${code}`)));
});
const routerUrl = /url=(\S+)/.exec(line)![1]!;
for (let i = 0; i < 100; i++) {
  const r = await fetch(`${routerUrl}/readyz`);
  if (r.status === 200) break;
  await new Promise((x) => setTimeout(x, 100));
}

const cpuSeconds = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime in clock ticks (100/s)
};

const body = JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'You are terse. '.repeat(20) }, { role: 'user', content: 'Say ok.' }], max_tokens: 1 });

async function run(target: string, seconds: number, concurrency: number): Promise<{ lat: number[]; rps: number }> {
  const pool = new Pool(target, { connections: concurrency });
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t = performance.now();
      const res = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
      lat.push(performance.now() - t);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const rps = lat.length / ((performance.now() - t0) / 1000);
  await pool.close();
  lat.sort((a, b) => a - b);
  return { lat, rps };
}
const pct = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

await run(upstreamUrl, 1, CONCURRENCY); // warm-up
await run(routerUrl, 1, CONCURRENCY);
const row = (name: string, r: { lat: number[]; rps: number }): string =>
  `${name.padEnd(12)} p50 ${pct(r.lat, 50).toFixed(3)} ms  p99 ${pct(r.lat, 99).toFixed(3)} ms  ${r.rps.toFixed(0)} req/s`;
console.log(`small non-streaming chat, ${SECONDS} s per run; client, upstream and router share this machine (${(await import('node:os')).cpus().length} cores)`);
for (const c of [1, CONCURRENCY]) {
  const direct = await run(upstreamUrl, SECONDS, c);
  const cpu0 = cpuSeconds(child.pid!);
  const routed = await run(routerUrl, SECONDS, c);
  const cpu = cpuSeconds(child.pid!) - cpu0;
  console.log(`concurrency ${c}:`);
  console.log(`  ${row('direct', direct)}`);
  console.log(`  ${row('via router', routed)}`);
  console.log(`  added latency p50 ${(pct(routed.lat, 50) - pct(direct.lat, 50)).toFixed(3)} ms, p99 ${(pct(routed.lat, 99) - pct(direct.lat, 99)).toFixed(3)} ms; router CPU ${cpu.toFixed(2)} s for ${routed.lat.length} requests → ${(routed.lat.length / cpu).toFixed(0)} req/s per core`);
}

clearInterval(timer);
child.kill('SIGTERM');
await gossip.stop();
upstream.close();
process.exit(0);
