/**
 * The soak: a live fleet (simulators, agents, one router, real gossip)
 * under mixed streaming traffic for a long time, watching every process for
 * leaks and every request for loss.
 *
 * Steps: start the fleet through soak-child.ts (each process reports its RSS,
 * live heap after a full collection, open fds and active handles every
 * sample period) → run
 * `concurrency` closed-loop clients for `seconds`, each request drawn from a
 * fixed mix (streams with a shared system prompt, plain answers, streams the
 * client abandons after a few chunks, streamed completions) → print a line
 * per sample period → compare each process's first and last fifth of the
 * traffic's samples → then open `burst` streams at once through the router
 * (last, so its idle connections do not blur the drift).
 * Complexity: O(requests + samples).
 * Trade-off: closed-loop clients keep the fleet busy but never overload it,
 * so an error is a fault, not saturation; overload is the benchmark's job.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { mulberry32 } from '@warmpath/shared/runtime';
import { launchFleet, type LocalFleet } from '@warmpath/launch';

export interface SoakOptions {
  /** Seconds of mixed traffic. */
  readonly seconds: number;
  /** Requests in flight at once during the soak. */
  readonly concurrency: number;
  /** Streams opened at once through the router after the soak (0 = none). */
  readonly burst: number;
  /** Seconds between samples. */
  readonly sampleEverySec: number;
  readonly replicas: number;
  /** Simulator speed (simulated time per wall time). */
  readonly speed: number;
  readonly seed: number;
}

export const SOAK_DEFAULTS: SoakOptions = Object.freeze({
  seconds: 600,
  concurrency: 32,
  burst: 1_000,
  sampleEverySec: 10,
  replicas: 2,
  speed: 1,
  seed: 1,
});

export interface Sample {
  /** Seconds since the soak's traffic started (past `seconds`: the burst). */
  readonly atSec: number;
  readonly proc: string;
  readonly rss: number;
  readonly heap: number;
  readonly fds: number;
  readonly handles: number;
}

export interface Tally {
  sent: number;
  ok: number;
  /** Streams the client abandoned on purpose. */
  abandoned: number;
  /** Failures by status and error code. */
  errors: Record<string, number>;
}

export interface Drift {
  readonly proc: string;
  /** Means of the first and the last fifth of the soak's samples. */
  readonly rssMb: readonly [number, number];
  readonly heapMb: readonly [number, number];
  readonly fds: readonly [number, number];
  readonly handles: readonly [number, number];
}

export interface SoakReport {
  readonly burst: (Tally & { ms: number }) | undefined;
  readonly soak: Tally;
  readonly samples: Sample[];
  readonly drift: Drift[];
}

const SOAK_CHILD = new URL('./soak-child.ts', import.meta.url).pathname;
const SYSTEMS = [
  'You are the support assistant of a bank. ',
  'You translate product manuals into plain English. ',
  'You review pull requests for a database team. ',
].map((s) => s.repeat(40));

