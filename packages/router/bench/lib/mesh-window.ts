/**
 * The gossip mesh bench's measurement window (bench/mesh.ts): a reading of
 * every router (lib/mesh-routers.ts) and of the agents before and after,
 * state delays recorded in between, the routers' mesh sampled every
 * heartbeat; then the window's figures, per router and per process, from
 * the two readings' differences; and the new-replica times after it.
 * Complexity: a reading is O(routers + agents), one per heartbeat for the
 * mesh. Trade-off: CPU and event loop are per process, so with several
 * routers in one process the CPU per router is that process's over its
 * routers (agents' work included when they share it: an upper bound).
 */
import type { MeshFleet } from './mesh-fleet.ts';
import { sampleMesh, meshPartsOf, type MeshSample } from './mesh-parts.ts';
import { eluBetween, type AgentStats, type ProcUsage, type Routers, type Snapshot } from './mesh-routers.ts';
import { diffRpcBytes, type RpcBytes } from './rpc-bytes.ts';
import { performance } from 'node:perf_hooks';
import { bytesByNode } from './socket-bytes.ts';

/** The agents' side of a reading: messages published so far, each agent's links, each agent process's usage. */
export interface AgentCount {
  published: number;
  peers: number[];
  usage: ProcUsage[];
  stats: AgentStats;
}

interface Reading {
  snap: Snapshot;
  agents: AgentCount;
  /** Socket bytes of the nodes in this process (agents when they are here). */
  local: Map<string, { read: number; written: number }>;
}

export interface Window {
  /** The window's length as measured (at least the `seconds` asked for). */
  seconds: number;
  before: Reading;
  after: Reading;
  /** Each state's delay to each router, ms, sorted. */
  delays: number[];
  meshParts: MeshSample;
}

export const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

/** Delivery figures from sorted delays (ms): p50 / p99 / max, how many of those `expected`, and the quantiles in 1% steps. */
export function delayFigures(sorted: number[], expected: number) {
  return {
    latency: {
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      max: sorted.at(-1) ?? Number.NaN,
      n: sorted.length,
      expected,
    },
    latencyQuantiles: Array.from({ length: 101 }, (_, k) => quantile(sorted, k / 100)),
  };
}

/** New agents started one after another for the new-replica figure. */
const NEW_REPLICAS = 5;
/** A new agent publishes this often until every router holds it, ms. */
const NEW_AGENT_PUBLISH_MS = 250;
/** A new replica not on every router after this long counts as ∞, ms. */
const NEW_REPLICA_TIMEOUT_MS = 30_000;

/** Starts NEW_REPLICAS more agents in `fleet` one at a time; for each, ms from its start until every router holds it. */
export async function newReplicas(fleet: MeshFleet, routers: Routers): Promise<number[]> {
  const out: number[] = [];
  const candidates = routers.addrs();
  for (let i = 0; i < NEW_REPLICAS; i++) {
    const t0 = Date.now();
    const agent = await fleet.addAgent(candidates);
    agent.fullEvery = 2; // a whole message once a floor period (500 ms), as a real agent sends
    const timer = setInterval(() => void fleet.publish(agent), NEW_AGENT_PUBLISH_MS);
    void fleet.publish(agent);
    try {
      const at = await routers.holds(agent.name, NEW_REPLICA_TIMEOUT_MS);
      out.push(at === null ? Number.POSITIVE_INFINITY : at - t0);
    } finally {
      clearInterval(timer);
    }
  }
  return out;
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

async function read(routers: Routers, agents: () => Promise<AgentCount>): Promise<Reading & { at: number }> {
  const snap = await routers.snapshot();
  return { snap, at: performance.now(), agents: await agents(), local: bytesByNode() };
}

/**
 * Opens the window, samples the mesh every `everyMs` for `seconds`, closes
 * it. A sample waits for every router process's answer, so a busy host
 * stretches the window: its `seconds` are the ones measured between the
 * two readings.
 */
export async function measureWindow(
  routers: Routers,
  agents: () => Promise<AgentCount>,
  seconds: number,
  everyMs: number,
): Promise<Window> {
  const before = await read(routers, agents);
  await routers.delays(true);
  const meshParts = await sampleMesh(seconds * 1_000, everyMs, async () =>
    meshPartsOf((await routers.snapshot()).routers),
  );
  const delays = await routers.delays(false);
  const after = await read(routers, agents);
  const measured = (after.at - before.at) / 1_000;
  return { seconds: measured, before, after, delays: delays.sort((x, y) => x - y), meshParts };
}

/** The window's figures: per router (in snapshot order) and per process. */
export function figures(w: Window, agentNames: string[]) {
  const { before, after, seconds } = w;
  const r0 = new Map(before.snap.routers.map((r) => [r.name, r]));
  const routers = after.snap.routers.map((r) => ({ a: r, b: r0.get(r.name)! }));
  const kbs = (a: { read: number; written: number }, b = { read: 0, written: 0 }): { in: number; out: number } => ({
    in: (a.read - b.read) / seconds / 1024,
    out: (a.written - b.written) / seconds / 1024,
  });
  const routerRates = routers.map(({ a, b }) => kbs(a.bytes, b.bytes));
  const agentRates = agentNames.map((n) => kbs(after.local.get(n) ?? { read: 0, written: 0 }, before.local.get(n)));
  const ids = new Set(routers.map(({ a }) => a.peerId));
  const routerRouter = routers.map(({ a }) => a.peers.filter((p) => ids.has(p)).length);
  const cpuUs = after.snap.usage.reduce((s, u, i) => s + u.cpuUs - before.snap.usage[i]!.cpuUs, 0);
  const eluRouterProcs = after.snap.usage.map((u, i) => eluBetween(before.snap.usage[i]!, u));
  const stat = (k: 'batchesPublished' | 'batchesReceived' | 'handOffsReceived'): number =>
    mean(routers.map(({ a, b }) => a.stats[k] - b.stats[k])) / seconds;
  return {
    published: after.agents.published - before.agents.published,
    routerRates,
    agentRates,
    conns: {
      routerRouter,
      routerAgent: routers.map(({ a }, i) => a.peers.length - routerRouter[i]!),
      agent: after.agents.peers,
    },
    rpc: routers.map(({ a, b }): RpcBytes => diffRpcBytes(a.rpcBytes, b.rpcBytes)),
    cpuPerRouter: cpuUs / 1e6 / seconds / Math.max(1, routers.length),
    elu: Math.max(...eluRouterProcs),
    eluRouterProcs,
    eluAgentProcs: after.agents.usage.map((u, i) => eluBetween(before.agents.usage[i]!, u)),
    batches: {
      published: stat('batchesPublished'),
      received: stat('batchesReceived'),
      handOffs: stat('handOffsReceived'),
    },
    /** The agents' link and publish counters, summed, since they started. */
    agentStats: after.agents.stats,
    /** Connections the routers refused or closed over their cap, since they started. */
    overCapDropped: routers.reduce((s, { a }) => s + a.stats.overCapDropped, 0),
  };
}
