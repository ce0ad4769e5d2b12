/**
 * Gossip delivery bench: N gossip nodes in one process over TCP loopback, in a
 * chain (node i dials i-1) or a random graph (node i dials up to `degree`
 * earlier nodes), every node publishing fixed-size messages at a steady rate.
 * Prints the delivery ratio (deliveries / (published × (N-1))) and latency
 * percentiles, measured with one monotonic clock since all nodes share it.
 *
 *   node_modules/.bin/node packages/shared/bench/gossip.ts [nodes=20] [messages=30] [bytes=1536] [intervalMs=100] [heartbeatMs]   (SEED=n picks the random graph)
 *
 * Smoke: 4 3 256 50
 *
 * All nodes share one process (and one event loop), so latency includes
 * every other node's CPU work: an upper bound for a fleet of real processes.
 */

import { performance } from 'node:perf_hooks';
import { createGossipNode, generateSwarmKey } from '../src/gossip.ts';
import type { GossipNode } from '../src/gossip.ts';
import { mulberry32 } from '../src/random.ts';
import { scriptArgs } from '../src/script-args.ts';

/** Positional arguments (the usage above); `--help` prints this file's header. */
const { positionals: argv } = scriptArgs(import.meta.url, { allowPositionals: true, options: {} });

const [nodesArg, messagesArg, bytesArg, intervalArg, heartbeatArg] = argv;
const NODES = Number(nodesArg ?? 20);
const MESSAGES_PER_NODE = Number(messagesArg ?? 30);
const MESSAGE_BYTES = Number(bytesArg ?? 1536);
const PUBLISH_INTERVAL_MS = Number(intervalArg ?? 100);
const HEARTBEAT_MS = heartbeatArg === undefined ? undefined : Number(heartbeatArg);
const RANDOM_DEGREE = 3;
const SEED = Number(process.env.SEED ?? 1);

// Seeded so a random graph can be re-run (SEED env var).
const random = mulberry32(SEED);
const WARMUP_TIMEOUT_MS = 20_000;
const DRAIN_TIMEOUT_MS = 10_000;
const HEADER_BYTES = 14; // origin u16, seq u32, send time f64

type Topology = 'chain' | 'random';

interface Result {
  topology: Topology;
  edges: number;
  published: number;
  delivered: number;
  duplicates: number;
  latenciesMs: number[];
  setupMs: number;
}

function peersToDial(topology: Topology, i: number): number[] {
  if (i === 0) return [];
  if (topology === 'chain') return [i - 1];
  const picks = new Set<number>([Math.floor(random() * i)]);
  while (picks.size < Math.min(RANDOM_DEGREE, i)) picks.add(Math.floor(random() * i));
  return [...picks];
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function waitFor(check: () => boolean, timeoutMs: number, nodes: GossipNode[]): Promise<boolean> {
  if (check()) return true;
  return new Promise((resolve) => {
    const offs: Array<() => void> = [];
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      for (const off of offs) off();
      resolve(ok);
    };
    const timer = setTimeout(() => done(check()), timeoutMs);
    for (const n of nodes) offs.push(n.onMessage(() => check() && done(true)));
  });
}

/** NODES gossip nodes, each dialing its topology's peers among those before it. */
async function startNodes(topology: Topology): Promise<{ nodes: GossipNode[]; edges: number }> {
  const swarmKey = generateSwarmKey();
  const nodes: GossipNode[] = [];
  let edges = 0;
  for (let i = 0; i < NODES; i++) {
    const targets = peersToDial(topology, i);
    edges += targets.length;
    const bootstrap = targets.flatMap((j) => nodes[j]?.multiaddrs() ?? []);
    const node = await createGossipNode({
      fleet: 'bench',
      swarmKey,
      bootstrap,
      onWarning: null,
      ...(HEARTBEAT_MS === undefined ? {} : { timing: { heartbeatIntervalMs: HEARTBEAT_MS } }),
    });
    await node.start();
    nodes.push(node);
  }
  return { nodes, edges };
}

