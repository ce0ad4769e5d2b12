/**
 * A router's memory at fleet scale: one real FleetView fed N replicas'
 * digests as their agents really publish them, then the process's heap,
 * array buffers and RSS after a full collection.
 *
 * Each replica's digest comes from the agent's own cache model (CacheModel,
 * sized by chunksFor from the default engine's 432k KV tokens, the default
 * 4 chars per token and 256-char chunks: 6,750 chunks, unless told) filled by a seeded
 * workload until it has evicted as much as it holds: every request is one
 * of 200 shared 2k-token system prompts (32 chunks; each replica serves 24
 * tenants) followed by 8–40 chunks of its own conversation. The router gets
 * it as it does live: the first state message carries no hashes (from = -1
 * after a boot with a cache), so the view pulls the snapshot the agent's
 * admin API serves (msgpack, decoded and diffed into the index).
 *
 *   node packages/router/bench/memory.ts [replicas=1000] [digestMaxHashes=0 (the agent's default)] [cacheChunks=6750]
 *
 * Smoke: 20
 *
 * `cacheChunks` sizes the cache model instead (it grows up to twice its
 * nominal size when the engine holds more than it predicted).
 *
 * Prints one line; figures are sizes, not timings, so machine load does not
 * move them.
 */
import { encodeSnapshot, type ReplicaState } from '@warmpath/shared/wire';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mulberry32 } from '@warmpath/shared/runtime';
import { agentConfig } from '../../agent/src/config.ts';
import { CacheModel, chunksFor } from '../../agent/src/cache-model.ts';
import { FleetView } from '../src/fleet/view.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

/** Positional arguments (the usage above); `--help` prints this file's header. */
const { positionals: argv } = scriptArgs(import.meta.url, { allowPositionals: true, options: {} });

const N = Number(argv[0] ?? 1000);
const agentDefaults = agentConfig({ fleet: 'bench', replicaId: 'r', gossip: false });
const cap = Number(argv[1] ?? 0) || agentDefaults.digestMaxHashes;
const KV_TOKENS = 432_000; // the default simulator profile's KV (h100-llama3-8b), tokens
const PROMPTS = 200;
const PROMPT_CHUNKS = 32;
const TENANTS = 24;
const chunkChars = agentDefaults.chunkChars;
const capacity = Number(argv[2] ?? 0) || chunksFor(KV_TOKENS, agentDefaults.charsPerToken, chunkChars);

// A full collection before each reading; --expose-gc on the command line is not needed.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const mib = (b: number): string => (b / 2 ** 20).toFixed(0);
function measure(): { heap: number; buffers: number; rss: number } {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers, rss: m.rss };
}

function randomHashes(random: () => number, n: number): BigUint64Array {
  const out = new BigUint64Array(n);
  for (let i = 0; i < n; i++)
    out[i] = (BigInt(Math.floor(random() * 2 ** 32)) << 32n) | BigInt(Math.floor(random() * 2 ** 32));
  return out;
}
const systems = Array.from({ length: PROMPTS }, (_, i) => randomHashes(mulberry32(1_000_000 + i), PROMPT_CHUNKS));

/** Replica i's cache model after a seeded workload that evicted as much as it holds; its published digest. */
function digestOf(i: number): BigUint64Array {
  const random = mulberry32(i + 1);
  const model = new CacheModel({ capacity, published: cap });
  let recorded = 0;
  while (recorded < 2 * capacity) {
    const sys = systems[(i * 7 + Math.floor(random() * TENANTS) * 13) % PROMPTS]!;
    const own = randomHashes(random, 8 + Math.floor(random() * 33));
    const chain = new BigUint64Array(sys.length + own.length);
    chain.set(sys);
    chain.set(own, sys.length);
    model.record(chain);
    recorded += own.length;
  }
  model.takeDelta(Infinity);
  return model.published();
}

function state(i: number): ReplicaState {
  return {
    v: 1,
    fleet: 'bench',
    replica: `replica-${i}`,
    boot: `boot-${i}`,
    bootAt: 1,
    seq: 1,
    sentAt: Date.now(),
    url: `http://10.0.${i >> 8}.${i & 255}:8000`,
    admin: `http://10.0.${i >> 8}.${i & 255}:8001`,
    engine: 'vllm',
    models: ['m'],
    adapters: [],
    hotAdapters: [],
    endpoints: ['chat', 'completion', 'responses'],
    capacity: { kvTokens: KV_TOKENS, adapterSlots: 0, weight: 1, maxRunning: 256 },
    load: { running: 8, waiting: 0, kvUsedTokens: 200_000, inflight: 8, inflightTokens: 10_000, prefillTokens: 1_000 },
    status: 'ready',
    chunkChars,
    digest: { from: -1, added: new BigUint64Array(0), removed: new BigUint64Array(0), size: 1 },
  };
}

// Every agent's snapshot first, so the figures after the base are the view's alone.
const snapshots = Array.from({ length: N }, (_, i) =>
  encodeSnapshot({ v: 1, replica: `replica-${i}`, boot: `boot-${i}`, seq: 1, chunkChars, hashes: digestOf(i) }),
);
const base = measure();
const view = new FleetView({
  fleet: 'bench',
  chunkChars,
  stateTtlMs: 3_600_000,
  forgetAfterMs: 3_600_000,
  fetchSnapshot: (r) => Promise.resolve(snapshots[r.slot]!),
});
for (let i = 0; i < N; i++) {
  view.apply(state(i));
  await new Promise((r) => setImmediate(r)); // let the pull land before the next replica
}
let total = 0;
for (const r of view.replicas.values()) total += r.digestSize;
const after = measure();
console.log(
  `${N} replicas, cache ${capacity.toLocaleString()} chunks, digest cap ${cap > 0 ? cap.toLocaleString() : 'none'}: ` +
    `${total.toLocaleString()} digest hashes (${view.indexSize.toLocaleString()} distinct), pulls ${view.pulls.ok}; ` +
    `view tables ${mib(view.indexBytes)} MiB; heap +${mib(after.heap - base.heap)} MiB, array buffers +${mib(after.buffers - base.buffers)} MiB, ` +
    `RSS +${mib(after.rss - base.rss)} MiB (${mib(after.rss)} MiB in all; the agents' snapshots, ${mib(snapshots.reduce((n, b) => n + b.byteLength, 0))} MiB, are in the base)`,
);
