/**
 * One router at a fleet's full cadence: A agents × R routers, each agent
 * sending `--hz` states a second (seed's cadence under dead reckoning,
 * docs/GOSSIP.md), over real libp2p TCP on 127.0.0.1, measured at the one
 * router under test. The mesh bench (mesh.ts) runs a real libp2p node per
 * agent, and this host runs those at a few hundred states a second in all;
 * here the agents are synthetic (lib/mesh-feed.ts), so the routers get the
 * full rate.
 *  - The router under test: a real router gossip node (production gossip:
 *    flooding, the default batch window) and fleet view in a child process
 *    of its own (lib/mesh-router-proc.ts).
 *  - The other R − 1 routers: real router nodes too, in `--source-procs`
 *    child processes, each linked to the router under test only (it links
 *    to all, as every flooding router does): they need not relay to each
 *    other for it to get what a fleet sends it. They drop the batches it
 *    sends them unread (its sending is measured; their reading is another
 *    router's work, not its) and read no IHAVE, so they never ask it for
 *    the batches of sources they are not linked to.
 *  - Every router, the router under test too, gets its A / R agents'
 *    states through its first-hop entry point (GossipNode.handOff), each
 *    agent with a peer id of its own: judged as direct state, applied,
 *    batched and flooded as in production. Each state is built when sent
 *    (MeshFleet.stateOf; sentAt its creation, this host's one clock).
 * Steps: start the routers, wait until the sources are linked to the router
 * under test; start the feeds; wait until it holds every agent's replica;
 * `--warm-s`; then a window of `--seconds`, read at its ends.
 * Reported at the router under test: states applied per second (its own
 * agents' and those batches brought) against those the sources handed off
 * (the share delivered), delay p50 / p99 / max of the batched ones (from
 * sentAt to apply), bytes received per second on its sockets and per state,
 * batches received per second and states a batch, its process's CPU
 * (cores) and event loop; the source processes' CPU and busiest event loop
 * (which of the two saturated); the host's load before and after; states
 * refused since start, at the router under test and at the sources (by
 * trust reason, and rejected verdicts: must be 0, else the run exits 1),
 * and those a source could not take or the feed skipped late.
 *
 *   node_modules/.bin/node packages/router/bench/cadence.ts [--agents 300,1000] [--routers 8] [--hz 5.69] [--seconds 10]
 *     [--source-procs 1] [--digest-hashes 12] [--full-every 4] [--digest whole|chain] [--arrivals even|random]
 *     [--batch-ms 50] [--batch-reads 500] [--warm-s 3] [--form-s 120] [--save rows.json]
 *
 * `--digest-hashes`, `--full-every`: as mesh.ts (the defaults are seed's, as gossip-model.ts prints them).
 * `--digest`, `--arrivals`: the feed's digests (whole: self-contained in
 * every state; chain: deltas on the state before, as agents send them, which
 * a first hop coalesces within its window) and send times (even: one every
 * 1/hz s; random: a Poisson stream an agent); lib/mesh-feed.ts. Reported
 * beside them: the states the sources coalesced, and snapshot pulls at the
 * router under test in the window (a gap in a chain). With chain, give
 * `--warm-s` past WHOLE_EVERY states (WHOLE_EVERY / hz seconds): a chain broken at the
 * start (states sent before a batch had named their agent to the router
 * under test) mends at its next self-contained digest, not by a pull (the
 * synthetic agents serve none).
 * `--batch-ms`, `--batch-reads`, `--batch-states`: the routers' window floor,
 * and the batches and states a router reads a second at most (0: no such
 * budget; defaults: production's). The router under test widens its window
 * by the routers it floods to and the states its agents hand it; a source,
 * linked to it alone, is given the window it would have among all R with
 * its share of the agents at `--hz` (window.ts).
 * Smoke: --agents 20 --routers 3 --seconds 1 --warm-s 1
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import {
  BATCH_READS_PER_S,
  BATCH_STATES_PER_S,
  BATCH_WINDOW_MS,
  generateSwarmKey,
  windowFor,
} from '@warmpath/shared/gossip';
import { scriptArgs } from '@warmpath/shared/runtime';
import { TRUST_REASONS } from '../src/fleet/trust.ts';
import type { FeedCounts, FeedOptions } from './lib/mesh-feed.ts';
import {
  converge,
  eluBetween,
  RouterProcs,
  type ChildLayout,
  type RouterSnap,
  type Snapshot,
} from './lib/mesh-routers.ts';
import { delayFigures } from './lib/mesh-window.ts';

const { values: args } = scriptArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '300,1000' },
    routers: { type: 'string', default: '8' },
    hz: { type: 'string', default: '5.69' },
    seconds: { type: 'string', default: '10' },
    'source-procs': { type: 'string', default: '1' },
    'digest-hashes': { type: 'string', default: '12' },
    'full-every': { type: 'string', default: '4' },
    digest: { type: 'string', default: 'whole' },
    arrivals: { type: 'string', default: 'even' },
    'batch-ms': { type: 'string' },
    'batch-reads': { type: 'string' },
    'batch-states': { type: 'string' },
    'warm-s': { type: 'string', default: '3' },
    'form-s': { type: 'string', default: '120' },
    save: { type: 'string', default: '' },
  },
});
const SIZES = args.agents.split(',').map(Number);
const ROUTERS = Number(args.routers);
const HZ = Number(args.hz);
const WINDOW_S = Number(args.seconds);
const SOURCE_PROCS = Math.max(1, Math.min(Number(args['source-procs']), ROUTERS - 1));
const FORM_MS = 1_000 * Number(args['form-s']);
const FEED: FeedOptions = {
  digest: args.digest === 'chain' ? 'chain' : 'whole',
  arrivals: args.arrivals === 'random' ? 'random' : 'even',
  digestHashes: Number(args['digest-hashes']),
};
/** Production gossip timing, as mesh.ts runs it. */
const TIMING = { heartbeatIntervalMs: 700, redialIntervalMs: 1_000, dialTimeoutMs: 10_000, silentPeerGraceMs: 15_000 };
/** The synthetic agents' URLs (127.0.0.1): they have no connection whose address would vouch for them. */
const AGENT_NETWORKS = ['127.0.0.1/32'];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** Refusals since start: by trust reason, and verdicts that rejected a state or a batch. */
interface Refused {
  trust: Record<string, number>;
  rejected: number;
}

