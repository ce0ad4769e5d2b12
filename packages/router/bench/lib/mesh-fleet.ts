/**
 * An in-process gossip mesh for the mesh test and bench, on 127.0.0.1 under
 * one generated swarm key:
 *  - R routers, each a real subscribed gossip node feeding a real FleetView
 *    through the topic validator (`judge`) and `applyBytes`, as router.ts
 *    wires them; every router has every router's address as a candidate (as
 *    from one DNS name: ports are reserved first, addresses carry no peer
 *    id, a router skips its own) and keeps `routerPeers` of them (0 = all);
 *  - A agents, each a publish-only gossip node with a persistent identity,
 *    sending its replica's state in the real wire encoding to `agentPeers`
 *    routers that it picks from every router's address.
 * Several nodes share this process and its event loop, so any latency
 * measured here includes every other node's CPU work: an upper bound for a
 * fleet of real processes.
 *
 * With `routerAddrs`, a fleet of agents only publishes to routers elsewhere
 * (another process: bench/lib/mesh-agents.ts), under the given swarm key.
 *
 * State messages carry a self-contained digest of `digestHashes` chain hashes
 * (default DIGEST_HASHES) and never need a snapshot pull; every `fullEvery`th
 * message carries the static fields, the others leave them out as an agent's
 * change-triggered messages do (shared compact.ts).
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import {
  createGossipNode,
  generateIdentity,
  generateSwarmKey,
  type GossipMeshTuning,
  type GossipRelay,
  type GossipNode,
  type GossipOrigin,
  type GossipTiming,
} from '@warmpath/shared/gossip';
import { encodeState, type ReplicaState } from '@warmpath/shared/wire';
import { routerConfig } from '../../src/config.ts';
import { FleetView } from '../../src/fleet/view.ts';
import { makeState } from '../../test/helpers.ts';
import { meshPartsOf, sampleMesh, type MeshParts, type MeshSample } from './mesh-parts.ts';
import { countRpc, emptyRpcBytes, type RpcBytes } from './rpc-bytes.ts';

export type { MeshSample } from './mesh-parts.ts';

export const MESH_FLEET = 'mesh';
/** Chain hashes in each message's digest: 48 × 8 bytes. */
const DIGEST_HASHES = 48;
/** Agents started at once (a ramp, not all at once): bounds the burst of noise handshakes on a loaded host. */
const START_BATCH = 10;
/** A batch's links are waited for at most this long, ms; slow links then finish while the next batch starts. */
const BATCH_WAIT_MS = 5_000;
/** The next batch starts once this process's event loop is busy less than this share of a quarter second (or after ROOM_WAIT_MS). */
const ROOM_ELU = 0.6;
const ROOM_WAIT_MS = 10_000;

export interface MeshOptions {
  routers: number;
  agents: number;
  /** Routers each agent publishes to (its gossipPeers); default 2. */
  agentPeers?: number;
  /** Router peers each router keeps (its gossipPeers; 0 = every earlier router); default 0. */
  routerPeers?: number;
  timing?: GossipTiming;
  /** Mesh overrides for every node (default: the production constants). */
  mesh?: GossipMeshTuning;
  /** Runs each node's start, e.g. inside an AsyncLocalStorage context naming the node. */
  wrapStart?: (name: string, start: () => Promise<void>) => Promise<void>;
  /** Every router's listen address, reserved elsewhere; this fleet hosts `routers` of them from `firstRouter` (default: ports of its own). */
  listenAddrs?: string[];
  firstRouter?: number;
  /** The routers' candidates (default: every listen address). */
  candidates?: string[];
  /** Routers elsewhere that these agents publish to (default: this fleet's routers). */
  routerAddrs?: string[];
  /** The first agent's number (names are agent-<n>; unique across processes). Default 0. */
  firstAgent?: number;
  /** Swarm key to join (default: a new one). */
  swarmKey?: string;
  /** Chain hashes in each message's digest (default DIGEST_HASHES). */
  digestHashes?: number;
  /** Every this many messages of an agent carry the static fields (default 1: all). */
  fullEvery?: number;
  /** Routers' batch window, ms (GossipOptions.batchWindowMs; 0: no hand-off, agents publish signed states). Default: production. */
  batchWindowMs?: number | undefined;
  /** Batches a flooding router reads a second at most (GossipOptions.batchReadsPerS). Default: production. */
  batchReadsPerS?: number | undefined;
  /** States a flooding router reads a second at most (GossipOptions.batchStatesPerS). Default: production. */
  batchStatesPerS?: number | undefined;
  /** Routers' batch relay (GossipOptions.relay). Default: production. */
  relay?: GossipRelay | undefined;
  /** Networks the routers' views take agent URLs from whatever the publisher's address (FleetView agentNetworks; default none). */
  agentNetworks?: string[];
  /** The routers read no IHAVE, so never ask for what they missed (bench/cadence.ts: sources not linked to each other). */
  ignoreIhave?: boolean;
  /** Share of the message copies a router receives that it drops unread, as a lost copy (default 0). */
  dropShare?: number;
  /** Called after each batch of agents has started and linked (or waited BATCH_WAIT_MS), with the agents so far. */
  onStarted?: (agents: number) => void;
  /** Every state a router applied, decoded, with the time (performance.now()) it was delivered. */
  onDelivery?: (router: MeshRouter, state: ReplicaState, origin: GossipOrigin, at: number) => void;
}

