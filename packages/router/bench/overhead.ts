/**
 * Proxy overhead, side by side in one run: the same requests straight to an
 * instant upstream, through a warmpath router, through HAProxy and through
 * nginx (each a plain reverse proxy to that upstream).
 *
 * The upstream is an instant OpenAI-shaped responder in a process of its own
 * (so the figures are each proxy's own cost, not an engine's). Each router is a
 * separate `warmpath router` process fed by real gossip, its access log (one
 * line per request at the default level) written to /dev/null, its cost
 * included; WARMPATH_LOG_LEVEL=warn measures without it. HAProxy and nginx
 * run from configs generated into a temp dir, one thread / one worker
 * process each (the router is one event loop), nginx with its access log to
 * /dev/null too; a proxy whose binary is not installed is skipped, saying so.
 * `node-floor` is the least any proxy on Node's HTTP stack costs: node:http
 * in, undici out, nothing else (no validation, placement, logs or metrics).
 * `agent` is a `warmpath agent` in front of the same upstream (served as a
 * vLLM engine: the upstream also answers /v1/models and /metrics): what the
 * sidecar adds to every request on its host, its access log to /dev/null.
 * `socket-floor` is the least any proxy written for Node costs: node:net
 * sockets in and out, with no HTTP library, only enough HTTP/1.1 for this
 * bench (request and response heads scanned for Content-Length, keep-alive,
 * one upstream connection per client connection). It is a reference, not a
 * proxy anyone should run: no chunked bodies, no limits, no errors.
 *
 * Two cases: the small non-streaming chat at --concurrency (requests/s,
 * requests per core-second from the proxy process's CPU time in /proc, added
 * p50/p99 vs direct), and a --long-tokens prompt (≈ 4 characters a token) at
 * concurrency 1 (added p50/p99). Targets take turns within a round, and the
 * figures printed are the median over --rounds rounds (the machine is shared:
 * one round is noise).
 *
 * --router name=path/to/cli/main.ts adds a router from another checkout
 * (e.g. the main branch's, for a before/after in one run); repeatable.
 * --agent name=path/to/cli/main.ts does the same for the agent.
 *
 *   node packages/router/bench/overhead.ts [--seconds 5] [--concurrency 16] [--rounds 3]
 *        [--long-tokens 32768] [--long-seconds 3] [--proxies agent,haproxy,nginx,node-floor,socket-floor] [--router name=cli.ts] [--agent name=cli.ts]
 *        [--save rows.json]
 *
 * `--save` writes the medians printed, per target, as JSON (the figure in
 * docs/PERFORMANCE.md is drawn from it by packages/bench/bench/plot.ts).
 *
 * Smoke: --seconds 0.3 --rounds 1 --long-tokens 2048 --long-seconds 0.2
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Pool } from 'undici';
import { createGossipNode, generateSwarmKey } from '@warmpath/shared/gossip';
import { freePort, haproxyConfig, installed, nginxConfig, NODE_FLOOR_JS, SOCKET_FLOOR_JS } from './lib/proxies.ts';
import { encodeState } from '@warmpath/shared/wire';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values: args } = scriptArgs(import.meta.url, {
  options: {
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    'long-tokens': { type: 'string', default: '32768' },
    'long-seconds': { type: 'string', default: '3' },
    proxies: { type: 'string', default: 'agent,haproxy,nginx,node-floor,socket-floor' },
    router: { type: 'string', multiple: true, default: [] },
    agent: { type: 'string', multiple: true, default: [] },
    save: { type: 'string', default: '' },
  },
});
const SECONDS = Number(args.seconds);
const CONCURRENCY = Number(args.concurrency);
const ROUNDS = Number(args.rounds);
const LONG_TOKENS = Number(args['long-tokens']);
const LONG_SECONDS = Number(args['long-seconds']);
const CLI = new URL('../../cli/src/main.ts', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'wp-overhead-'));

// The upstream runs in its own process, so that neither the client's event loop nor the proxies' share it.
const UPSTREAM_JS = `
const answer = JSON.stringify({ id: 'x', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 50, completion_tokens: 1, total_tokens: 51 } });
// Enough of vLLM's GET endpoints for a warmpath agent to take it for an idle engine.
const gets = {
  '/v1/models': ['application/json', JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] })],
  '/metrics': ['text/plain', 'vllm:num_requests_running 0\\nvllm:num_requests_waiting 0\\nvllm:kv_cache_usage_perc 0\\nvllm:cache_config_info{engine="0",num_gpu_blocks="100000",block_size="16"} 1\\n'],
};
const server = require('node:http').createServer({ keepAliveTimeout: 120000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    const get = req.method === 'GET' ? gets[req.url] : undefined;
    if (get !== undefined) {
      res.writeHead(200, { 'content-type': get[0] });
      return res.end(get[1]);
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
    res.end(answer);
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;
const upstream = spawn(process.execPath, ['-e', UPSTREAM_JS], { stdio: ['ignore', 'pipe', 'inherit'] });
const upstreamPort = Number(
  await new Promise<string>((resolve) => createInterface({ input: upstream.stdout! }).once('line', resolve)),
);
const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;

/** A proxy under test: its URL and the pid whose CPU time is its cost (undefined: direct). */
interface Target {
  name: string;
  url: string;
  pid: number | undefined;
  child?: ChildProcess;
}

