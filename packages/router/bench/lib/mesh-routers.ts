/**
 * The routers of the gossip mesh bench (bench/mesh.ts), in this process or
 * spread over child processes (lib/mesh-router-proc.ts), behind one
 * interface: snapshots of every router (peers, mesh, replicas held, bytes),
 * each process's CPU and event loop, state delays over a window, and when
 * every router holds a replica. Convergence (`converge`) is judged on it
 * before a window opens.
 *
 * Steps (child processes): reserve every router's port here, fork each child
 * with its share of the routers and every address (each router dials the
 * others as from one DNS name), wait for every 'ready'; each call is one IPC
 * request per child, matched to its answer by id.
 * Complexity: one round trip per child per call; a snapshot is O(routers).
 * Trade-off: delays measured across processes come from each state's
 * `sentAt` (wall-clock ms, 1 ms resolution), not a monotonic clock.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { GossipStats } from '@warmpath/shared/gossip';
import { freePorts, type MeshFleet, type MeshOptions } from './mesh-fleet.ts';
import { meshPartsOf } from './mesh-parts.ts';
import type { FeedCounts, FeedOptions } from './mesh-feed.ts';
import type { RpcBytes } from './rpc-bytes.ts';
import { bytesByNode } from './socket-bytes.ts';

const CHILD = new URL('./mesh-router-proc.ts', import.meta.url).pathname;
/** A child's routers listen within this long, ms. */
const READY_TIMEOUT_MS = 120_000;
/** A request is answered within this long, ms ('holds' adds its own timeout). */
const REPLY_TIMEOUT_MS = 60_000;
/** While the fleet forms, its state on stderr every this many checks (half a second each). */
const PROGRESS_EVERY = 20;

export interface RouterSpec {
  listenAddrs: string[];
  firstRouter: number;
  routers: number;
  swarmKey: string;
  /** Every router's other MeshFleet options (router peers, timing, mesh, batch window, …): JSON values only. */
  options: Omit<MeshOptions, 'routers' | 'agents' | 'firstRouter' | 'listenAddrs' | 'swarmKey' | Callbacks>;
  /** Synthetic agents this child feeds its routers (lib/mesh-feed.ts), started by a 'feed' request. */
  feed?: { agents: number; firstAgent: number } & FeedOptions;
  /** Whose delays this child records: every state delivered (default), only those a batch brought (from other routers), none. */
  delays?: 'all' | 'relayed' | 'none';
  /** The routers' candidates: every router's address (default), or router 0's only (bench/cadence.ts: sources link to the router under test). */
  candidates?: 'all' | 'first';
}

/** How RouterProcs.start lays routers out: each child's share, feed and candidates (default: an even share, all). */
export type ChildLayout = Pick<RouterSpec, 'routers' | 'feed' | 'delays' | 'candidates'> & {
  options?: Partial<RouterSpec['options']>;
};

type Callbacks = 'wrapStart' | 'onDelivery' | 'onStarted';

/** One router as seen from outside its process. */
export interface RouterSnap {
  name: string;
  peerId: string;
  peers: string[];
  meshPeers: string[];
  replicas: number;
  /** States its view applied since it started. */
  applied: number;
  /** Digest snapshot pulls its view made since it started (a gap in an agent's delta chain). */
  pulls: number;
  drops: Record<string, number>;
  rpcBytes: RpcBytes;
  stats: GossipStats;
  bytes: { read: number; written: number };
}

/** A process's cumulative CPU (µs, user + system) and event loop (idle and active ms). */
export interface ProcUsage {
  cpuUs: number;
  elu: Pick<EventLoopUtilization, 'idle' | 'active'>;
}

export type RouterRequest =
  | { id: number; type: 'snap' }
  | { id: number; type: 'measure'; on: boolean }
  | { id: number; type: 'holds'; name: string; timeoutMs: number }
  | { id: number; type: 'feed'; hz: number }
  | { id: number; type: 'stop' };

export type RouterReply =
  | { type: 'ready'; routers: Array<{ name: string; peerId: string }> }
  | { id: number; type: 'snap'; routers: RouterSnap[]; usage: ProcUsage; fed: FeedCounts | undefined }
  | { id: number; type: 'feed' }
  | { id: number; type: 'measure'; delays: number[] }
  | { id: number; type: 'holds'; at: number | null };

export interface Snapshot {
  routers: RouterSnap[];
  /** One per process holding routers. */
  usage: ProcUsage[];
  /** One per process: its synthetic feed's counts (undefined: it feeds none). */
  fed: Array<FeedCounts | undefined>;
}

export interface Routers {
  readonly count: number;
  readonly procs: number;
  addrs(): string[];
  snapshot(): Promise<Snapshot>;
  /** Starts recording each delivered state's delay (ms); `delays(false)` ends it and answers them. */
  delays(on: boolean): Promise<number[]>;
  /** Wall-clock ms at which every router held replica `name`; null if not within `timeoutMs`. */
  holds(name: string, timeoutMs: number): Promise<number | null>;
  stop(): Promise<void>;
}

