/**
 * Simulator calibration and cost benchmark.
 *
 *   node_modules/.bin/node packages/sim/bench/calibration.ts [--batches 1,32,128] [--sim-seconds 600]
 *
 * --batches: the decode batch sizes measured over HTTP; --sim-seconds: simulated
 * seconds of the cost run.
 * Smoke: --batches 1 --sim-seconds 20
 *
 * 1. TTFT of a 2,048-token prompt on an idle H100 replica, cold vs fully
 *    cached, and inter-token latency at batch 1/32/128 (1k-token contexts):
 *    in the pure model (virtual time) and over real HTTP (in-process server,
 *    streaming, speed 1), beside the docs/ENGINE-SIGNALS.md reference ranges.
 * 2. Simulation cost: the pure model driven in virtual time as fast as it
 *    goes with a realistic mix (shared system prompts + unique suffixes,
 *    Poisson arrivals, 9/s); requests and steps per CPU-second, and
 *    how many replicas one core can keep in real time.
 */
import { EngineModel, PROFILES, promptIdentity, startSimServer } from '../src/index.ts';
import type { SimRequest } from '../src/index.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values: opts } = scriptArgs(import.meta.url, {
  options: { batches: { type: 'string', default: '1,32,128' }, 'sim-seconds': { type: 'string', default: '600' } },
});
const H100 = PROFILES['h100-llama3-8b'];
const PO = { model: 'meta-llama/Llama-3.1-8B-Instruct', adapter: '', charsPerToken: 4, blockSize: 16 };

/** Deterministic pseudo-random text of `tokens` tokens (4 chars each). */
function text(tokens: number, seed: number): string {
  let s = '';
  let x = seed * 2654435761 + 1;
  while (s.length < tokens * 4) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += `w${(x >>> 8).toString(36)} `;
  }
  return s.slice(0, tokens * 4);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor(s.length / 2)]!;
};
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const f1 = (x: number): string => x.toFixed(1);

// ---- 1a. model, virtual time ---------------------------------------------------

function modelTtft(): { cold: number; cached: number } {
  const m = new EngineModel(H100);
  const p = promptIdentity(text(2048, 1), PO);
  const run = (id: string, at: number): { ttft: number; end: number } => {
    const s = m.submit({ id, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens: 1 }, at);
    let now = at;
    while (!m.idle) {
      now = Math.max(now, m.nextWakeMs(now));
      now = m.step(now).endMs;
    }
    return { ttft: s.firstTokenMs - s.arrivalMs, end: now };
  };
  const a = run('cold', 0);
  const b = run('warm', a.end + 1000);
  return { cold: a.ttft, cached: b.ttft };
}

function modelItl(batch: number): number {
  const m = new EngineModel(H100);
  const seqs = Array.from({ length: batch }, (_, i) => {
    const p = promptIdentity(text(1024, 100 + i), PO);
    return m.submit({ id: `r${i}`, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens: 256 }, 0);
  });
  let now = 0;
  const gaps: number[] = [];
  while (!m.idle) {
    now = Math.max(now, m.nextWakeMs(now));
    const r = m.step(now);
    now = r.endMs;
    if (seqs.every((s) => s.generated >= 1) && r.scheduledTokens === batch && r.finished.length === 0)
      gaps.push(r.durationMs);
  }
  return mean(gaps);
}

// ---- 1b. HTTP, real time ---------------------------------------------------------

interface StreamTimes {
  tokens: number[];
}

async function streamTimes(url: string, prompt: string, maxTokens: number): Promise<StreamTimes> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, stream: true }),
  });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  const tokens: number[] = [];
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const at = performance.now() - t0;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (ev !== 'data: [DONE]') tokens.push(at);
    }
  }
  return { tokens };
}

async function httpTtft(url: string): Promise<{ cold: number; cached: number }> {
  const cold: number[] = [];
  const cached: number[] = [];
  for (let i = 0; i < 7; i++) {
    const prompt = text(2048, 1000 + i);
    cold.push((await streamTimes(url, prompt, 1)).tokens[0]!);
    cached.push((await streamTimes(url, prompt, 1)).tokens[0]!);
  }
  return { cold: median(cold), cached: median(cached) };
}

async function httpItl(url: string, batch: number, seed: number): Promise<number> {
  const all = await Promise.all(Array.from({ length: batch }, (_, i) => streamTimes(url, text(1024, seed + i), 256)));
  // Steady state: after every stream has its first token, before any finishes.
  const from = Math.max(...all.map((s) => s.tokens[0]!));
  const to = Math.min(...all.map((s) => s.tokens.at(-1)!));
  const per: number[] = [];
  for (const s of all) {
    const w = s.tokens.filter((t) => t > from && t < to);
    if (w.length >= 3) per.push((w.at(-1)! - w[0]!) / (w.length - 1));
  }
  return mean(per);
}

// ---- 2. simulation cost --------------------------------------------------------------

