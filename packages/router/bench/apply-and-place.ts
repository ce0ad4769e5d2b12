/**
 * Fleet view and placement bench at 1,000 replicas with realistic digests: state-apply cost
 * (decode + supersede + delta) and placement time for the warmpath policy.
 *
 * Digest model per replica: 24 of 200 shared system prompts (32 chunks each,
 * i.e. ≈ 2k tokens) plus ≈ 4,000 chunks of its own conversations → ≈ 4,800
 * hashes (≈ 300k tokens of cache). Each state message carries a delta of one
 * request's worth: +40 / −40 hashes.
 *
 *   node packages/router/bench/apply-and-place.ts [replicas=1000]
 *
 * Smoke: 50
 */
import { describeRequest, encodeState, hashString, type ReplicaState } from '@warmpath/shared/wire';
import { routerConfig } from '../src/config.ts';
import { FleetView } from '../src/fleet/view.ts';
import { affinityKey } from '../src/placement/eligible.ts';
import { LocalState } from '../src/core/local.ts';
import type { PlacementRequest } from '../src/placement/types.ts';
import { notifyDispatch, placeRequest } from '../src/placement/place.ts';
import { warmpathOptions } from '../src/placement/registry.ts';
import { createWarmpathPolicy } from '../src/placement/warmpath/index.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

/** Positional arguments (the usage above); `--help` prints this file's header. */
const { positionals: argv } = scriptArgs(import.meta.url, { allowPositionals: true, options: {} });

const N = Number(argv[0] ?? 1000);
const PROMPTS = 200;
const PROMPT_CHUNKS = 32;
const OWN_CHUNKS = 4_000;
const chunkChars = 256;

let rng = 12345;
const rand = (): number => (rng = (Math.imul(rng, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const pct = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (x: number): string => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));

// Shared system prompts: real chain hashes of real text, so requests match them.
const systems = Array.from({ length: PROMPTS }, (_, i) =>
  `System prompt ${i}: `.padEnd(PROMPT_CHUNKS * chunkChars, `rules of tenant ${i}. `),
);
const sysChains = systems.map(
  (s) => describeRequest({ model: 'm', messages: [{ role: 'system', content: s }] }, 'chat').hashes,
);

function state(
  i: number,
  seq: number,
  added: BigUint64Array,
  removed: BigUint64Array,
  size: number,
  from: number,
): ReplicaState {
  return {
    v: 1,
    fleet: 'bench',
    replica: `replica-${i}`,
    boot: `boot-${i}`,
    bootAt: 1,
    seq,
    sentAt: Date.now(),
    url: `http://10.0.${i >> 8}.${i & 255}:8000`,
    admin: `http://10.0.${i >> 8}.${i & 255}:8001`,
    engine: 'vllm',
    models: ['m'],
    adapters: [],
    hotAdapters: [],
    endpoints: ['chat', 'completion', 'responses'],
    capacity: { kvTokens: 450_000, adapterSlots: 0, weight: 1, maxRunning: 256 },
    load: {
      running: 8,
      waiting: 0,
      kvUsedTokens: Math.floor(rand() * 200_000),
      inflight: 8,
      inflightTokens: Math.floor(rand() * 20_000),
      prefillTokens: Math.floor(rand() * 4_000),
    },
    status: 'ready',
    chunkChars,
    digest: { from, added, removed, size },
  };
}

const view = new FleetView({ fleet: 'bench', chunkChars, stateTtlMs: 3_600_000, forgetAfterMs: 3_600_000 });
const own: BigUint64Array[] = [];
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  const hashes: bigint[] = [];
  for (let k = 0; k < 24; k++) for (const h of sysChains[(i * 7 + k * 13) % PROMPTS]!) hashes.push(h);
  const mine = new BigUint64Array(OWN_CHUNKS);
  for (let k = 0; k < OWN_CHUNKS; k++) mine[k] = hashString(`r${i}c${k}`);
  own.push(mine);
  const all = BigUint64Array.from(new Set([...hashes, ...mine]));
  view.apply(state(i, 1, all, new BigUint64Array(0), all.length, -1));
}
const buildMs = performance.now() - t0;
let total = 0;
for (const r of view.replicas.values()) total += r.digestSize;
console.log(
  `fleet: ${N} replicas, ${total.toLocaleString()} digest hashes (${view.indexSize.toLocaleString()} distinct), built in ${buildMs.toFixed(0)} ms; tables ≈ ${(view.indexBytes / 2 ** 20).toFixed(0)} MiB; heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`,
);

