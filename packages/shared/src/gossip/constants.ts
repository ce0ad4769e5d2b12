/**
 * Tunables of the fleet gossip node. Each value carries its unit; each
 * comment ends with what changing it costs. Per-node overrides go through
 * `GossipOptions.timing`; everything else is fixed for the whole fleet.
 */

/** Where a node listens when `listen` is not given: loopback, OS-chosen port. */
export const DEFAULT_LISTEN: readonly string[] = Object.freeze(['/ip4/127.0.0.1/tcp/0']);

/** Topic layout; the trailing number is the wire protocol's major version. */
export const TOPIC_PREFIX = 'warmpath/';
export const TOPIC_SUFFIX = '/state/1';
/** A further topic's name (GossipOptions.channels): `warmpath/<fleet>/<name>/1`. */
export const CHANNEL_NAME_PATTERN = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * Group topics a node holds at most: 1,024 (groups.ts). A router serving
 * every group joins one per group it learns of, each a mesh with its own
 * heartbeat control; past the cap it stays on the fleet topic for the rest.
 */
export const MAX_GROUPS = 1_024;

/** A fleet name is a DNS-label-like token so it can sit inside a topic name. */
export const FLEET_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/**
 * Gossipsub heartbeat: 700 ms. The mesh is (re)built on heartbeats, so this
 * bounds how soon a new or restarted peer starts receiving relayed messages.
 * Lower means faster mesh repair at the cost of more control traffic per peer.
 */
export const HEARTBEAT_INTERVAL_MS = 700;

/**
 * Every 1 s, dial bootstrap peers that are not connected. Covers a restarted
 * router/agent coming back on the same address (the @libp2p/bootstrap module
 * dials once at start and libp2p's reconnect queue gives up after 5 tries).
 * Lower means faster rejoin at the cost of more dial attempts against peers
 * that are really gone.
 */
export const BOOTSTRAP_REDIAL_INTERVAL_MS = 1_000;

/**
 * One dial may take 5 s (TCP connect + pnet nonce exchange + noise + yamux).
 * A dial with the wrong swarm key does not fail; it hangs until this timeout.
 * Lower detects a mismatch sooner but can abort legitimate dials on a slow WAN.
 */
export const DIAL_TIMEOUT_MS = 5_000;

/**
 * Incoming connections must finish their upgrade within 5 s. A peer with the
 * wrong swarm key holds one of the pending-upgrade slots this long. Lower frees
 * slots sooner; too low breaks handshakes on slow links.
 */
export const INBOUND_UPGRADE_TIMEOUT_MS = 5_000;

/**
 * A peer connected for 5 s that has not announced the fleet topic to us, or to
 * which we hold no gossipsub stream, is hung up so that a redial starts over
 * with fresh streams. js-gossipsub opens its one outbound stream per peer when
 * the connection opens and never re-opens it if that failed or closed (a
 * protocol negotiation that timed out under CPU load, a reset stream) while
 * the connection — which is all the bootstrap redial looks at — stays up: the
 * pair is then silent one way for good and routers see replicas go stale.
 * Lower recovers sooner but may cut a slow handshake on a loaded host; higher
 * leaves such a half-open pair silent longer.
 */
export const SILENT_PEER_GRACE_MS = 5_000;

/**
 * Warn the operator when no bootstrap peer (and no peer at all) has been
 * connected for 12 s: a couple of dial timeouts plus slack. Lower warns sooner
 * but may fire during a normal rolling restart of the bootstrap peers.
 */
export const ISOLATION_WARNING_AFTER_MS = 12_000;

/**
 * Largest payload `publish` accepts: 512 KiB. State messages are a few KB to
 * tens of KB; full digest snapshots go over HTTP, not gossip. Raising it lets
 * one peer make every other peer buffer and forward more per message.
 */
export const MAX_MESSAGE_BYTES = 512 * 1024;

/**
 * A router relays the states its agents hand it in one gossipsub message per
 * 50 ms window and group (batch.ts; docs/GOSSIP.md, "Batches: one signature
 * for many states"). Longer windows put more states under one signature and
 * one message id, and add up to the window to each state's delay.
 */
export const BATCH_WINDOW_MS = 50;

/** The longest batch window, ms: a configured one (options.ts) and one widened with the routers (batch.ts) alike. */
export const MAX_WINDOW_MS = 1_000;

/**
 * Batches a flooding router reads a second at most, from every other router
 * of its group together (GossipOptions.batchReadsPerS): a batch costs its
 * reader about the same whatever it holds (a signature check, the
 * transport's framing), and each of the R − 1 others sends one per window,
 * so the window widens to (R − 1) × 1000 / this ms once the routers are
 * many (`batchWindowFor`; docs/GOSSIP.md, "The window widens with the
 * routers").
 */