/** Message `seq` of node `origin`: its header (origin, seq, send time) then random bytes. */
function message(origin: number, seq: number): Uint8Array {
  const buf = new Uint8Array(Math.max(MESSAGE_BYTES, HEADER_BYTES));
  crypto.getRandomValues(buf.subarray(HEADER_BYTES, Math.min(buf.length, HEADER_BYTES + 65_536)));
  const view = new DataView(buf.buffer);
  view.setUint16(0, origin);
  view.setUint32(2, seq);
  view.setFloat64(6, performance.now());
  return buf;
}

async function run(topology: Topology): Promise<Result> {
  const t0 = performance.now();
  const { nodes, edges } = await startNodes(topology);

  // Per receiving node: which (origin, seq) it has seen, to count duplicates.
  const seen = nodes.map(() => new Set<number>());
  const latenciesMs: number[] = [];
  let warmupDelivered = 0;
  let delivered = 0;
  let duplicates = 0;
  nodes.forEach((node, me) => {
    node.onMessage((data) => {
      const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
      const origin = view.getUint16(0);
      const seq = view.getUint32(2);
      const key = origin * 1_000_000 + seq;
      if (seen[me]?.has(key)) {
        if (seq !== 0) duplicates++;
        return;
      }
      seen[me]?.add(key);
      if (seq === 0) {
        warmupDelivered++;
        return;
      }
      delivered++;
      latenciesMs.push(performance.now() - view.getFloat64(6));
    });
  });

  // Warm-up: seq 0 from every node until all N(N-1) arrive, i.e. the mesh spans the graph.
  const expectedWarmup = NODES * (NODES - 1);
  const warmupStart = performance.now();
  let warmupRound = 0;
  while (warmupDelivered < expectedWarmup && performance.now() - warmupStart < WARMUP_TIMEOUT_MS) {
    // Re-publishing seq 0 is deduplicated by `seen`; gossipsub signs each with a fresh seqno.
    await Promise.all(nodes.map((n, i) => n.publish(message(i, 0))));
    warmupRound++;
    await waitFor(() => warmupDelivered >= expectedWarmup, 1_000, nodes);
  }
  const setupMs = performance.now() - t0;
  if (warmupDelivered < expectedWarmup) {
    console.warn(
      `${topology}: warm-up incomplete (${warmupDelivered}/${expectedWarmup}) after ${warmupRound} round(s)`,
    );
  }

  // Measurement: each node publishes MESSAGES_PER_NODE messages, phases staggered.
  let published = 0;
  await Promise.all(
    nodes.map(async (node, i) => {
      await new Promise((r) => setTimeout(r, random() * PUBLISH_INTERVAL_MS));
      for (let seq = 1; seq <= MESSAGES_PER_NODE; seq++) {
        await node.publish(message(i, seq));
        published++;
        await new Promise((r) => setTimeout(r, PUBLISH_INTERVAL_MS));
      }
    }),
  );
  const expected = published * (NODES - 1);
  await waitFor(() => delivered >= expected, DRAIN_TIMEOUT_MS, nodes);
  await Promise.all(nodes.map((n) => n.stop()));
  return { topology, edges, published, delivered, duplicates, latenciesMs, setupMs };
}

console.log(
  `gossip bench: ${NODES} nodes, ${MESSAGES_PER_NODE} msgs/node every ${PUBLISH_INTERVAL_MS} ms, ${MESSAGE_BYTES} B, TCP loopback + pnet + noise + yamux, node ${process.version}, seed ${SEED}`,
);
for (const topology of ['chain', 'random'] as const) {
  const r = await run(topology);
  const sorted = r.latenciesMs.sort((x, y) => x - y);
  const fmt = (ms: number): string => ms.toFixed(1);
  console.log(
    `${topology.padEnd(6)} edges=${r.edges} setup=${(r.setupMs / 1000).toFixed(1)}s ` +
      `delivery=${r.delivered}/${r.published * (NODES - 1)} (${((100 * r.delivered) / (r.published * (NODES - 1))).toFixed(2)}%) ` +
      `dups-to-app=${r.duplicates} latency ms p50=${fmt(quantile(sorted, 0.5))} p90=${fmt(quantile(sorted, 0.9))} ` +
      `p99=${fmt(quantile(sorted, 0.99))} max=${fmt(sorted.at(-1) ?? Number.NaN)}`,
  );
}
