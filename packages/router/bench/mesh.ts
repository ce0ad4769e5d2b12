/**
 * Gossip mesh bench: A agents × R routers as real libp2p nodes over TCP on
 * 127.0.0.1 (lib/mesh-fleet.ts), in this process or spread over child
 * processes, each agent publishing to 2 routers, the routers relaying through
 * their gossipsub mesh. Before each window the fleet must have formed within
 * `--form-s` (one mesh part, every replica on every router, every agent
 * linked: lib/mesh-routers.ts `converge`), else its row is flagged
 * ("NOT CONVERGED", `convergence.ok` false). For each fleet size:
 *  - new replica: from a new agent's start until every router's view holds
 *    it (the agent publishes every 250 ms, as a real one does), 5 times
 *    (lib/mesh-window.ts);
 *  - state-change delivery: from each publish to its delivery at each
 *    router, p50 / p99 / max;
 *  - bytes per second per node, in and out: every TCP socket a node opens or
 *    accepts is attributed to it (node:diagnostics_channel, with the node's
 *    name carried by AsyncLocalStorage from its start), counted from
 *    bytesRead / bytesWritten over the window: what crosses the wire,
 *    encryption and framing included;
 *  - connections per node: router↔router, router↔agent, agent;
 *  - where a router's received bytes go, per state message published
 *    (lib/rpc-bytes.ts: state, author and signature, framing, duplicates,
 *    each kind of control; transport = socket bytes − RPC bytes), its RPCs
 *    and message copies per second, and the CPU per router (each router
 *    process's CPU over its routers; agents' work included when they share
 *    the process: an upper bound), and each process's event loop.
 *
 *   node_modules/.bin/node packages/router/bench/mesh.ts [--agents 60,120] [--routers 8] [--router-peers 0] [--rate 30] [--seconds 10] [--save rows.json]
 *     [--d 6 --dlo 4 --dhi 12 --dlazy 6] [--gossip-windows 3] [--idontwant-min 512]
 *     [--procs 0] [--router-procs 0] [--form-s 300] [--digest-hashes 48] [--full-every 1] [--batch-ms 50]
 *     [--relay flood|mesh] [--drop 0]
 *
 * `--procs N`: the agents in N child processes (lib/mesh-procs.ts), the routers alone here (delay from each
 * state's `sentAt`, wall-clock ms, 1 ms resolution; CPU per router without the agents'). `--router-procs N`:
 * the routers in N child processes (lib/mesh-router-proc.ts), an even share in each, delay from `sentAt` too
 * (every process reads this host's one clock). Without either, delay is from each publish's monotonic time
 * (one process). `--digest-hashes`: hashes per message;
 * `--full-every`: every how many messages carry the static fields (bench/gossip-model.ts sets these and `--rate`).
 * `--batch-ms`: the routers' batch window (default the production one; 0: agents publish signed states, one
 * gossipsub message each, as before batching); the rows say how many states went in a batch. `--relay`: the
 * routers' GossipOptions.relay; `--drop P`: each router drops a share P of the message copies it receives.
 *
 * The mesh flags override the state topic's mesh degrees, IHAVE windows and IDONTWANT
 * threshold on every node (default: the production constants), to compare settings (docs/GOSSIP.md).
 * `--save` writes the rows as JSON, each with its delivery latencies' quantiles in 1% steps
 * (docs/SCALE.md's figure is drawn from it by packages/bench/bench/plot.ts).
 *
 * One router at a fleet's full cadence (agents this host cannot run as nodes at that rate): cadence.ts.
 * Smoke: --agents 8 --routers 3 --rate 5 --seconds 1 --router-procs 1
 * `--rate` is the fleet's state messages per second, the same for every
 * fleet size (each agent publishes every agents/rate seconds), so rows differ
 * only in how many agents there are. Nodes in one process share its event
 * loop, and one message costs about routers × mesh degree encrypted relays,
 * so a higher rate saturates a process (the busiest router process's
 * event-loop utilization is printed): latencies are then queueing in it, an
 * upper bound for a fleet of real processes, and noisy on a loaded host.
 * Bytes (also per message) and connection counts do not depend on CPU.
 */