/** Agents' counters, summed: how their links and publishes fared (GossipStats). */
export type AgentStats = Pick<
  GossipStats,
  'dialFailures' | 'silentPeersDropped' | 'publishErrors' | 'publishedToNoPeers' | 'handedOff'
>;

export function agentStats(agents: ReadonlyArray<{ node: { stats(): GossipStats } }>): AgentStats {
  const out: AgentStats = {
    dialFailures: 0,
    silentPeersDropped: 0,
    publishErrors: 0,
    publishedToNoPeers: 0,
    handedOff: 0,
  };
  for (const a of agents) {
    const s = a.node.stats();
    for (const k of Object.keys(out) as Array<keyof AgentStats>) out[k] += s[k];
  }
  return out;
}

/** This process's usage so far. */
export function usage(): ProcUsage {
  const cpu = process.cpuUsage();
  const { idle, active } = performance.eventLoopUtilization();
  return { cpuUs: cpu.user + cpu.system, elu: { idle, active } };
}

/** Event-loop utilization between two readings. */
export function eluBetween(a: ProcUsage, b: ProcUsage): number {
  const active = b.elu.active - a.elu.active;
  return active / Math.max(1e-9, active + b.elu.idle - a.elu.idle);
}

/** Each router's snapshot (`bytes`: its sockets' counts, socket-bytes.ts). */
export function snapRouters(fleet: MeshFleet): RouterSnap[] {
  const bytes = bytesByNode();
  return fleet.routers.map((r) => ({
    name: r.name,
    peerId: r.node.peerId,
    peers: r.node.peers(),
    meshPeers: r.node.meshPeers(),
    replicas: r.view.replicas.size,
    applied: r.view.applied,
    pulls: r.view.pulls.ok + r.view.pulls.failed,
    drops: { ...r.view.drops },
    rpcBytes: structuredClone(r.rpcBytes),
    stats: r.node.stats(),
    bytes: bytes.get(r.name) ?? { read: 0, written: 0 },
  }));
}

/** The wall-clock ms at which `check` first held (polled every 20 ms), or null after `timeoutMs`. */
export async function whenHolds(check: () => boolean, timeoutMs: number): Promise<number | null> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now();
}

/** Delays recorded while on (the in-process routers' deliveries). */
export class DelayLog {
  #xs: number[] | undefined;
  record(ms: number): void {
    this.#xs?.push(ms);
  }
  swap(on: boolean): number[] {
    const out = this.#xs ?? [];
    this.#xs = on ? [] : undefined;
    return out;
  }
}

/** The routers of a MeshFleet in this process. */
export class LocalRouters implements Routers {
  readonly procs = 1;
  readonly fleet: MeshFleet;
  readonly log: DelayLog;
  constructor(fleet: MeshFleet, log: DelayLog) {
    this.fleet = fleet;
    this.log = log;
  }
  get count(): number {
    return this.fleet.routers.length;
  }
  addrs(): string[] {
    return this.fleet.routerAddrs();
  }
  snapshot(): Promise<Snapshot> {
    return Promise.resolve({ routers: snapRouters(this.fleet), usage: [usage()], fed: [undefined] });
  }
  delays(on: boolean): Promise<number[]> {
    return Promise.resolve(this.log.swap(on));
  }
  holds(name: string, timeoutMs: number): Promise<number | null> {
    return whenHolds(() => this.fleet.routers.every((r) => r.view.replicas.has(name)), timeoutMs);
  }
  stop(): Promise<void> {
    return this.fleet.stop();
  }
}

/** The routers spread over child processes, an even share in each. */
export class RouterProcs implements Routers {
  readonly #children: ChildProcess[];
  readonly #addrs: string[];
  #nextId = 0;

  private constructor(children: ChildProcess[], addrs: string[]) {
    this.#children = children;
    this.#addrs = addrs;
  }

  get count(): number {
    return this.#addrs.length;
  }
  get procs(): number {
    return this.#children.length;
  }

