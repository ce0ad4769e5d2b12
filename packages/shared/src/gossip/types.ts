/** The gossip node's public contract: options, events, counters and the node interface. */
import type { RPC } from '@libp2p/gossipsub/message';
import type { Libp2pOptions } from 'libp2p';
import type { GOSSIP_WARNING } from './constants.ts';

/** libp2p's private key type, named without depending on @libp2p/interface. */
export type GossipPrivateKey = NonNullable<Libp2pOptions['privateKey']>;

/** Per-node timing overrides (tests, benches); production uses the constants. */
export interface GossipTiming {
  heartbeatIntervalMs?: number;
  redialIntervalMs?: number;
  dialTimeoutMs?: number;
  isolationWarningAfterMs?: number;
  silentPeerGraceMs?: number;
  /** How often `bootstrapDns` names are re-resolved. */
  dnsIntervalMs?: number;
}

/**
 * Per-node overrides of the fleet topic's mesh (benches compare settings);
 * production uses the constants (MESH_D…, IDONTWANT_MIN_BYTES).
 */
export interface GossipMeshTuning {
  D?: number;
  Dlo?: number;
  Dhi?: number;
  Dlazy?: number;
  /** Heartbeats whose message ids each IHAVE advertises (gossipsub's mcacheGossip). */
  gossipWindows?: number;
  /** Messages of at least this many bytes make their receiver send IDONTWANT to its mesh peers. */
  idontwantMinDataSize?: number;
}

/** A gossipsub RPC as received (messages and control), for byte accounting. */
export type GossipRpc = RPC;

/** Every address a name resolves to (A and AAAA); the default is the OS resolver (`dns.lookup`, all: true). */
export type GossipResolver = (name: string) => Promise<string[]>;

export interface GossipOptions {
  /** Fleet name; the topic is `warmpath/<fleet>/state/1`. */
  fleet: string;
  /** Multiaddrs to listen on; default ['/ip4/127.0.0.1/tcp/0']. */
  listen?: string[];
  /** Multiaddrs of peers to dial, normally ending in /p2p/<peer id>. This node's own address may appear (it is skipped), so every node can share one list. */
  bootstrap?: string[];
  /**
   * Names whose every A/AAAA record is a peer to dial, re-resolved every
   * `timing.dnsIntervalMs`: `name` (port 4001) or `name:port`. A Kubernetes
   * headless Service lists every pod. The peer id is learned on the first dial.
   */
  bootstrapDns?: string[];
  /** Resolver for `bootstrapDns` (tests inject one). */
  resolve?: GossipResolver;
  /**
   * Stay connected to this many fleet-topic peers (routers) out of the
   * bootstrap and DNS candidates, picked at random and re-picked when one goes
   * away; 0 = dial every candidate. Connected subscribers count whoever
   * dialed. Default 0.
   */
  gossipPeers?: number;
  /** Connections held open at most (libp2p's connection manager); default MAX_CONNECTIONS. */
  maxConnections?: number;
  /** Contents of a libp2p private-network key file (see generateSwarmKey). Required unless `insecureNoSwarmKey`. */
  swarmKey?: string | Uint8Array;
  /** Join without a swarm key: anyone who reaches the gossip port can join and publish. Tests and experiments only. */
  insecureNoSwarmKey?: boolean;
  /** Stable identity: a libp2p private key or its protobuf bytes (see generateIdentity). Without it the peer id changes on every start. */
  privateKey?: GossipPrivateKey | Uint8Array;
  /** Operator-facing warnings. Default: process.emitWarning. Pass null to rely on onEvent only. */
  onWarning?: ((warning: GossipWarning) => void) | null;
  timing?: GossipTiming;
  mesh?: GossipMeshTuning;
  /**
   * Subscribe to the fleet topic (default true). Agents publish only: they
   * never receive the fleet's state, so a fleet of N agents costs each agent
   * O(1) messages, not O(N). A publish-only node must be connected to
   * subscribers (routers) directly; it relays nothing.
   */
  subscribe?: boolean;
  /**
   * Further topics of this fleet this node subscribes to and publishes on,
   * by name: `routers` is `warmpath/<fleet>/routers/1` (routers share their
   * tenants' usage there). Lowercase letters, digits and '-'; not `state`.
   * Default none (agents never join one).
   */
  channels?: readonly string[];
  /**
   * The model groups a subscriber serves: it subscribes to their topics
   * only, not the fleet topic, and receives and relays no other group's
   * state (groups.ts). Absent: every group — the fleet topic, and each
   * group's topic once the node learns of it (joinGroup, or a peer's
   * subscription). Ignored on a publish-only node.
   */
  groups?: readonly string[];
  /**
   * A subscriber's batch window, ms (default BATCH_WINDOW_MS; 0 = off): it
   * takes states agents hand it over their connection and relays them in
   * one message per window and group (batch.ts, handoff.ts). Off, it offers
   * no hand-off and agents publish signed states as before. A publish-only
   * node hands off to a router that offers it whatever this is.
   */
  batchWindowMs?: number;
  /**
   * Batches a flooding router reads a second at most (default
   * BATCH_READS_PER_S; 0 = the window stays `batchWindowMs`): its window
   * widens to (routers it floods to) × 1000 / this ms when that is longer,
   * up to 1,000 ms (window.ts `batchWindowFor`).
   */
  batchReadsPerS?: number;
  /**
   * States a flooding router reads a second at most (default
   * BATCH_STATES_PER_S; 0 = no states budget): its window widens until the
   * routers sending as it does, their agents' states coalesced within a
   * window, send each reader at most this many (window.ts `statesWindowFor`).
   */
  batchStatesPerS?: number;
  /**
   * How a batching subscriber's batches reach the other routers (default
   * BATCH_RELAY): 'flood', each batch once to every connected router
   * subscribed to its topic, which relays none of it (a copy missed comes by
   * IHAVE/IWANT), and the node dials every candidate router whatever
   * `gossipPeers` says; 'mesh', to its gossipsub mesh peers, which relay it
   * on. Without a batch window (0) the node meshes as 'mesh'.
   */
  relay?: GossipRelay;
}