export interface MeshRouter {
  readonly name: string;
  readonly node: GossipNode;
  readonly view: FleetView;
  /** Every RPC this router received, by where its bytes go (lib/rpc-bytes.ts). */
  readonly rpcBytes: RpcBytes;
}

export interface MeshAgent {
  readonly name: string;
  readonly node: GossipNode;
  readonly identity: Uint8Array;
  readonly bootAt: number;
  readonly boot: string;
  seq: number;
  /** This agent's messages carry the static fields every this many (default: the fleet's `fullEvery`). */
  fullEvery?: number;
  /** performance.now() of each publish, by seq (the latest few). */
  readonly sentAt: Map<number, number>;
}

export class MeshFleet {
  readonly routers: MeshRouter[] = [];
  readonly agents: MeshAgent[] = [];
  readonly #o: MeshOptions;
  readonly swarmKey: string;
  #nextAgent = 0;
  readonly #digest: BigUint64Array;

  private constructor(o: MeshOptions) {
    this.#o = o;
    this.swarmKey = o.swarmKey ?? generateSwarmKey();
    this.#nextAgent = o.firstAgent ?? 0;
    this.#digest = new BigUint64Array(o.digestHashes ?? DIGEST_HASHES).map(
      (_, i) => BigInt(i + 1) * 0x9e3779b97f4a7c15n,
    );
  }

  static async start(o: MeshOptions): Promise<MeshFleet> {
    const fleet = new MeshFleet(o);
    try {
      const addrs = o.listenAddrs ?? (await freePorts(o.routers)).map((p) => `/ip4/127.0.0.1/tcp/${p}`);
      const first = o.firstRouter ?? 0;
      for (let i = first; i < first + o.routers; i++) await fleet.#addRouter(i, addrs[i]!, o.candidates ?? addrs);
      const all = o.routerAddrs ?? fleet.routerAddrs();
      for (let i = 0; i < o.agents; i += START_BATCH) {
        await Promise.all(Array.from({ length: Math.min(START_BATCH, o.agents - i) }, () => fleet.addAgent(all)));
        await fleet.#linked(fleet.agents.slice(i));
        await room();
        o.onStarted?.(fleet.agents.length);
      }
    } catch (err) {
      await fleet.stop();
      throw err;
    }
    return fleet;
  }

  /** Every router's listen multiaddrs. */
  routerAddrs(except: readonly MeshRouter[] = []): string[] {
    return this.routers.filter((r) => !except.includes(r)).flatMap((r) => r.node.multiaddrs());
  }

  /** Publishes the agent's next state (seq + 1); resolves to the number of peers it went to. */
  publish(agent: MeshAgent): Promise<number> {
    agent.seq++;
    agent.sentAt.set(agent.seq, performance.now());
    agent.sentAt.delete(agent.seq - 64);
    return agent.node.publish(encodeState(this.stateOf(agent))).catch(() => 0);
  }

  /**
   * Every agent publishes once per `intervalMs`, the agents spread evenly over
   * the period (one publish every intervalMs / agents), as independent agents
   * are: never all at once. Returns the stop function.
   */
  startPublishing(intervalMs: number): () => void {
    let next = 0;
    const timer = setInterval(
      () => {
        const agent = this.agents[next++ % this.agents.length];
        if (agent !== undefined) void this.publish(agent);
      },
      Math.max(1, intervalMs / Math.max(1, this.agents.length)),
    );
    return () => clearInterval(timer);
  }

  /** Encoded bytes of an agent's state message, whole and without its digest (the digest's share is the difference). */
  stateBytes(): { whole: number; withoutDigest: number } {
    const agent = this.agents[0] ?? {
      name: 'agent-0',
      bootAt: Date.now(),
      boot: randomBytes(9).toString('base64url'),
      seq: 1,
    };
    const state = this.stateOf(agent);
    return {
      whole: encodeState(state).byteLength,
      withoutDigest: encodeState({ ...state, digest: { ...state.digest, size: 0, added: new BigUint64Array(0) } })
        .byteLength,
    };
  }

  /** The routers an agent is connected to. */
  linksOf(agent: MeshAgent): MeshRouter[] {
    const peers = new Set(agent.node.peers());
    return this.routers.filter((r) => peers.has(r.node.peerId));
  }

  /** Connected peers of each router, split into routers and agents; and of each agent. */
  connections(): { routerToRouter: number[]; routerToAgent: number[]; agent: number[] } {
    const routerIds = new Set(this.routers.map((r) => r.node.peerId));
    const split = this.routers.map((r) => r.node.peers().filter((p) => routerIds.has(p)).length);
    return {
      routerToRouter: split,
      routerToAgent: this.routers.map((r, i) => r.node.peers().length - split[i]!),
      agent: this.agents.map((a) => a.node.peers().length),
    };
  }

  /** The routers' mesh now (meshPartsOf). */
  meshParts(): MeshParts {
    return meshPartsOf(this.routers.map((r) => ({ peerId: r.node.peerId, meshPeers: r.node.meshPeers() })));
  }

  /** The mesh sampled every `everyMs` for `windowMs` (sampleMesh). */
  sampleMesh(windowMs: number, everyMs: number): Promise<MeshSample> {
    return sampleMesh(windowMs, everyMs, () => Promise.resolve(this.meshParts()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.agents, ...this.routers].map((n) => n.node.stop().catch(() => {})));
  }

  async #addRouter(i: number, listen: string, candidates: string[]): Promise<void> {
    const config = routerConfig({ fleet: MESH_FLEET });
    const view = new FleetView({
      fleet: MESH_FLEET,
      chunkChars: config.chunkChars,
      stateTtlMs: config.stateTtlMs,
      forgetAfterMs: config.forgetAfterMs,
      agentNetworks: this.#o.agentNetworks ?? [],
    });
    const node = await createGossipNode({
      fleet: MESH_FLEET,
      swarmKey: this.swarmKey,
      onWarning: null,
      listen: [listen],
      bootstrap: candidates,
      gossipPeers: this.#o.routerPeers ?? 0,
      ...(this.#o.batchWindowMs !== undefined ? { batchWindowMs: this.#o.batchWindowMs } : {}),
      ...(this.#o.batchReadsPerS !== undefined ? { batchReadsPerS: this.#o.batchReadsPerS } : {}),
      ...(this.#o.batchStatesPerS !== undefined ? { batchStatesPerS: this.#o.batchStatesPerS } : {}),
      ...(this.#o.relay !== undefined ? { relay: this.#o.relay } : {}),
      ...(this.#o.timing !== undefined ? { timing: this.#o.timing } : {}),
      ...(this.#o.mesh !== undefined ? { mesh: this.#o.mesh } : {}),
    });
    const router: MeshRouter = { name: `router-${i}`, node, view, rpcBytes: emptyRpcBytes() };
    const seen = new Set<string>();
    const drop = this.#o.dropShare ?? 0;
    node.onRpc((rpc, bytes) => {
      countRpc(router.rpcBytes, rpc, bytes, seen);
      // Counted as received, then lost: gossipsub never sees the copy (its IHAVE and IWANT still pass).
      if (drop > 0) rpc.messages = rpc.messages.filter(() => Math.random() >= drop);
      if (this.#o.ignoreIhave === true && rpc.control !== undefined) rpc.control.ihave = [];
    });
    node.setValidator((bytes, origin) => view.judge(bytes, origin));
    const onDelivery = this.#o.onDelivery;
    node.onMessage((bytes, _from, origin) => {
      const applied = view.applyBytes(bytes, origin);
      if (applied !== undefined) onDelivery?.(router, applied, origin, performance.now());
    });
    await this.#start(router.name, node);
    this.routers.push(router);
  }

  /** Starts one more agent with these candidate routers (not waiting for its links). */
  async addAgent(candidates: string[]): Promise<MeshAgent> {
    const name = `agent-${this.#nextAgent++}`;
    const identity = await generateIdentity();
    const agent: MeshAgent = {
      name,
      node: await this.#agentNode(identity, candidates),
      identity,
      bootAt: Date.now() - 60_000,
      boot: randomBytes(9).toString('base64url'),
      seq: 0,
      sentAt: new Map(),
    };
    await this.#start(name, agent.node);
    this.agents.push(agent);
    return agent;
  }

  /** Waits (at most BATCH_WAIT_MS) until these agents hold their router links, so the next batch does not pile onto pending handshakes. */
  async #linked(agents: MeshAgent[]): Promise<void> {
    const remote = this.#o.routerAddrs !== undefined;
    const want = Math.min(this.#o.agentPeers ?? 2, remote ? Infinity : this.routers.length);
    const links = (a: MeshAgent): number => (remote ? a.node.peers().length : this.linksOf(a).length);
    const deadline = performance.now() + BATCH_WAIT_MS;
    while (performance.now() < deadline && !agents.every((a) => links(a) >= want))
      await new Promise((r) => setTimeout(r, 50));
  }

  #agentNode(identity: Uint8Array, candidates: string[]): Promise<GossipNode> {
    return createGossipNode({
      fleet: MESH_FLEET,
      swarmKey: this.swarmKey,
      onWarning: null,
      privateKey: identity,
      subscribe: false,
      bootstrap: candidates,
      gossipPeers: this.#o.agentPeers ?? 2,
      ...(this.#o.timing !== undefined ? { timing: this.#o.timing } : {}),
      ...(this.#o.mesh !== undefined ? { mesh: this.#o.mesh } : {}),
    });
  }

  #start(name: string, node: GossipNode): Promise<void> {
    return this.#o.wrapStart !== undefined ? this.#o.wrapStart(name, () => node.start()) : node.start();
  }

  /** An agent's state at its `seq`, as its publish sends it (sentAt now). */
  stateOf(agent: Pick<MeshAgent, 'name' | 'bootAt' | 'boot' | 'seq' | 'fullEvery'>): ReplicaState {
    const port = 20_000 + Number(agent.name.slice(agent.name.indexOf('-') + 1));
    const fullEvery = agent.fullEvery ?? this.#o.fullEvery ?? 1;
    return makeState(agent.name, {
      fleet: MESH_FLEET,
      boot: agent.boot,
      bootAt: agent.bootAt,
      seq: agent.seq,
      ...((agent.seq - 1) % fullEvery !== 0 ? { staticSeq: 1 } : {}),
      url: `http://127.0.0.1:${port}`,
      admin: '',
      load: {
        running: agent.seq % 7,
        kvUsedTokens: (agent.seq * 512) % 100_000,
        inflight: agent.seq % 5,
        inflightTokens: (agent.seq * 97) % 8_192,
      },
      digest: { size: this.#digest.length, added: this.#digest },
    });
  }
}

/**
 * Waits (at most ROOM_WAIT_MS) until this process's event loop has room: on
 * a loaded host the ramp slows rather than pile handshakes onto links still
 * forming, whose streams would then time out and be redialed (more
 * handshakes: a fleet that never forms).
 */
async function room(): Promise<void> {
  for (const end = performance.now() + ROOM_WAIT_MS; performance.now() < end;) {
    const e0 = performance.eventLoopUtilization();
    await new Promise((r) => setTimeout(r, 250));
    if (performance.eventLoopUtilization(e0).utilization < ROOM_ELU) return;
  }
}

/** n free TCP ports on 127.0.0.1, reserved by listening and released at once (another process could take one in between: unlikely). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((r) => server.close(r))));
  return ports;
}
