/**
 * Cache-model accuracy: precision and recall of the agent's "this chunk is
 * cached" against the simulator's true prefix cache, over a workload that
 * fills and churns the cache. Also prints gossip bytes per second of the
 * agent at this steady load.
 *
 * Workload: S shared system prompts (Zipf-popular), multi-turn conversations
 * that grow by one turn each visit, and a share of one-off prompts; C
 * closed-loop workers. Before each request the bench asks both the agent's
 * model (predicted cached depth) and the simulator (/sim/v1/probe, ground
 * truth) and scores every full chunk of the prompt.
 *
 * Run: node packages/agent/bench/cache-model.ts [--requests N] [--blocks B] [--rate R req/s, 0 = closed loop]
 *
 * Smoke: --requests 100 --blocks 256
 */
import { describeRequest } from '@warmpath/shared/wire';
import { PROFILES, startSimServer } from '@warmpath/sim';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSwarmKey } from '@warmpath/shared/gossip';
import { startAgent } from '../src/index.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    requests: { type: 'string', default: '1500' },
    blocks: { type: 'string', default: '2048' },
    concurrency: { type: 'string', default: '4' },
    speed: { type: 'string', default: '20' },
    seed: { type: 'string', default: '7' },
    rate: { type: 'string', default: '0' },
  },
});
const N = Number(values.requests);
const C = Number(values.concurrency);

let rng = Number(values.seed) >>> 0;
const rand = (): number => {
  rng = (rng + 0x6d2b79f5) >>> 0;
  let t = rng;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const words = (n: number, tag: string): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += `${tag}${Math.floor(rand() * 1e6).toString(36)} `;
  return s;
};
const zipf = (n: number): number => {
  const r = rand();
  return Math.min(n - 1, Math.floor(n * r * r * r));
};

const profile = {
  ...PROFILES.tiny,
  name: 'bench-cache',
  numGpuBlocks: Number(values.blocks),
  maxNumSeqs: 32,
  maxModelLen: 16384,
  maxNumBatchedTokens: 2048,
};
/** The fleet's swarm key, as every deployment has one. */
const swarmKey = join(mkdtempSync(join(tmpdir(), 'wp-bench-')), 'swarm.key');
writeFileSync(swarmKey, generateSwarmKey(), { mode: 0o600 });
const sim = await startSimServer({ port: 0, profile, speed: Number(values.speed) });
const agent = await startAgent({
  engineUrl: sim.url,
  gossip: true,
  fleet: 'bench-cache',
  swarmKey,
  maxWaiting: 0,
  kvHighWatermark: 1,
});

const systems = Array.from({ length: 12 }, (_, i) => words(250 + 50 * i, `s${i}`));
const convs = Array.from({ length: 60 }, () => ({ sys: zipf(12), turns: [] as string[] }));

function nextBody(): Record<string, unknown> {
  if (rand() < 0.15)
    return {
      model: sim.modelName,
      messages: [{ role: 'user', content: words(200 + Math.floor(rand() * 400), 'u') }],
      max_tokens: 8,
    };
  const c = convs[zipf(convs.length)]!;
  c.turns.push(words(40 + Math.floor(rand() * 120), 't'));
  if (c.turns.length > 12) c.turns = [c.turns.at(-1)!];
  const messages = [{ role: 'system', content: systems[c.sys]! }];
  c.turns.forEach((t, i) => messages.push({ role: i % 2 === 0 ? 'user' : 'assistant', content: t }));
  return { model: sim.modelName, messages, max_tokens: 8 };
}

const chunkChars = agent.config.chunkChars;
let tp = 0;
let fp = 0;
let fn = 0;
let tn = 0;
let sent = 0;
let errors = 0;
const warmup = Math.floor(N * 0.1);
let gossipStart = { bytes: 0, at: 0, messages: 0 };

const rate = Number(values.rate);
const tStart = performance.now();
async function worker(): Promise<void> {
  while (sent < N) {
    const i = sent++;
    if (rate > 0) {
      const due = tStart + (i / rate) * 1000 - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
    }
    if (i === warmup)
      gossipStart = { bytes: agent.publisher.bytes, messages: agent.publisher.messages, at: performance.now() };
    const body = nextBody();
    const info = describeRequest(body, 'chat', { chunkChars });
    const predicted = agent.core.ledger.cache.predict(info.hashes);
    const probe = (await (
      await fetch(`${sim.url}/sim/v1/probe`, { method: 'POST', body: JSON.stringify(body) })
    ).json()) as { cachedTokens: number };
    const trueDepth = Math.floor((probe.cachedTokens * 4) / chunkChars);
    if (i >= warmup) {
      for (let k = 0; k < info.hashes.length; k++) {
        const p = k < predicted;
        const a = k < trueDepth;
        if (p && a) tp++;
        else if (p) fp++;
        else if (a) fn++;
        else tn++;
      }
    }
    const res = await fetch(`${agent.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    await res.arrayBuffer();
    if (res.status !== 200) errors++;
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: C }, worker));
const seconds = (performance.now() - gossipStart.at) / 1000;
const gossipBps = (agent.publisher.bytes - gossipStart.bytes) / seconds;
const msgs = (agent.publisher.messages - gossipStart.messages) / seconds;
const st = agent.state();
const stats = agent.core.ledger.cache.stats;
console.log(
  `cache-model bench: ${N} requests (${warmup} warm-up), concurrency ${C}, engine KV ${profile.numGpuBlocks * 16} tokens, ${((performance.now() - t0) / 1000).toFixed(1)} s, errors ${errors}`,
);
console.log(`  chunks scored: ${tp + fp + fn + tn} (cached in truth: ${tp + fn})`);
console.log(
  `  precision ${(tp / (tp + fp)).toFixed(3)}  recall ${(tp / (tp + fn)).toFixed(3)}  (tp ${tp} fp ${fp} fn ${fn} tn ${tn})`,
);
console.log(
  `  model: ${st.cache.size} chunks, effective capacity ${st.cache.capacity} of nominal ${agent.core.ledger.cache.nominalCapacity}; corrections ${stats.corrections} (dropped ${stats.dropped}), promotions ${stats.promotions}`,
);
console.log(
  `  gossip: ${gossipBps.toFixed(0)} B/s per agent at this load (${msgs.toFixed(1)} msgs/s, ${(gossipBps / msgs).toFixed(0)} B/msg), ${st.load.inflight} in flight at end`,
);
await agent.close();
await sim.close();