/** GossipOptions.relay: a batch flooded to the group's routers, or relayed through the mesh. */
export type GossipRelay = 'flood' | 'mesh';

/** Who a fleet-topic message is from, as this node sees it. */
export interface GossipOrigin {
  /** The author: the peer that signed the message (gossipsub's StrictSign: it cannot be forged). */
  readonly peer: string;
  /** The neighbour it arrived from: the author itself, or a peer relaying it. */
  readonly via: string;
  /**
   * A state that came in a batch: the router that packed it (the batch's
   * signer), vouching that the author handed it the state over its own
   * connection. Absent: the author signed it, or handed it to this node.
   */
  readonly vouchedBy?: string;
  /** Remote IP addresses of this node's direct connections to the author; empty when it is not connected. */
  readonly addresses: readonly string[];
  /** Remote IP addresses of this node's connections to `via` (the same as `addresses` when the author sent it). */
  readonly viaAddresses: readonly string[];
}

/** A validator's decision: `reject` drops it and lowers the sender's score; `ignore` drops it without penalty. */
export type GossipVerdict = 'accept' | 'reject' | 'ignore';

/** Decides each fleet-topic message before it is delivered or relayed. Synchronous and cheap; a throw counts as `ignore`. */
export type GossipValidator = (data: Uint8Array, origin: GossipOrigin) => GossipVerdict;

export type GossipWarningCode = (typeof GOSSIP_WARNING)[keyof typeof GOSSIP_WARNING];

export interface GossipWarning {
  code: GossipWarningCode;
  message: string;
}

export type GossipEvent =
  | { type: 'warning'; warning: GossipWarning }
  | { type: 'peer:connect'; peer: string }
  | { type: 'peer:disconnect'; peer: string }
  /** `peer` joined this node's mesh for one of its topics (left it for the last one): it now relays to/from us. */
  | { type: 'mesh:join'; peer: string }
  | { type: 'mesh:leave'; peer: string };

export interface GossipStats {
  /** publish() calls that reached gossipsub without error. */
  published: number;
  /** Of those, how many had no subscribed peer to send to (counted, not thrown). */
  publishedToNoPeers: number;
  /** publish() calls that failed inside gossipsub. */
  publishErrors: number;
  /** Fleet-topic messages received from other nodes. */
  received: number;
  /** Message or event handlers that threw (or rejected). */
  handlerErrors: number;
  /** Bootstrap dials that failed or timed out. */
  dialFailures: number;
  /** Peers hung up because the node held more than `maxConnections`. */
  overCapDropped: number;
  /** `bootstrapDns` lookups that failed (the previous answer is kept). */
  dnsFailures: number;
  /** Connections hung up because the peer stayed silent on the fleet topic (see SILENT_PEER_GRACE_MS). */
  silentPeersDropped: number;
  /** Fleet-topic messages the validator rejected (the sender's score dropped) or ignored. */
  rejected: number;
  ignored: number;
  /** A publish-only node: states handed to a router (handoff.ts) rather than published signed. */
  handedOff: number;
  /** A subscriber: states agents handed it, batches it published, batches received. */
  handOffsReceived: number;
  batchesPublished: number;
  batchesReceived: number;
  /** A batching subscriber: handed-off states composed into another of their agent's waiting in the window (batch.ts, coalesce.ts). */
  statesCoalesced: number;
  /** A batching subscriber: its batch window now, ms (flooding, it widens with the routers and the states: window.ts). */
  batchWindowMs?: number;
}