import { writeFileSync } from 'node:fs';
import { generateSwarmKey, type GossipMeshTuning, type GossipRelay } from '@warmpath/shared/gossip';
import { MeshFleet, type MeshSample } from './lib/mesh-fleet.ts';
import { AgentProcs } from './lib/mesh-procs.ts';
import {
  agentStats,
  converge,
  DelayLog,
  LocalRouters,
  RouterProcs,
  type AgentStats,
  type Convergence,
  type Routers,
} from './lib/mesh-routers.ts';
import { delayFigures, figures, measureWindow, newReplicas, quantile, type AgentCount } from './lib/mesh-window.ts';
import { owner } from './lib/socket-bytes.ts';
import { CONTROL_KINDS, meanRpcBytes, type RpcBytes } from './lib/rpc-bytes.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values: args } = scriptArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '60,120' },
    routers: { type: 'string', default: '8' },
    'router-peers': { type: 'string', default: '0' },
    rate: { type: 'string', default: '30' },
    seconds: { type: 'string', default: '10' },
    save: { type: 'string', default: '' },
    d: { type: 'string' },
    dlo: { type: 'string' },
    dhi: { type: 'string' },
    dlazy: { type: 'string' },
    'gossip-windows': { type: 'string' },
    'idontwant-min': { type: 'string' },
    procs: { type: 'string', default: '0' },
    'router-procs': { type: 'string', default: '0' },
    'form-s': { type: 'string', default: '300' },
    'digest-hashes': { type: 'string', default: '48' },
    'full-every': { type: 'string', default: '1' },
    'batch-ms': { type: 'string' },
    relay: { type: 'string' },
    drop: { type: 'string', default: '0' },
  },
});
const PROCS = Number(args.procs);
const ROUTER_PROCS = Number(args['router-procs']);
const DIGEST_HASHES = Number(args['digest-hashes']);
const FULL_EVERY = Number(args['full-every']);
const BATCH_MS = args['batch-ms'] === undefined ? undefined : Number(args['batch-ms']);
/** The routers' batch window and relay (undefined: production), and the share of copies they drop. */
const RELAY = { batchWindowMs: BATCH_MS, relay: args.relay as GossipRelay | undefined, dropShare: Number(args.drop) };
const MESH: GossipMeshTuning = Object.fromEntries(
  (
    [
      ['D', args.d],
      ['Dlo', args.dlo],
      ['Dhi', args.dhi],
      ['Dlazy', args.dlazy],
      ['gossipWindows', args['gossip-windows']],
      ['idontwantMinDataSize', args['idontwant-min']],
    ] as const
  )
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, Number(v)]),
);
const SIZES = args.agents.split(',').map(Number);
const ROUTERS = Number(args.routers);
/** Router peers each router keeps (gossipPeers; 0 = all earlier routers). */
const ROUTER_PEERS = Number(args['router-peers']);
const RATE = Number(args.rate);
const WINDOW_S = Number(args.seconds);
/** Production gossip timing: a 700 ms heartbeat; dials and stream set-up get room on a loaded host. */
const TIMING = { heartbeatIntervalMs: 700, redialIntervalMs: 1_000, dialTimeoutMs: 10_000, silentPeerGraceMs: 15_000 };
/**
 * Agents not sharing the routers' process redial every 5 s and keep a router silent for 60 s: hundreds of
 * agents on one host whose handshakes outlast the routers' upgrade timeout otherwise redial faster than the
 * host completes handshakes, and the fleet never forms. Formed, they behave as with TIMING.
 */
const AGENT_TIMING = { ...TIMING, redialIntervalMs: 5_000, silentPeerGraceMs: 60_000 };
/** The fleet has this long to form (one mesh, every replica on every router, every agent linked) before the window opens flagged, ms. */
const CONVERGE_TIMEOUT_MS = 1_000 * Number(args['form-s']);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