// State apply: delta of +40/−40 hashes per message (a request's worth), plus a load-only variant.
const applyUs: number[] = [];
const decodeApplyUs: number[] = [];
const loadOnlyUs: number[] = [];
const seqs = new Array<number>(N).fill(1);
let fresh = 0;
for (let round = 0; round < 20; round++) {
  for (let i = 0; i < N; i++) {
    const mine = own[i]!;
    const removed = mine.slice((round * 40) % OWN_CHUNKS, ((round * 40) % OWN_CHUNKS) + 40);
    const added = new BigUint64Array(40);
    for (let k = 0; k < 40; k++) added[k] = hashString(`r${i}new${fresh++}`);
    const r = view.replicas.get(`replica-${i}`)!;
    const size = r.digestSize;
    const s = state(i, seqs[i]! + 1, added, removed, size, seqs[i]!);
    seqs[i]!++;
    if (round % 2 === 0) {
      const t = performance.now();
      view.apply(s);
      applyUs.push((performance.now() - t) * 1e3);
    } else {
      const bytes = encodeState(s);
      const t = performance.now();
      view.applyBytes(bytes);
      decodeApplyUs.push((performance.now() - t) * 1e3);
    }
    const l = state(
      i,
      seqs[i]! + 1,
      new BigUint64Array(0),
      new BigUint64Array(0),
      view.replicas.get(`replica-${i}`)!.digestSize,
      seqs[i]!,
    );
    seqs[i]!++;
    const t = performance.now();
    view.apply(l);
    loadOnlyUs.push((performance.now() - t) * 1e3);
  }
}
for (const xs of [applyUs, decodeApplyUs, loadOnlyUs]) xs.sort((a, b) => a - b);
console.log(`state apply (+40/−40 delta): p50 ${fmt(pct(applyUs, 50))} µs, p99 ${fmt(pct(applyUs, 99))} µs`);
console.log(
  `state decode+apply (msgpack bytes, +40/−40): p50 ${fmt(pct(decodeApplyUs, 50))} µs, p99 ${fmt(pct(decodeApplyUs, 99))} µs`,
);
console.log(
  `state apply (load only, empty delta): p50 ${fmt(pct(loadOnlyUs, 50))} µs, p99 ${fmt(pct(loadOnlyUs, 99))} µs`,
);
console.log(
  `  → ${N} replicas × 4 msg/s = ${(N * 4).toLocaleString()} msg/s ≈ ${((N * 4 * pct(decodeApplyUs, 50)) / 1e4).toFixed(1)}% of one core`,
);
if (view.drops.superseded !== undefined || view.pulls.ok + view.pulls.failed > 0)
  console.log('  (unexpected drops/pulls)', view.drops, view.pulls);

// Placement: shared system prompt + unique user turn (≈ 2.3k-token prompts), warmpath policy.
const policy = createWarmpathPolicy(warmpathOptions(routerConfig({ chunkChars })));
const local = new LocalState(routerConfig());
const placeUs: number[] = [];
const describeUs: number[] = [];
const branches: Record<string, number> = {};
// The first WARMUP placements compile the hot path (the JIT) and are not counted: a router places millions.
const WARMUP = 2_000;
for (let k = 0; k < 20_000; k++) {
  const body = {
    model: 'm',
    messages: [
      { role: 'system', content: systems[Math.floor(rand() * PROMPTS)]! },
      { role: 'user', content: `question ${k} `.repeat(20) },
    ],
    max_tokens: 200,
  };
  const td = performance.now();
  const info = describeRequest(body, 'chat');
  if (k >= WARMUP) describeUs.push((performance.now() - td) * 1e3);
  const now = Date.now();
  const req: PlacementRequest = { info, endpoint: 'chat', key: affinityKey(info, 8), body, exclude: undefined, now };
  const t = performance.now();
  const p = placeRequest(policy, req, view, local);
  if (k >= WARMUP) {
    placeUs.push((performance.now() - t) * 1e3);
    branches[p.branch] = (branches[p.branch] ?? 0) + 1;
  }
  if (p.replica !== undefined) {
    const ticket = local.dispatch(p.replica.id, p.work ?? 0, now);
    notifyDispatch(policy, req, p.replica, local);
    if (k % 2 === 0) local.complete(ticket, now);
  }
}
placeUs.sort((a, b) => a - b);
describeUs.sort((a, b) => a - b);
console.log(
  `placement (warmpath, ${N} replicas, ${placeUs.length.toLocaleString()} after ${WARMUP.toLocaleString()} to warm up): p50 ${fmt(pct(placeUs, 50))} µs, p99 ${fmt(pct(placeUs, 99))} µs; branches ${JSON.stringify(branches)}`,
);
console.log(
  `describeRequest (≈ 9 KB prompt, 36 chunks): p50 ${fmt(pct(describeUs, 50))} µs, p99 ${fmt(pct(describeUs, 99))} µs`,
);