// ---- the router(s), fed by real gossip ----
const swarmKeyText = generateSwarmKey();
const swarmKey = join(dir, 'swarm.key');
writeFileSync(swarmKey, swarmKeyText, { mode: 0o600 });
const gossip = await createGossipNode({ fleet: 'overhead', swarmKey: swarmKeyText, onWarning: null });
await gossip.start();
let seq = 0;
const publish = (): void => {
  seq++;
  const state = {
    v: 1 as const,
    fleet: 'overhead',
    replica: 'up',
    boot: 'b',
    bootAt: 1,
    seq,
    sentAt: Date.now(),
    url: upstreamUrl,
    admin: upstreamUrl,
    engine: 'vllm' as const,
    models: ['m'],
    adapters: [],
    hotAdapters: [],
    endpoints: ['chat' as const],
    capacity: { kvTokens: 0, adapterSlots: 0, weight: 1, maxRunning: 0 },
    load: { running: 0, waiting: 0, kvUsedTokens: 0, inflight: 0, inflightTokens: 0, prefillTokens: 0 },
    status: 'ready' as const,
    chunkChars: 256,
    digest: { from: -1, added: new BigUint64Array(0), removed: new BigUint64Array(0), size: 0 },
  };
  gossip.publish(encodeState(state)).catch(() => {});
};
const timer = setInterval(publish, 250);

/**
 * A `warmpath <command>` process from `cli`: its ready line gives the URL to
 * load (`urlKey=`) and the one whose /readyz says it can serve (`readyKey=`).
 */