  /** `layout`: each child's routers (summing to spec.routers) and feed; default an even share of `procs`. */
  static async start(
    procs: number,
    spec: Omit<RouterSpec, 'listenAddrs' | 'firstRouter'>,
    layout?: ChildLayout[],
  ): Promise<RouterProcs> {
    const listenAddrs = (await freePorts(spec.routers)).map((p) => `/ip4/127.0.0.1/tcp/${p}`);
    const n = Math.min(procs, spec.routers);
    const even = (i: number): ChildLayout => ({
      routers: Math.floor(spec.routers / n) + (i < spec.routers % n ? 1 : 0),
    });
    const shares = layout ?? Array.from({ length: n }, (_, i) => even(i));
    let first = 0;
    const children = shares.map((share) => {
      const child: RouterSpec = {
        ...spec,
        ...share,
        options: { ...spec.options, ...share.options },
        listenAddrs,
        firstRouter: first,
      };
      first += share.routers;
      return fork(CHILD, [JSON.stringify(child)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    });
    const out = new RouterProcs(children, listenAddrs);
    try {
      await Promise.all(
        children.map((c) => childAnswer<RouterReply>(c, (m) => m.type === 'ready', READY_TIMEOUT_MS, 'router process')),
      );
    } catch (err) {
      await out.stop();
      throw err;
    }
    return out;
  }

  addrs(): string[] {
    return [...this.#addrs];
  }

  async snapshot(): Promise<Snapshot> {
    const replies = await this.#ask({ type: 'snap' });
    return {
      routers: replies.flatMap((m) => (m.type === 'snap' ? m.routers : [])),
      usage: replies.flatMap((m) => (m.type === 'snap' ? [m.usage] : [])),
      fed: replies.flatMap((m) => (m.type === 'snap' ? [m.fed] : [])),
    };
  }

  /** Starts (hz > 0) or stops (0) every child's synthetic feed. */
  async feed(hz: number): Promise<void> {
    await this.#ask({ type: 'feed', hz });
  }

  async delays(on: boolean): Promise<number[]> {
    return (await this.#ask({ type: 'measure', on })).flatMap((m) => (m.type === 'measure' ? m.delays : []));
  }

  async holds(name: string, timeoutMs: number): Promise<number | null> {
    const ats = (await this.#ask({ type: 'holds', name, timeoutMs }, timeoutMs)).map((m) =>
      m.type === 'holds' ? m.at : null,
    );
    return ats.some((at) => at === null) ? null : Math.max(...(ats as number[]));
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.#children.map((c) => {
        if (c.exitCode !== null || !c.connected) return Promise.resolve();
        const exited = new Promise<void>((r) => c.once('exit', () => r()));
        c.send({ id: this.#nextId++, type: 'stop' } satisfies RouterRequest);
        return Promise.race([exited, new Promise<void>((r) => setTimeout(r, 10_000))]).then(() => void c.kill());
      }),
    );
  }

  /** Sends the request to every child; their answers, in child order. */
  #ask(req: DistributiveOmit<RouterRequest, 'id'>, extraMs = 0): Promise<RouterReply[]> {
    return Promise.all(
      this.#children.map((c) => {
        const id = this.#nextId++;
        const r = childAnswer<RouterReply>(
          c,
          (m) => 'id' in m && m.id === id,
          REPLY_TIMEOUT_MS + extraMs,
          'router process',
        );
        c.send({ ...req, id });
        return r;
      }),
    );
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The child's next message that `match`es; rejects if it exits first or takes longer than `timeoutMs` (`what`: whose, in the error). */
export function childAnswer<M>(c: ChildProcess, match: (m: M) => boolean, timeoutMs: number, what: string): Promise<M> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`${what}: no answer within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (m: M): void => {
      if (match(m)) done(undefined, m);
    };
    const onExit = (code: number | null): void => done(new Error(`${what} exited (${code}) before answering`));
    const done = (err?: Error, m?: M): void => {
      clearTimeout(timer);
      c.off('message', onMessage);
      c.off('exit', onExit);
      if (err !== undefined) reject(err);
      else resolve(m!);
    };
    c.on('message', onMessage);
    c.on('exit', onExit);
  });
}

/** Whether the fleet had formed when the window opened, and how long it took. */
export interface Convergence {
  ok: boolean;
  waitedMs: number;
  /** Parts of the routers' mesh (1: one mesh). */
  meshParts: number;
  /** Routers not holding every agent's replica. */
  routersMissing: number;
  /** Agents with no router link, and with fewer than their 2. */
  agentsUnlinked: number;
  agentsShort: number;
}

/**
 * Waits until the fleet has formed: the routers' mesh in one part, every
 * router holding every agent, every agent linked to a router; after
 * `timeoutMs` answers the state it reached (ok false: the row is flagged).
 * Checked every half second.
 */
export async function converge(
  routers: Routers,
  agents: number,
  agentLinks: () => Promise<{ peers: number[]; stats: AgentStats }>,
  timeoutMs: number,
): Promise<Convergence> {
  const t0 = performance.now();
  let checks = 0;
  for (;;) {
    const snap = await routers.snapshot();
    const { peers, stats } = await agentLinks();
    const c: Convergence = {
      ok: false,
      waitedMs: performance.now() - t0,
      meshParts: meshPartsOf(snap.routers).parts,
      routersMissing: snap.routers.filter((r) => r.replicas < agents).length,
      agentsUnlinked: peers.filter((n) => n === 0).length,
      agentsShort: peers.filter((n) => n < 2).length,
    };
    c.ok = c.meshParts === 1 && c.routersMissing === 0 && c.agentsUnlinked === 0;
    if (c.ok || c.waitedMs > timeoutMs) return c;
    if (++checks % PROGRESS_EVERY === 0) console.error(`forming: ${JSON.stringify({ ...c, ...stats })}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