interface Row {
  agents: number;
  routers: number;
  hz: number;
  /** States a second the fleet makes (agents × hz), and those the feeds handed off in the window. */
  target: number;
  offered: number;
  windowS: number;
  /** At the router under test, per second: states applied, its own agents' hand-offs, states batches brought. */
  applied: number;
  own: number;
  relayed: number;
  /** Relayed states / states the sources sent in their batches (handed off less coalesced), in the window. */
  delivered: number;
  /** States a second the sources composed into another of their agent's (never sent alone), and their share of those handed off. */
  coalesced: number;
  coalescedShare: number;
  /** Snapshot pulls at the router under test in the window. */
  pullsHere: number;
  feedOptions: FeedOptions;
  latency: ReturnType<typeof delayFigures>['latency'];
  latencyQuantiles: number[];
  kbIn: number;
  kbOut: number;
  /** Of the bytes in per second, IHAVE's and IWANT's (gossipsub RPCs, lib/rpc-bytes.ts). */
  ihaveIn: number;
  iwantIn: number;
  bytesPerState: number;
  batchesIn: number;
  statesPerBatch: number;
  /** Its batches sent a second, and states in each. */
  batchesOut: number;
  cpu: number;
  elu: number;
  /** The source processes: CPU summed (cores), busiest event loop. */
  sourceCpu: number;
  sourceElu: number;
  refusedHere: Refused;
  refusedAtSources: Refused;
  /** Ignored since start at the router under test (a state whose agent a batch had not named yet, a superseded one). */
  ignoredHere: number;
  /** The router under test's view's drops since start, by reason. */
  dropsHere: Record<string, number>;
  fed: FeedCounts;
  digestHashes: number;
  fullEvery: number;
  batchMs: number | undefined;
  /** The router under test's window at the end, ms (the floor widened with the routers it floods to). */
  windowMs: number | undefined;
  sourceProcs: number;
  /** The host's 1-minute load average before the routers started and at the window's end (this run's own included). */
  load: [number, number];
}

/** The router under test (router 0, alone in its process, its A / R agents), then the sources, the rest in even shares. */
function layout(agents: number, sourceWindowMs: number): ChildLayout[] {
  const agentsOf = (i: number): number => Math.floor(agents / ROUTERS) + (i < agents % ROUTERS ? 1 : 0);
  const out: ChildLayout[] = [{ routers: 1, feed: { agents: agentsOf(0), firstAgent: 0, ...FEED }, delays: 'relayed' }];
  let router = 1;
  let agent = agentsOf(0);
  for (let p = 0; p < SOURCE_PROCS; p++) {
    const routers = Math.floor((ROUTERS - 1) / SOURCE_PROCS) + (p < (ROUTERS - 1) % SOURCE_PROCS ? 1 : 0);
    const mine = sum(Array.from({ length: routers }, (_, i) => agentsOf(router + i)));
    out.push({
      routers,
      feed: { agents: mine, firstAgent: agent, ...FEED },
      candidates: 'first',
      delays: 'none',
      options: {
        ignoreIhave: true,
        dropShare: 1,
        batchWindowMs: sourceWindowMs,
        batchReadsPerS: 0,
        batchStatesPerS: 0,
      },
    });
    router += routers;
    agent += mine;
  }
  return out;
}