export async function runSoak(o: SoakOptions, log: (line: string) => void = console.log): Promise<SoakReport> {
  /** Samples as they come, stamped with the wall clock (ms); atSec is counted from the traffic's start at the end. */
  const raw: Array<Omit<Sample, 'atSec'> & { at: number }> = [];
  let t0 = Infinity;
  const fleet = await launchFleet({
    replicas: o.replicas,
    routers: 1,
    speed: o.speed,
    script: SOAK_CHILD,
    env: {
      WARMPATH_SOAK_SAMPLE_MS: String(o.sampleEverySec * 1_000),
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc`.trim(),
    },
  });
  const client = new Agent({ connections: o.concurrency + 4 });
  try {
    for (const p of [...fleet.routers, ...fleet.agents, ...fleet.sims])
      watch(p, (s) => raw.push({ at: performance.now(), proc: p.name, ...s }));
    await fleet.waitConverged();
    const url = fleet.routerUrls[0]!;
    const model = (
      (await (await request(`${url}/v1/models`, { dispatcher: client })).body.json()) as { data: Array<{ id: string }> }
    ).data[0]!.id;
    t0 = performance.now();
    const soak: Tally = { sent: 0, ok: 0, abandoned: 0, errors: {} };
    const progress = (): void => printProgress(fleet, raw, soak, t0, o, log);
    await runTraffic(url, model, o, client, soak, progress);
    progress();
    const inSoak = raw.filter((s) => s.at >= t0).length;
    log(
      `requests: ${soak.sent} sent, ${soak.ok} complete, ${soak.abandoned} abandoned by the client on purpose, errors ${JSON.stringify(soak.errors)}`,
    );
    const burst = o.burst > 0 ? await runBurst(url, model, o.burst) : undefined;
    if (burst !== undefined)
      log(
        `burst: ${o.burst} streams at once through one router in ${burst.ms} ms: ${burst.ok} complete, errors ${JSON.stringify(burst.errors)}`,
      );
    const samples = raw.map(({ at, ...s }) => ({ atSec: Math.round((at - t0) / 100) / 10, ...s }));
    const d = drift(samples.filter((s) => s.atSec >= 0).slice(0, inSoak));
    for (const x of d)
      log(
        `drift ${x.proc}: rss ${x.rssMb[0]} → ${x.rssMb[1]} MB, heap ${x.heapMb[0]} → ${x.heapMb[1]} MB, fds ${x.fds[0]} → ${x.fds[1]}, handles ${x.handles[0]} → ${x.handles[1]}`,
      );
    return { burst, soak, samples, drift: d };
  } finally {
    await client.close();
    await fleet.stop();
  }
}

/** Collect a process's soak-sample lines. */
function watch(p: LocalFleet['routers'][number], onSample: (s: Omit<Sample, 'atSec' | 'proc'>) => void): void {
  let buf = '';
  p.child.stderr!.on('data', (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith('soak-sample ')) onSample(JSON.parse(line.slice(12)) as Omit<Sample, 'atSec' | 'proc'>);
    }
  });
}

type Kind = 'stream' | 'plain' | 'abandon' | 'completion';
/** The mix: mostly streams, some plain answers, some abandoned streams, some completions. */
const MIX: ReadonlyArray<[Kind, number]> = [
  ['stream', 0.6],
  ['plain', 0.2],
  ['abandon', 0.1],
  ['completion', 0.1],
];

function pick(random: () => number): Kind {
  let x = random();
  for (const [k, p] of MIX) if ((x -= p) < 0) return k;
  return 'stream';
}

/** One request of the mix; resolves with 'ok', 'abandoned' or an error key. */
async function one(
  url: string,
  model: string,
  kind: Kind,
  n: number,
  random: () => number,
  client: Dispatcher,
): Promise<string> {
  const maxTokens = 8 + Math.floor(random() * 56);
  const system = SYSTEMS[n % SYSTEMS.length]!;
  const chat = {
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: `request ${n}: ${random()}` },
    ],
    max_tokens: maxTokens,
  };
  const [path, body] =
    kind === 'completion'
      ? ['/v1/completions', { model, prompt: `${system} request ${n}`, max_tokens: maxTokens, stream: true }]
      : ['/v1/chat/completions', kind === 'plain' ? chat : { ...chat, stream: true }];
  const res = await request(`${url}${path}`, { method: 'POST', body: JSON.stringify(body), dispatcher: client });
  if (res.statusCode !== 200) {
    const text = await res.body.text();
    return `${res.statusCode} ${/"code":"(\w+)"/.exec(text)?.[1] ?? ''}`.trim();
  }
  if (kind === 'plain') return (await res.body.text()).includes('"choices"') ? 'ok' : 'truncated';
  let text = '';
  let chunks = 0;
  for await (const chunk of res.body) {
    text += chunk.toString();
    if (kind === 'abandon' && ++chunks >= 2) {
      res.body.destroy();
      return 'abandoned';
    }
  }
  if (text.includes('"error"'))
    return /"code":"(\w+)"/.exec(text.slice(text.indexOf('"error"')))?.[1] ?? 'stream_error';
  return text.endsWith('data: [DONE]\n\n') ? 'ok' : 'truncated';
}

function count(t: Tally, outcome: string): void {
  if (outcome === 'ok') t.ok++;
  else if (outcome === 'abandoned') t.abandoned++;
  else t.errors[outcome] = (t.errors[outcome] ?? 0) + 1;
}

/** `n` streams opened at once, each on its own connection, closed afterwards so the soak starts from idle. */
async function runBurst(url: string, model: string, n: number): Promise<Tally & { ms: number }> {
  const t: Tally = { sent: n, ok: 0, abandoned: 0, errors: {} };
  const client = new Agent({ connections: n });
  const t0 = performance.now();
  const random = mulberry32(n);
  try {
    const outcomes = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        one(url, model, 'stream', i, random, client).catch((e: Error) => `client ${e.message}`),
      ),
    );
    for (const x of outcomes) count(t, x);
  } finally {
    await client.destroy();
  }
  return { ...t, ms: Math.round(performance.now() - t0) };
}

async function runTraffic(
  url: string,
  model: string,
  o: SoakOptions,
  client: Dispatcher,
  t: Tally,
  progress: () => void,
): Promise<void> {
  const random = mulberry32(o.seed);
  const end = performance.now() + o.seconds * 1e3;
  const timer = setInterval(progress, o.sampleEverySec * 1e3);
  try {
    await Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        while (performance.now() < end) {
          const n = t.sent++;
          count(t, await one(url, model, pick(random), n, random, client).catch((e: Error) => `client ${e.message}`));
        }
      }),
    );
  } finally {
    clearInterval(timer);
  }
}

function printProgress(
  fleet: LocalFleet,
  samples: ReadonlyArray<Omit<Sample, 'atSec'>>,
  t: Tally,
  t0: number,
  o: SoakOptions,
  log: (line: string) => void,
): void {
  const at = Math.round((performance.now() - t0) / 1e3);
  const procs = [...fleet.routers, ...fleet.agents, ...fleet.sims].map((p) => {
    const s = samples.findLast((x) => x.proc === p.name);
    return s === undefined ? `${p.name} -` : `${p.name} rss=${mb(s.rss)}MB fds=${s.fds} handles=${s.handles}`;
  });
  const errors = Object.values(t.errors).reduce((a, b) => a + b, 0);
  log(
    `t=${String(at).padStart(4)}s/${o.seconds}s sent=${t.sent} ok=${t.ok} abandoned=${t.abandoned} errors=${errors} | ${procs.join(' | ')}`,
  );
}

const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);

/** Per process: means of the first and last fifth of its samples. */
export function drift(samples: readonly Sample[]): Drift[] {
  const procs = [...new Set(samples.map((s) => s.proc))];
  return procs.map((proc) => {
    const mine = samples.filter((s) => s.proc === proc);
    const k = Math.max(1, Math.floor(mine.length / 5));
    const mean = (xs: readonly Sample[], f: (s: Sample) => number): number =>
      Math.round(xs.reduce((a, s) => a + f(s), 0) / Math.max(1, xs.length));
    const pair = (f: (s: Sample) => number): [number, number] => [mean(mine.slice(0, k), f), mean(mine.slice(-k), f)];
    return {
      proc,
      rssMb: pair((s) => mb(s.rss)),
      heapMb: pair((s) => mb(s.heap)),
      fds: pair((s) => s.fds),
      handles: pair((s) => s.handles),
    };
  });
}