interface Row {
  agents: number;
  intervalMs: number;
  /** State messages published per second in the window. */
  rate: number;
  /** The window as measured, s (`--seconds`, stretched where a busy host answers late). */
  windowS: number;
  routers: number;
  newReplicaMs: number[];
  latency: { p50: number; p99: number; max: number; n: number; expected: number };
  /** Delivery latency at quantiles 0, 0.01, …, 1, ms. */
  latencyQuantiles: number[];
  elu: number;
  /** The routers' mesh, sampled every heartbeat in the window (MeshFleet.sampleMesh). */
  meshParts: MeshSample;
  routerKBs: { in: number; out: number; maxIn: number };
  agentKBs: { in: number; out: number };
  conns: { routerRouter: number[]; routerAgent: number[]; agent: number[] };
  /** Mesh overrides in force (empty: the production constants). */
  mesh: GossipMeshTuning;
  /** Encoded state message, bytes: whole, and its digest's share. */
  stateBytes: { whole: number; digest: number };
  /** Mean over routers, per state message published in the window: RPC bytes by kind, and the socket's. */
  perMessage: RpcBytes & { wire: number };
  /** Mean over routers, per second: RPCs and message copies received. */
  perRouterPerS: { rpcs: number; copies: number; unique: number };
  /** Process CPU over the window, cores, divided by the routers (agents' work included unless in child processes). */
  cpuPerRouter: number;
  /** Agent processes (0: in this one), digest hashes per message, every how many messages a full one. */
  procs: number;
  digestHashes: number;
  fullEvery: number;
  /** Routers' batch window, ms (undefined: production); per router per s, batches published and received, states handed to it. */
  batchMs: number | undefined;
  relaying: typeof RELAY;
  batches: { published: number; received: number; handOffs: number };
  /** Processes the routers ran in (0: this one, with the agents unless `procs`). */
  routerProcs: number;
  /** Whether the fleet had formed when the window opened (ok false: the row's figures are of a broken fleet). */
  convergence: Convergence;
  /** Event-loop utilization over the window of each process holding routers (`elu`: the busiest) and of each agent process. */
  eluRouterProcs: number[];
  eluAgentProcs: number[];
  /** Connections the routers refused or closed over their cap (maxConnections), summed, since they started. */
  overCapDropped: number;
  /** The agents' dial failures, silent-peer hang-ups, publish errors and hand-offs, summed, since they started. */
  agentStats: AgentStats;
}

async function run(agents: number): Promise<Row> {
  const intervalMs = (1_000 * agents) / RATE;
  const { routers, fleet } = await startFleet(agents);
  const procs = PROCS > 0 ? await startProcs(fleet, routers, agents, intervalMs) : undefined;
  const agentCount = async (): Promise<AgentCount> =>
    procs !== undefined
      ? await procs.count()
      : {
          published: fleet.agents.reduce((n, a) => n + a.seq, 0),
          peers: fleet.agents.map((a) => a.node.peers().length),
          usage: [],
          stats: agentStats(fleet.agents),
        };
  const stopPublishing =
    procs !== undefined ? (procs.publish(), () => procs.stop()) : fleet.startPublishing(intervalMs);
  try {
    const convergence = await converge(routers, agents, agentCount, CONVERGE_TIMEOUT_MS);
    if (!convergence.ok)
      console.error(`${agents} × ${ROUTERS}: NOT CONVERGED, the row is flagged: ${JSON.stringify(convergence)}`);
    await sleep(2 * intervalMs);
    const w = await measureWindow(routers, agentCount, WINDOW_S, TIMING.heartbeatIntervalMs);
    const f = figures(
      w,
      fleet.agents.map((a) => a.name),
    );
    const newReplicaMs = convergence.ok ? await newReplicas(fleet, routers) : []; // a broken fleet: not tried
    return {
      agents,
      intervalMs,
      rate: f.published / w.seconds,
      windowS: w.seconds,
      routers: ROUTERS,
      newReplicaMs,
      ...delayFigures(w.delays, f.published * ROUTERS),
      elu: f.elu,
      meshParts: w.meshParts,
      routerKBs: {
        in: mean(f.routerRates.map((r) => r.in)),
        out: mean(f.routerRates.map((r) => r.out)),
        maxIn: Math.max(...f.routerRates.map((r) => r.in)),
      },
      agentKBs: { in: mean(f.agentRates.map((r) => r.in)), out: mean(f.agentRates.map((r) => r.out)) },
      conns: f.conns,
      ...breakdown(fleet, f, w.seconds),
      batches: f.batches,
      routerProcs: ROUTER_PROCS,
      convergence,
      eluRouterProcs: f.eluRouterProcs,
      eluAgentProcs: f.eluAgentProcs,
      overCapDropped: f.overCapDropped,
      agentStats: f.agentStats,
    };
  } finally {
    stopPublishing();
    await fleet.stop();
    if (routers instanceof RouterProcs) await routers.stop();
  }
}