async function run(agents: number): Promise<Row> {
  const batchMs = args['batch-ms'] === undefined ? undefined : Number(args['batch-ms']);
  const reads = args['batch-reads'] === undefined ? BATCH_READS_PER_S : Number(args['batch-reads']);
  const states = args['batch-states'] === undefined ? BATCH_STATES_PER_S : Number(args['batch-states']);
  const floor = batchMs ?? BATCH_WINDOW_MS;
  const share = agents / ROUTERS;
  const sourceWindow = windowFor(floor, ROUTERS - 1, { agents: share, perS: share * HZ }, reads, states);
  const options = {
    routerPeers: 0,
    timing: TIMING,
    agentNetworks: AGENT_NETWORKS,
    digestHashes: Number(args['digest-hashes']),
    fullEvery: Number(args['full-every']),
    ...(batchMs !== undefined ? { batchWindowMs: batchMs } : {}),
    batchReadsPerS: reads,
    batchStatesPerS: states,
  };
  const spec = { routers: ROUTERS, swarmKey: generateSwarmKey(), options };
  const loadBefore = loadavg()[0]!;
  const routers = await RouterProcs.start(SOURCE_PROCS + 1, spec, layout(agents, sourceWindow));
  try {
    const none = {
      peers: [],
      stats: { dialFailures: 0, silentPeersDropped: 0, publishErrors: 0, publishedToNoPeers: 0, handedOff: 0 },
    };
    const formed = await converge(routers, 0, () => Promise.resolve(none), FORM_MS);
    if (!formed.ok)
      throw new Error(
        `${agents} × ${ROUTERS}: the sources did not link to the router under test: ${JSON.stringify(formed)}`,
      );
    await routers.feed(HZ);
    const deadline = performance.now() + FORM_MS;
    while ((await routers.snapshot()).routers[0]!.replicas < agents) {
      if (performance.now() > deadline)
        throw new Error(`${agents} × ${ROUTERS}: the router under test never held every agent`);
      await sleep(500);
    }
    await sleep(1_000 * Number(args['warm-s']));
    const before = await routers.snapshot();
    await routers.delays(true);
    const t0 = performance.now();
    await sleep(1_000 * WINDOW_S);
    const delays = (await routers.delays(false)).sort((a, b) => a - b);
    const after = await routers.snapshot();
    const seconds = (performance.now() - t0) / 1_000;
    await routers.feed(0);
    const load: [number, number] = [loadBefore, loadavg()[0]!];
    return { ...rowOf(agents, before, after, seconds), ...delayFigures(delays, 0), batchMs, load };
  } finally {
    await routers.stop();
  }
}