async function startWarmpath(
  name: string,
  cli: string,
  argv: string[],
  urlKey: string,
  readyKey = urlKey,
): Promise<Target> {
  const child = spawn(process.execPath, [cli, ...argv], { stdio: ['ignore', 'pipe', 'ignore'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${name} exited ${code}`)));
  });
  const field = (key: string): string => new RegExp(`${key}=(\\S+)`).exec(line)![1]!;
  const url = field(urlKey);
  for (let i = 0; i < 200; i++) {
    if ((await fetch(`${field(readyKey)}/readyz`)).status === 200) break;
    await new Promise((x) => setTimeout(x, 100));
  }
  return { name, url, pid: child.pid, child };
}

/** A router fed by this bench's gossip node. */
const startRouter = (name: string, cli: string): Promise<Target> =>
  startWarmpath(
    name,
    cli,
    ['router', '--port', '0', '--fleet', 'overhead', '--swarm-key', swarmKey, '--bootstrap', gossip.multiaddrs()[0]!],
    'url',
  );

/** A warmpath agent in front of the upstream (as its vLLM engine): what the sidecar costs a request. */
const startAgent = (name: string, cli: string): Promise<Target> =>
  startWarmpath(
    name,
    cli,
    ['agent', '--engine', 'vllm', '--engine-url', upstreamUrl, '--fleet', 'overhead', '--swarm-key', swarmKey],
    'proxy',
    'admin',
  );

// ---- HAProxy and nginx: configs generated here, one thread / worker each ----

async function startFloor(name: 'node-floor' | 'socket-floor'): Promise<Target> {
  const argv =
    name === 'node-floor'
      ? ['-e', NODE_FLOOR_JS, createRequire(import.meta.url).resolve('undici'), upstreamUrl]
      : ['-e', SOCKET_FLOOR_JS, upstreamUrl];
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  return { name, url: `http://127.0.0.1:${port}`, pid: child.pid, child };
}

async function startProxy(name: 'haproxy' | 'nginx'): Promise<Target | undefined> {
  if (!installed(name)) {
    console.log(`${name}: not installed, skipped (Debian: apt-get install ${name})`);
    return undefined;
  }
  const port = await freePort();
  const conf = join(dir, `${name}.cfg`);
  writeFileSync(conf, name === 'haproxy' ? haproxyConfig(port, upstreamPort) : nginxConfig(port, upstreamPort, dir));
  const argv = name === 'haproxy' ? ['-db', '-f', conf] : ['-c', conf, '-p', dir];
  const child = spawn(name, argv, { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited ${child.exitCode}`);
    const ok = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { name, url, pid: child.pid, child };
    await new Promise((x) => setTimeout(x, 50));
  }
  throw new Error(`${name} did not start`);
}

// ---- load ----
const cpuSeconds = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime in clock ticks (100/s)
};

const smallBody = JSON.stringify({
  model: 'm',
  messages: [
    { role: 'system', content: 'You are terse. '.repeat(20) },
    { role: 'user', content: 'Say ok.' },
  ],
  max_tokens: 1,
});
// Varied text (not one repeated word) so prefix hashing and JSON parsing see a realistic prompt.
const longText = Array.from(
  { length: Math.ceil((LONG_TOKENS * 4) / 48) },
  (_, i) => `Line ${String(i).padStart(6, '0')} of the shared document. `,
)
  .join('')
  .slice(0, LONG_TOKENS * 4);
const longBody = JSON.stringify({
  model: 'm',
  messages: [
    { role: 'system', content: longText },
    { role: 'user', content: 'Summarise.' },
  ],
  max_tokens: 1,
});

interface Run {
  lat: number[];
  rps: number;
  cpu: number;
}

async function load(t: Target, body: string, seconds: number, concurrency: number): Promise<Run> {
  const pool = new Pool(t.url, { connections: concurrency });
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const res = await pool.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`${t.name}: HTTP ${res.statusCode}`);
      lat.push(performance.now() - t0);
    }
  };
  const cpu0 = t.pid !== undefined ? cpuSeconds(t.pid) : 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const rps = lat.length / ((performance.now() - t0) / 1000);
  const cpu = t.pid !== undefined ? cpuSeconds(t.pid) - cpu0 : 0;
  await pool.close();
  lat.sort((a, b) => a - b);
  return { lat, rps, cpu };
}
const pct = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

// ---- the run ----
const direct: Target = { name: 'direct', url: upstreamUrl, pid: undefined };
const targets: Target[] = [direct, await startRouter('warmpath', CLI)];
for (const spec of args.router) {
  const eq = spec.indexOf('=');
  targets.push(await startRouter(spec.slice(0, eq), spec.slice(eq + 1)));
}
for (const spec of args.agent) {
  const eq = spec.indexOf('=');
  targets.push(await startAgent(spec.slice(0, eq), spec.slice(eq + 1)));
}
for (const name of args.proxies.split(',').filter((p) => p !== '')) {
  const t =
    name === 'agent'
      ? await startAgent('warmpath agent', CLI)
      : name === 'node-floor' || name === 'socket-floor'
        ? await startFloor(name)
        : await startProxy(name as 'haproxy' | 'nginx');
  if (t !== undefined) targets.push(t);
}

interface Row {
  rps: number[];
  perCore: number[];
  p50: number[];
  p99: number[];
  longP50: number[];
  longP99: number[];
}
const rows = new Map<string, Row>(
  targets.map((t) => [t.name, { rps: [], perCore: [], p50: [], p99: [], longP50: [], longP99: [] }]),
);
for (const t of targets) await load(t, smallBody, Math.min(1, SECONDS), CONCURRENCY); // warm-up (JIT, connections)
for (let round = 0; round < ROUNDS; round++) {
  for (const t of targets) {
    const r = rows.get(t.name)!;
    const small = await load(t, smallBody, SECONDS, CONCURRENCY);
    const long = LONG_TOKENS > 0 ? await load(t, longBody, LONG_SECONDS, 1) : undefined;
    r.rps.push(small.rps);
    r.perCore.push(small.cpu > 0 ? small.lat.length / small.cpu : NaN);
    r.p50.push(pct(small.lat, 50));
    r.p99.push(pct(small.lat, 99));
    if (long !== undefined) {
      r.longP50.push(pct(long.lat, 50));
      r.longP99.push(pct(long.lat, 99));
    }
  }
}

/** One target's medians: requests/s, requests per core-second (null for direct), added p50 / p99 ms (absolute for direct), same for the long prompt. */
interface Saved {
  target: string;
  rps: number;
  perCore: number | null;
  p50: number;
  p99: number;
  longP50: number | null;
  longP99: number | null;
}
const d = rows.get('direct')!;
const f = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '—');
console.log(
  `medians of ${ROUNDS} round(s); small non-streaming chat at concurrency ${CONCURRENCY}, ${SECONDS} s per run; ${LONG_TOKENS}-token prompt at concurrency 1, ${LONG_SECONDS} s per run`,
);
console.log(`client, upstream and proxies share this machine (${cpus().length} cores): timings are noisy under load`);
console.log(
  `${'target'.padEnd(15)} ${'req/s'.padStart(8)} ${'req/core-s'.padStart(11)} ${'added p50 ms'.padStart(13)} ${'added p99 ms'.padStart(13)} ${'long added p50'.padStart(15)} ${'long added p99'.padStart(15)}`,
);
const saved: Saved[] = [...rows].map(([name, r]) => {
  const self = name === 'direct';
  const added = (xs: number[], base: number[]): number => median(xs) - (self ? 0 : median(base));
  return {
    target: name,
    rps: median(r.rps),
    perCore: self ? null : median(r.perCore),
    p50: added(r.p50, d.p50),
    p99: added(r.p99, d.p99),
    longP50: LONG_TOKENS > 0 ? added(r.longP50, d.longP50) : null,
    longP99: LONG_TOKENS > 0 ? added(r.longP99, d.longP99) : null,
  };
});
for (const t of saved) {
  const ms = (x: number | null): string => (x === null ? '—' : t.target === 'direct' ? `${f(x, 3)} abs` : f(x, 3));
  console.log(
    `${t.target.padEnd(15)} ${f(t.rps, 0).padStart(8)} ${(t.perCore === null ? '—' : f(t.perCore, 0)).padStart(11)} ${ms(t.p50).padStart(13)} ${ms(t.p99).padStart(13)} ${ms(t.longP50).padStart(15)} ${ms(t.longP99).padStart(15)}`,
  );
}

if (args.save !== '')
  writeFileSync(
    args.save,
    `${JSON.stringify({ concurrency: CONCURRENCY, seconds: SECONDS, rounds: ROUNDS, longTokens: LONG_TOKENS, cores: cpus().length, targets: saved }, null, 1)}\n`,
  );

clearInterval(timer);
for (const t of targets) t.child?.kill('SIGTERM');
await gossip.stop();
upstream.kill('SIGTERM');
process.exit(0);