export const BATCH_READS_PER_S = 500;

/**
 * States a flooding router reads a second at most from every other router of
 * its group together (GossipOptions.batchStatesPerS): each costs its reader
 * a decode, a judgement and its digest's hashes, so past this the window
 * widens until the states of an agent that wait in one window, sent as
 * one, bring the readers' share under it (window.ts `statesWindowFor`;
 * docs/GOSSIP.md, "The window widens with the routers").
 */
export const BATCH_STATES_PER_S = 20_000;

/**
 * How a batching router's batches reach the other routers (GossipOptions.relay;
 * docs/GOSSIP.md, "Flooded batches: one copy, and lazy repair"). 'flood': once to
 * every router subscribed to the group, none relayed on, each router
 * connected to every other of its groups (router links grow with routers,
 * not agents); a copy missed comes by IHAVE/IWANT at a heartbeat. 'mesh':
 * through the gossipsub mesh, a copy from each mesh peer that relays it.
 */
export const BATCH_RELAY: 'flood' | 'mesh' = 'flood';

/**
 * A batch goes out early once its states reach 64 KiB, well inside
 * MAX_MESSAGE_BYTES: a router's batch never waits on its size, and one lost
 * batch takes at most this much state with it.
 */
export const BATCH_MAX_BYTES = 64 * 1024;

/**
 * Largest length-prefixed gossipsub RPC a peer accepts: 4 MiB (the library's
 * own default, pinned here so it is visible). Must stay well above
 * MAX_MESSAGE_BYTES because one RPC can carry several messages.
 */
export const MAX_RPC_BYTES = 4 * 1024 * 1024;

/**
 * libp2p rejects a host that opens more than 5 connections per second by
 * default. A whole fleet on one machine (sim, tests, bench) dials from one IP,
 * so allow 100/s. Lower is a stronger guard against a misbehaving host.
 */
export const INBOUND_CONNECTIONS_PER_HOST_PER_S = 100;

/**
 * Inbound connections in their handshake (pnet, noise, yamux) at once: 64.
 * When a fleet (re)starts, many agents dial the same router together, each
 * holding a slot until its upgrade ends; libp2p's default of 10 refuses most
 * of a fleet restarting at once, each refusal costing a re-pick. Invariant:
 * the cap is at least the agents one router expects to dial it together.
 * Lower guards better against a flood of half-open connections, which
 * INBOUND_UPGRADE_TIMEOUT_MS also bounds (docs/SCALE.md, "Gossip mesh").
 */
export const MAX_PENDING_INBOUND = 64;

/**
 * Connections held open at most, by default: 300, libp2p's default (per node:
 * `maxConnections`). In a mesh a node needs its gossip peers (an agent: 2; a
 * router: its router peers) plus, on a router, the agents that picked it
 * (agents × their gossipPeers / routers on average). Beyond the cap libp2p
 * refuses inbound connections and closes the least valued ones (agents first:
 * they are never in a mesh); a refused agent picks another router. Each
 * connection costs a socket and a yamux session.
 */
export const MAX_CONNECTIONS = 300;

/**
 * Gossip port a name from `bootstrapDns` is dialed on when it names none
 * (`name` rather than `name:port`): the port the docs and manifests use.
 */
export const DEFAULT_GOSSIP_PORT = 4001;

/**
 * Every 10 s, re-resolve the `bootstrapDns` names (every A/AAAA record), so a
 * new pod behind a Kubernetes headless Service is found within about one DNS
 * TTL plus this. Lower finds new peers sooner at the cost of more lookups
 * (one per name per interval).
 */
export const DNS_INTERVAL_MS = 10_000;

/**
 * Gossipsub mesh degree among routers (agents publish only and are in no
 * mesh): each router keeps D = 2 router peers in its mesh, between Dlo = 2
 * and Dhi = 3 (docs/GOSSIP.md, "Gossip mesh"). A router receives each state
 * about once per mesh peer that relays it (the other copies are dropped as
 * duplicates before any signature check), so bytes grow with the mesh
 * degree; Dhi bounds it, since the links others graft count too.
 * Invariant: no router with two router peers holds fewer than Dlo = 2
 * mesh links after a heartbeat, so none hangs off the mesh by one link; the
 * mesh bench samples it as one part, where with Dlo = 1 it fell into parts
 * joined only by IHAVE repair, a heartbeat's delay per crossing
 * (docs/GOSSIP.md, "Mesh degree, message id, IDONTWANT: measured"). Dout =
 * 1 (< Dlo, ≤ D / 2, as gossipsub requires): one of a router's links is one
 * it dialed, so peers that dialed it cannot fill its whole mesh. Dlazy = 2
 * routers outside the mesh get IHAVE gossip every heartbeat: the repair of a
 * copy lost on a mesh link, and of a mesh in parts. A larger D delivers in
 * fewer hops, at a copy more per router per state.
 */