function costRun(simSeconds: number): void {
  const m = new EngineModel(H100);
  // 8 system prompts (500–4,000 tokens) × unique user turns (50–600 tokens), 50–400 output tokens.
  const systems = Array.from({ length: 8 }, (_, i) => text(500 + i * 500, 5000 + i));
  let x = 42;
  const rnd = (): number => (x = (x * 1103515245 + 12345) >>> 0) / 4294967296;
  const ratePerS = 9; // Poisson arrivals per simulated second
  const requests: { at: number; text: string; out: number }[] = [];
  for (let t = 0; t < simSeconds * 1e3;) {
    t += (-Math.log(1 - rnd()) / ratePerS) * 1e3;
    requests.push({
      at: t,
      text: systems[Math.floor(rnd() * systems.length)]! + text(50 + Math.floor(rnd() * 550), requests.length),
      out: 50 + Math.floor(rnd() * 350),
    });
  }
  const c0 = process.cpuUsage();
  const prepared: (SimRequest & { at: number })[] = requests.map((r, i) => {
    const p = promptIdentity(r.text, PO);
    return { id: `q${i}`, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens: r.out, at: r.at };
  });
  const c1 = process.cpuUsage(c0);
  const hashCpuS = (c1.user + c1.system) / 1e6;

  const c2 = process.cpuUsage();
  let now = 0;
  let next = 0;
  let steps = 0;
  let seqSteps = 0;
  while (next < prepared.length || !m.idle) {
    const wake = m.nextWakeMs(now);
    const arrival = next < prepared.length ? prepared[next]!.at : Number.POSITIVE_INFINITY;
    if (arrival <= wake) {
      now = Math.max(now, arrival);
      m.submit(prepared[next++]!, now);
      continue;
    }
    now = Math.max(now, wake);
    const r = m.step(now);
    if (r.durationMs === 0) {
      now += 0.01;
      continue;
    }
    steps++;
    seqSteps += r.scheduledSeqs;
    now = r.endMs;
  }
  const c3 = process.cpuUsage(c2);
  const cpuS = (c3.user + c3.system) / 1e6;
  const snap = m.snapshot();
  const virtS = now / 1e3;
  console.log(
    `  mix: ${prepared.length} requests over ${f1(virtS)} simulated s, ${steps} steps, mean batch ${f1(seqSteps / steps)} seqs, prefix hit ${f1((100 * snap.prefixHitsTokens) / snap.prefixQueriesTokens)}%, preemptions ${snap.preemptions}, mean TTFT ${f1((m.ttft.sum / m.ttft.count) * 1e3)} ms`,
  );
  console.log(
    `  model CPU: ${cpuS.toFixed(3)} s → ${Math.round(prepared.length / cpuS).toLocaleString('en')} requests/s, ${Math.round(steps / cpuS).toLocaleString('en')} steps/s per core`,
  );
  console.log(
    `  real-time replicas per core (model only): ${Math.round(virtS / cpuS).toLocaleString('en')}  (simulated s per CPU s)`,
  );
  console.log(
    `  prompt hashing (shared chainHashes, once per request): ${hashCpuS.toFixed(3)} s → ${Math.round(prepared.length / hashCpuS).toLocaleString('en')} requests/s per core`,
  );
  console.log(
    `  with hashing: ${Math.round(prepared.length / (cpuS + hashCpuS)).toLocaleString('en')} requests/s per core`,
  );
}

// ---- main ------------------------------------------------------------------------------

const row = (what: string, model: number, http: number, ref: string): string =>
  `  ${what.padEnd(28)} model ${f1(model).padStart(6)} ms   http ${f1(http).padStart(6)} ms   reference ${ref}`;

console.log('Warmpath sim engine benchmark (profile h100-llama3-8b, speed 1)');
const mt = modelTtft();
const sim = await startSimServer({ port: 0, profile: 'h100-llama3-8b' });
try {
  await streamTimes(sim.url, text(64, 9), 2); // warm-up (JIT, connection)
  const ht = await httpTtft(sim.url);
  console.log('\nTTFT, 2,048-token prompt, idle replica (HTTP: median of 7, time to first token chunk)');
  console.log(row('cold', mt.cold, ht.cold, '70–110 ms'));
  console.log(row('fully cached', mt.cached, ht.cached, '15–30 ms'));
  console.log('\nInter-token latency, 1,024-token contexts (steady-state decode)');
  const refs: Record<number, string> = { 1: '~6–7 ms', 32: '7.5–9 ms', 128: '12–16 ms' };
  let seed = 20_000;
  for (const b of opts.batches.split(',').map(Number)) {
    const hi = await httpItl(sim.url, b, (seed += 1000));
    console.log(row(`batch ${b}`, modelItl(b), hi, refs[b] ?? '—'));
  }
} finally {
  await sim.close();
}
console.log('\nSimulation cost: pure model in virtual time, realistic mix, one H100 replica');
costRun(Number(opts['sim-seconds']));