/**
 * The routers (here, or in ROUTER_PROCS child processes) and the fleet of
 * agents here (none when they are in child processes; the new replicas start
 * in it). In-process delays come from each publish's monotonic time.
 */
async function startFleet(agents: number): Promise<{ routers: Routers; fleet: MeshFleet }> {
  const common = {
    agentPeers: 2,
    timing: TIMING,
    mesh: MESH,
    ...RELAY,
    digestHashes: DIGEST_HASHES,
    fullEvery: FULL_EVERY,
    wrapStart: (name: string, start: () => Promise<void>) => owner.run(name, start),
  };
  const here = PROCS > 0 ? 0 : agents;
  if (ROUTER_PROCS > 0) {
    const swarmKey = generateSwarmKey();
    const options = { routerPeers: ROUTER_PEERS, timing: TIMING, mesh: MESH, ...RELAY };
    const routers = await RouterProcs.start(ROUTER_PROCS, { routers: ROUTERS, swarmKey, options });
    const start = {
      ...common,
      timing: AGENT_TIMING,
      routers: 0,
      agents: here,
      firstAgent: PROCS > 0 ? agents : 0,
      swarmKey,
    };
    const fleet = await MeshFleet.start({ ...start, routerAddrs: routers.addrs() }).catch(async (err: unknown) => {
      await routers.stop();
      throw err;
    });
    return { routers, fleet };
  }
  const log = new DelayLog();
  const fleet: MeshFleet = await MeshFleet.start({
    ...common,
    routers: ROUTERS,
    agents: here,
    firstAgent: PROCS > 0 ? agents : 0,
    routerPeers: ROUTER_PEERS,
    onDelivery: (_router, state, _origin, at) => {
      if (PROCS > 0) return log.record(Date.now() - state.sentAt);
      const sent = fleet.agents.find((a) => a.name === state.replica)?.sentAt.get(state.seq);
      if (sent !== undefined) log.record(at - sent);
    },
  });
  return { routers: new LocalRouters(fleet, log), fleet };
}

/** The agents in PROCS child processes, publishing to these routers (stops both if they fail). */
async function startProcs(fleet: MeshFleet, routers: Routers, agents: number, intervalMs: number): Promise<AgentProcs> {
  const spec = { agents, swarmKey: fleet.swarmKey, routerAddrs: routers.addrs(), intervalMs };
  const more = { digestHashes: DIGEST_HASHES, fullEvery: FULL_EVERY, timing: AGENT_TIMING, mesh: MESH };
  return AgentProcs.start(PROCS, { ...spec, ...more, firstAgent: 0 }).catch(async (err: unknown) => {
    await fleet.stop();
    await routers.stop();
    throw err;
  });
}

/** The byte breakdown's fields of a row, from the window's figures. */
function breakdown(
  fleet: MeshFleet,
  f: ReturnType<typeof figures>,
  seconds: number,
): Pick<
  Row,
  | 'mesh'
  | 'stateBytes'
  | 'perMessage'
  | 'perRouterPerS'
  | 'cpuPerRouter'
  | 'procs'
  | 'digestHashes'
  | 'fullEvery'
  | 'batchMs'
  | 'relaying'
> {
  const sizes = fleet.stateBytes();
  return {
    mesh: MESH,
    stateBytes: { whole: sizes.whole, digest: sizes.whole - sizes.withoutDigest },
    perMessage: {
      ...meanRpcBytes(f.rpc, f.published),
      wire: mean(f.routerRates.map((r) => (r.in * 1024 * seconds) / f.published)),
    },
    perRouterPerS: {
      rpcs: mean(f.rpc.map((x) => x.rpcs)) / seconds,
      copies: mean(f.rpc.map((x) => x.copies)) / seconds,
      unique: mean(f.rpc.map((x) => x.unique)) / seconds,
    },
    cpuPerRouter: f.cpuPerRouter,
    procs: PROCS,
    digestHashes: DIGEST_HASHES,
    fullEvery: FULL_EVERY,
    batchMs: BATCH_MS,
    relaying: RELAY,
  };
}

const fmt = (x: number, d = 0): string =>
  Number.isFinite(x) ? x.toFixed(d) : x === Number.POSITIVE_INFINITY ? '∞' : '—';