export const MESH_D = 2;
export const MESH_D_LO = 2;
export const MESH_D_HI = 3;
export const MESH_D_OUT = 1;
export const MESH_D_LAZY = 2;

/**
 * A router keeps each message for 5 heartbeats (gossipsub's default, pinned
 * here) to answer IWANT, and each heartbeat advertises in IHAVE, to Dlazy
 * routers outside its mesh, the ids of the last GOSSIP_WINDOWS heartbeats: 1
 * (gossipsub's default is 3), so each id is advertised once to each lazy
 * peer. Each window more re-advertises every id to the next heartbeat's lazy
 * peers, a message id per peer each time (docs/SCALE.md, "Gossip mesh").
 */
export const MESSAGE_CACHE_WINDOWS = 5;
export const GOSSIP_WINDOWS = 1;

/**
 * A router that receives a message of at least 16 KiB tells its mesh peers
 * IDONTWANT with the message id, so a peer that has not yet sent its copy
 * skips it. A state message of a few KB is relayed by every peer before the
 * IDONTWANT arrives: it would cost a message id and an RPC per mesh peer and
 * save no copy (gossipsub's default of 512 bytes; docs/SCALE.md, "Gossip
 * mesh"). Only a large message, whose copies take long to send, gains.
 */
export const IDONTWANT_MIN_BYTES = 16 * 1024;

/**
 * Peer exchange: a router that prunes a peer from an over-full mesh (more than
 * Dhi) sends it up to 16 other routers' signed peer records, and the pruned
 * router dials them, so routers that found only a few others through
 * bootstrap or DNS spread over the fleet instead of piling onto the same few.
 * PX from a peer scoring below 0 (one that sent invalid messages) is ignored;
 * 0 rather than gossipsub's default of 10 because an honest router that has
 * just connected scores 0 and the swarm key already keeps strangers out.
 * Raising it makes PX trust only peers that have delivered for a while.
 */
export const DO_PX = true;
export const ACCEPT_PX_THRESHOLD = 0;
export const PRUNE_PEERS = 16;

/**
 * Gossipsub's IP-colocation score penalty (default weight -5 beyond 10 peers
 * per IP) is off: a whole fleet on one machine (sim, tests) or many agents per
 * GPU host share an IP, and with it on, a node with more than 10 same-IP peers
 * scores them all negative and drops them from its mesh, so messages stop being
 * relayed through it. Turning it back on helps only against Sybil peers, which
 * a private fleet keeps out with the swarm key instead.
 */
export const IP_COLOCATION_FACTOR_WEIGHT = 0;

/**
 * Peer scoring on the fleet topic (gossipsub's P4, invalid message
 * deliveries): each message the validator rejects adds 1 to the sender's
 * count, the count decays by INVALID_MESSAGE_DECAY every second, and the
 * score is INVALID_MESSAGE_WEIGHT × count². Three rejected messages put a
 * peer below GRAYLIST_THRESHOLD (-90 < -80): its RPCs are then dropped unread
 * and its mesh links pruned at the next heartbeat. The decay is fast on
 * purpose: an honest agent restarted under a new key is refused for up to its
 * replica's state TTL (its id is still bound to the old key), and must not
 * stay graylisted long after; a peer that keeps sending invalid messages is
 * graylisted again after every few. A larger weight or slower decay shuts a
 * misbehaving peer out longer, and a restarted one too.
 */
export const INVALID_MESSAGE_WEIGHT = -10;
export const INVALID_MESSAGE_DECAY = 0.5;
/** Below this score no gossip (IHAVE/IWANT) is exchanged with a peer: one rejected message. */
export const GOSSIP_THRESHOLD = -10;
/** Below this score nothing is published to a peer. */
export const PUBLISH_THRESHOLD = -50;
/** Below this score every RPC of a peer is dropped unread (graylisted). */
export const GRAYLIST_THRESHOLD = -80;

/** Stable codes of operator-facing warnings (`GossipWarning.code`). */
export const GOSSIP_WARNING = {
  /** No bootstrap peer and no other peer reachable for ISOLATION_WARNING_AFTER_MS. */
  isolated: 'WARMPATH_GOSSIP_ISOLATED',
  /** Started with insecureNoSwarmKey: anyone who reaches the gossip port can join and publish. */
  insecure: 'WARMPATH_GOSSIP_INSECURE',
} as const;