/** Every counter at zero: a node's stats when it starts. */
export function zeroStats(): GossipStats {
  return {
    published: 0,
    publishedToNoPeers: 0,
    publishErrors: 0,
    received: 0,
    handlerErrors: 0,
    dialFailures: 0,
    silentPeersDropped: 0,
    dnsFailures: 0,
    overCapDropped: 0,
    rejected: 0,
    ignored: 0,
    handedOff: 0,
    handOffsReceived: 0,
    batchesPublished: 0,
    batchesReceived: 0,
    statesCoalesced: 0,
  };
}

export interface GossipNode {
  readonly peerId: string;
  readonly topic: string;
  /** Listening addresses, each ending in /p2p/<peer id>. */
  multiaddrs(): string[];
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Publish a state; resolves to the number of peers it was sent to. Zero
   * peers is not an error. With `group`, on that group's topic and, while a
   * connected peer takes only the fleet topic, on the fleet topic too
   * (groups.ts); without, on the fleet topic.
   */
  publish(data: Uint8Array, group?: string): Promise<number>;
  /**
   * A node serving every group joins `group`'s topic (a state of it came on
   * the fleet topic); false when it serves only some groups, already holds
   * it, or holds MAX_GROUPS.
   */
  joinGroup(group: string): boolean;
  /** The groups whose topics this node holds: those it serves, or those a node serving every group joined so far. */
  groups(): string[];
  /** Does this node serve every group (no `groups` option)? */
  readonly servesAll: boolean;
  /** Handlers run synchronously on delivery and must not block; throws are caught and counted. `from` is the author (`origin.peer`). */
  onMessage(handler: (data: Uint8Array, from: string, origin: GossipOrigin) => void): () => void;
  /**
   * Installs (or, with undefined, removes) the fleet topic's validator: every
   * message passes it before it is delivered or relayed; messages over
   * MAX_MESSAGE_BYTES are rejected before it runs.
   */
  setValidator(validate: GossipValidator | undefined): void;
  /** gossipsub's score of a peer (0 for an unknown one); below GRAYLIST_THRESHOLD its messages are not even read. */
  peerScore(peer: string): number;
  onEvent(handler: (event: GossipEvent) => void): () => void;
  /** Connected peers (any topic). */
  peers(): string[];
  /** Hangs up every connection to `peer` (it may dial back; a publish-only node that was hung up on picks another router first). */
  disconnect(peer: string): Promise<void>;
  /** Peers in this node's mesh for any of its topics; a router flooding its batches (GossipOptions.relay): the routers it sends them to. */
  meshPeers(): string[];
  stats(): GossipStats;
  /** The channel named in `channels` (throws GossipConfigError for another name). */
  channel(name: string): GossipChannel;
  /** Every RPC this node receives, decoded, with its length on the stream (before yamux and noise); for byte accounting. */
  onRpc(handler: (rpc: GossipRpc, bytes: number) => void): () => void;
  /**
   * A router's first hop for one state as if `agent` had written it on its
   * hand-off stream (handoff.ts, relay.ts): judged as direct state, applied,
   * batched. For benches that drive a router at a fleet's cadence without an
   * agent's libp2p node: the caller stands in for Noise in naming the agent,
   * and the state has no connection (its addresses are checked as relayed
   * state's: trust.ts). False, and nothing done, while the node takes no
   * hand-offs (no window, or no router to send batches to).
   */
  handOff(agent: HandoffAgent, group: string | undefined, state: Uint8Array): boolean;
}

/** An agent as a hand-off names it: its peer id, and its multihash bytes (what a batch carries; keys.ts handoffAgentOf). */
export interface HandoffAgent {
  readonly peerId: string;
  readonly author: Uint8Array;
}

/** One of the `channels` topics: signed and validated as the fleet topic is, delivered to its own handlers. */
export interface GossipChannel {
  readonly topic: string;
  /** Resolves to the number of peers it was sent to; zero is not an error. */
  publish(data: Uint8Array): Promise<number>;
  /** As GossipNode.onMessage, for this topic. */
  onMessage(handler: (data: Uint8Array, from: string, origin: GossipOrigin) => void): () => void;
  /** As GossipNode.setValidator, for this topic. */
  setValidator(validate: GossipValidator | undefined): void;
}

/** Thrown for invalid options; `code` is stable, the message says what is acceptable. */
export class GossipConfigError extends Error {
  readonly code = 'ERR_GOSSIP_CONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'GossipConfigError';
  }
}