/** The window's figures from its two readings (the router under test is the first router, in the first process). */
function rowOf(
  agents: number,
  before: Snapshot,
  after: Snapshot,
  seconds: number,
): Omit<Row, 'latency' | 'latencyQuantiles' | 'batchMs' | 'load'> {
  const [b, a] = [before.routers[0]!, after.routers[0]!];
  const per = (f: (r: RouterSnap) => number): number => (f(a) - f(b)) / seconds;
  const fed = (s: Snapshot, from: number): FeedCounts[] =>
    s.fed.slice(from).filter((x): x is FeedCounts => x !== undefined);
  const handed = (s: Snapshot): number => sum(fed(s, 1).map((x) => x.handed));
  const relayed = per((r) => r.stats.received - r.stats.handOffsReceived);
  const sourcesOffered = (handed(after) - handed(before)) / seconds;
  const coalescedBy = (s: Snapshot): number => sum(s.routers.slice(1).map((r) => r.stats.statesCoalesced));
  const coalesced = (coalescedBy(after) - coalescedBy(before)) / seconds;
  const cpu = (i: number): number => (after.usage[i]!.cpuUs - before.usage[i]!.cpuUs) / 1e6 / seconds;
  const sources = after.usage.map((_, i) => i).slice(1);
  const totals = fed(after, 0);
  return {
    agents,
    routers: ROUTERS,
    hz: HZ,
    target: agents * HZ,
    offered: sourcesOffered + (after.fed[0]!.handed - before.fed[0]!.handed) / seconds,
    windowS: seconds,
    applied: per((r) => r.applied),
    own: per((r) => r.stats.handOffsReceived),
    relayed,
    delivered: relayed / Math.max(1e-9, sourcesOffered - coalesced),
    coalesced,
    coalescedShare: coalesced / Math.max(1e-9, sourcesOffered),
    pullsHere: a.pulls - b.pulls,
    feedOptions: FEED,
    kbIn: per((r) => r.bytes.read) / 1024,
    kbOut: per((r) => r.bytes.written) / 1024,
    ihaveIn: per((r) => r.rpcBytes.control.ihave),
    iwantIn: per((r) => r.rpcBytes.control.iwant),
    bytesPerState: per((r) => r.bytes.read) / Math.max(1e-9, relayed),
    batchesIn: per((r) => r.stats.batchesReceived),
    statesPerBatch:
      relayed /
      Math.max(
        1e-9,
        per((r) => r.stats.batchesReceived),
      ),
    batchesOut: per((r) => r.stats.batchesPublished),
    windowMs: a.stats.batchWindowMs,
    cpu: cpu(0),
    elu: eluBetween(before.usage[0]!, after.usage[0]!),
    sourceCpu: sum(sources.map(cpu)),
    sourceElu: Math.max(...sources.map((i) => eluBetween(before.usage[i]!, after.usage[i]!))),
    refusedHere: refused([a]),
    refusedAtSources: refused(after.routers.slice(1)),
    ignoredHere: a.stats.ignored,
    dropsHere: a.drops,
    fed: {
      due: sum(totals.map((x) => x.due)),
      handed: sum(totals.map((x) => x.handed)),
      notTaken: sum(totals.map((x) => x.notTaken)),
      skipped: sum(totals.map((x) => x.skipped)),
    },
    digestHashes: Number(args['digest-hashes']),
    fullEvery: Number(args['full-every']),
    sourceProcs: SOURCE_PROCS,
  };
}

function refused(routers: RouterSnap[]): Refused {
  const trust: Record<string, number> = {};
  for (const reason of TRUST_REASONS) trust[reason] = sum(routers.map((r) => r.drops[reason] ?? 0));
  return { trust, rejected: sum(routers.map((r) => r.stats.rejected)) };
}

const fmt = (x: number, d = 0): string => (Number.isFinite(x) ? x.toFixed(d) : '—');
const total = (r: Refused): number => r.rejected + sum(Object.values(r.trust));

const rows: Row[] = [];
for (const agents of SIZES) rows.push(await run(agents));
// A refused state means a synthetic agent failed a check a real one passes: the row measures something else.
if (rows.some((r) => total(r.refusedHere) + total(r.refusedAtSources) > 0)) {
  console.error('states were refused (the rows say where): the feed does not pass as real agents');
  process.exitCode = 1;
}
if (args.save !== '') writeFileSync(args.save, `${JSON.stringify(rows, null, 1)}\n`);
console.log(
  `\none router at full cadence: ${HZ} states per agent-second (${FEED.arrivals}), ${FEED.digest} digests, ${WINDOW_S} s window; the other routers in ${SOURCE_PROCS} source process(es), each linked to the router under test; every router fed its agents' states through its hand-off entry point\n`,
);
console.log(
  '| agents × routers | fleet states/s: target / offered | applied/s at the router (own + from batches) | delivered | coalesced at sources/s (share) | pulls here | delay p50 / p99 / max, ms | KB/s in | bytes in a state | window, ms; batches in/s; states a batch | router CPU, cores; event loop | sources CPU, cores; event loop | refused here / at sources | not taken, skipped | host load before / after |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const l = r.latency;
  console.log(
    `| ${r.agents} × ${r.routers} | ${fmt(r.target)} / ${fmt(r.offered)} | ${fmt(r.applied)} (${fmt(r.own)} + ${fmt(r.relayed)}) | ${fmt(100 * r.delivered, 1)}% | ${fmt(r.coalesced)} (${fmt(100 * r.coalescedShare, 1)}%) | ${r.pullsHere} | ${fmt(l.p50)} / ${fmt(l.p99)} / ${fmt(l.max)} | ` +
      `${fmt(r.kbIn)} | ${fmt(r.bytesPerState)} | ${r.windowMs ?? '—'}; ${fmt(r.batchesIn)}; ${fmt(r.statesPerBatch, 1)} | ${fmt(r.cpu, 2)}; ${fmt(r.elu, 2)} | ${fmt(r.sourceCpu, 2)}; ${fmt(r.sourceElu, 2)} | ` +
      `${total(r.refusedHere)} / ${total(r.refusedAtSources)} | ${r.fed.notTaken}, ${r.fed.skipped} | ${fmt(r.load[0], 1)} / ${fmt(r.load[1], 1)} |`,
  );
}