const formed = (c: Convergence): string =>
  c.ok
    ? `yes, ${fmt(c.waitedMs / 1_000)} s`
    : `NOT CONVERGED: ${c.meshParts} mesh parts, ${c.routersMissing} routers missing replicas, ${c.agentsUnlinked} agents unlinked`;
const span = (xs: number[]): string => `${Math.min(...xs)}–${Math.max(...xs)}`;

const rows: Row[] = [];
for (const agents of SIZES) rows.push(await run(agents));
if (args.save !== '') writeFileSync(args.save, `${JSON.stringify(rows, null, 1)}\n`);
console.log(
  `\ngossip mesh: ${ROUTERS} routers (each keeping ${ROUTER_PEERS === 0 ? 'every other' : ROUTER_PEERS} router peer(s)), each agent publishing to 2 of them; ${RATE} state messages/s fleet-wide; ${WINDOW_S} s window; routers in ${ROUTER_PROCS === 0 ? 'this process' : `${ROUTER_PROCS} processes`}, agents in ${PROCS === 0 ? 'this process' : `${PROCS} processes`} (the busiest router process's event loop shown: latency is CPU-bound when it nears 1)\n`,
);
console.log(
  '| agents × routers | each agent publishes every | new replica on every router, ms (median / max of 5) | delivery p50 / p99 / max, ms | delivered / expected | router KB/s in / out (max in) | router bytes in per message | agent KB/s in / out | connections: router↔router, router↔agent, agent | mesh parts (most; share split), links | event loop | formed before the window |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const nr = [...r.newReplicaMs].sort((a, b) => a - b);
  console.log(
    `| ${r.agents} × ${r.routers} | ${fmt(r.intervalMs / 1_000, 1)} s | ${fmt(quantile(nr, 0.5))} / ${fmt(nr.at(-1)!)} | ${fmt(r.latency.p50, 1)} / ${fmt(r.latency.p99, 1)} / ${fmt(r.latency.max, 1)} | ${r.latency.n} / ${r.latency.expected} | ` +
      `${fmt(r.routerKBs.in, 1)} / ${fmt(r.routerKBs.out, 1)} (${fmt(r.routerKBs.maxIn, 1)}) | ${fmt((r.routerKBs.in * 1024) / r.rate)} | ${fmt(r.agentKBs.in, 2)} / ${fmt(r.agentKBs.out, 2)} | ` +
      `${span(r.conns.routerRouter)}, ${span(r.conns.routerAgent)}, ${span(r.conns.agent)} | ` +
      `${r.meshParts.most}; ${fmt(100 * r.meshParts.splitShare)}%, ${r.meshParts.minDegree}–${r.meshParts.maxDegree} | ${fmt(r.elu, 2)} | ${formed(r.convergence)} |`,
  );
}

const meshText = Object.keys(MESH).length === 0 ? 'production mesh' : JSON.stringify(MESH);
console.log(
  `\nwhere a router's received bytes go, per state message published (mean over routers; ${meshText}; transport = socket − RPC bytes: noise, yamux, identify)\n`,
);
console.log(
  '| agents × routers | state (digest) | author + signature | framing | duplicates (copies/message) | IHAVE / IWANT / GRAFT / PRUNE / IDONTWANT | transport | on the socket | RPCs / copies per router per s | CPU per router, cores | states per batch; batches sent / received per router per s |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const m = r.perMessage;
  const ctl = CONTROL_KINDS.map((k) => fmt(m.control[k])).join(' / ');
  console.log(
    `| ${r.agents} × ${r.routers} | ${fmt(m.state)} (${r.stateBytes.digest}) | ${fmt(m.authorSignature)} | ${fmt(m.framing)} | ${fmt(m.duplicates)} (${fmt(m.copies / Math.max(1e-9, m.unique), 2)}) | ${ctl} | ` +
      `${fmt(m.wire - m.total)} | ${fmt(m.wire)} | ${fmt(r.perRouterPerS.rpcs)} / ${fmt(r.perRouterPerS.copies)} | ${fmt(r.cpuPerRouter, 3)} | ` +
      `${fmt(r.batches.handOffs / Math.max(1e-9, r.batches.published), 1)}; ${fmt(r.batches.published, 1)} / ${fmt(r.batches.received, 1)} |`,
  );
}
