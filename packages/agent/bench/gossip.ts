/**
 * Gossip bytes per second of one agent: idle, and at a steady open-loop load
 * (R requests/s of chats sharing a few system prompts plus unique turns, on
 * the h100-llama3-8b simulator in real time). Counts encoded state-message
 * bytes handed to gossip (what every peer receives once per hop).
 *
 * Run: node packages/agent/bench/gossip.ts [--rate 10] [--seconds 10]
 *
 * Smoke: --rate 5 --seconds 1
 */
import { startSimServer } from '@warmpath/sim';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSwarmKey } from '@warmpath/shared/gossip';
import { startAgent } from '../src/index.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: { rate: { type: 'string', default: '10' }, seconds: { type: 'string', default: '10' } },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
/** The fleet's swarm key, as every deployment has one. */
const swarmKey = join(mkdtempSync(join(tmpdir(), 'wp-bench-')), 'swarm.key');
writeFileSync(swarmKey, generateSwarmKey(), { mode: 0o600 });
const sim = await startSimServer({ port: 0, profile: 'h100-llama3-8b' });
const agent = await startAgent({ engineUrl: sim.url, fleet: 'bench-gossip', swarmKey });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function window(ms: number, during?: Promise<unknown>): Promise<{ bps: number; mps: number }> {
  const b0 = agent.publisher.bytes;
  const m0 = agent.publisher.messages;
  const t0 = performance.now();
  await Promise.all([sleep(ms), during]);
  const s = (performance.now() - t0) / 1000;
  return { bps: (agent.publisher.bytes - b0) / s, mps: (agent.publisher.messages - m0) / s };
}

await sleep(500);
const idle = await window(5000);
const systems = Array.from({ length: 4 }, (_, i) => `System prompt ${i}. `.repeat(400));
let n = 0;
const pending: Promise<unknown>[] = [];
const load = (async () => {
  const t0 = performance.now();
  const total = rate * seconds;
  for (let i = 0; i < total; i++) {
    const due = t0 + (i / rate) * 1000 - performance.now();
    if (due > 0) await sleep(due);
    const body = {
      model: sim.modelName,
      max_tokens: 64,
      messages: [
        { role: 'system', content: systems[i % 4] },
        { role: 'user', content: `turn ${n++} `.repeat(60) },
      ],
    };
    pending.push(
      fetch(`${agent.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      }).then((r) => r.arrayBuffer()),
    );
  }
  await Promise.all(pending);
})();
const busy = await window(seconds * 1000, load);
const f = (w: { bps: number; mps: number }) =>
  `${w.bps.toFixed(0)} B/s (${w.mps.toFixed(1)} msg/s, ${(w.bps / w.mps).toFixed(0)} B/msg)`;
console.log(
  `gossip bytes per agent: idle ${f(idle)}; steady ${rate} req/s ${f(busy)}; digest ${agent.core.ledger.cache.size} chunks`,
);
await agent.close();
await sim.close();
