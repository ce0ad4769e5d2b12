/**
 * The fleet's gossip node: agents publish replica state on it, routers
 * subscribe. One libp2p node per process; one gossipsub topic per fleet and
 * one per model group (gossip/groups.ts: a router holds only the groups it
 * serves).
 *
 * Steps:
 *  1. Validate options once (fleet name, multiaddrs, swarm key, identity).
 *  2. Build libp2p: TCP, optional pnet protector (pre-shared swarm key),
 *     noise, yamux, identify, gossipsub (signed messages, flood publish, only
 *     the fleet topic allowed).
 *  3. start(): listen; routers subscribe to `warmpath/<fleet>/state/1` and
 *     form a gossipsub mesh among themselves (degree MESH_D, peer exchange on
 *     prune), relaying every state to the routers an agent is not connected
 *     to; agents publish only. Dial the candidates — static bootstrap
 *     multiaddrs and every address of the bootstrapDns names, re-resolved
 *     periodically — all of them, or with `gossipPeers` = k enough to keep k
 *     routers connected, re-picked when one goes away; re-dial every
 *     BOOTSTRAP_REDIAL_INTERVAL_MS so a restarted peer is rejoined. On the
 *     same tick every node hangs up peers that stayed silent on the fleet
 *     topic past SILENT_PEER_GRACE_MS (a gossipsub stream that failed to open
 *     is never re-opened by the library while the connection lives), so the
 *     redial rebuilds them.
 *  4. While no bootstrap peer and no other peer is connected for
 *     ISOLATION_WARNING_AFTER_MS, warn the operator once per episode. A wrong
 *     swarm key makes dials time out rather than fail, so this is the only
 *     signal an operator gets.
 *  5. Deliver messages to handlers inside try/catch; a throwing handler is
 *     counted, never propagated into libp2p.
 *  6. Batches (docs/GOSSIP.md, "Batches"): an agent hands each state to one
 *     router over its connection (handoff.ts); the router judges it as
 *     direct state and relays its agents' states in one signed message per
 *     window and group (batch.ts, relay.ts), which every router unpacks and
 *     judges state by state. Where no router offers the hand-off, the agent
 *     publishes signed states as in step 3.
 *  7. Channels: a node may name further topics of its fleet
 *     (`warmpath/<fleet>/<name>/1`; routers share tenants' usage on
 *     `routers`), signed, scored and validated as the fleet topic is, each
 *     with its own validator and handlers. Agents name none.
 *
 * Complexity: publish is O(peers subscribed) sends (flood publish: an agent
 * sends to its k routers); a router forwards each new message to its D mesh
 * peers and receives about D copies; each tick is O(candidates +
 * connections).
 *
 * Trade-off: a relayed state costs one hop of latency per mesh level and D×
 * the bandwidth of a direct link, in exchange for connections per node that
 * do not grow with the fleet: an agent holds k links, a router its mesh plus
 * the agents that picked it.
 */

// Modules: types.ts (the contract), options.ts (validation, topic), groups.ts (model-group topics), keys.ts
// (swarm key, identity, options from settings), libp2p.ts (node construction, topic validation),
// dial-peers.ts (bootstrap and DNS peers, picking), upkeep.ts (redial,
// silent peers, isolation warning), node.ts (lifecycle,
// publish, delivery), origins.ts (who a state is from), handoff.ts, batch.ts, window.ts and relay.ts (batches),
// constants.ts (tunables with units).
export { createGossipNode } from './gossip/node.ts';
export { channelTopic, topicFor } from './gossip/options.ts';
export { groupTopicFor } from './gossip/groups.ts';
export { batchWindowFor, windowFor } from './gossip/window.ts';
export {
  BATCH_READS_PER_S,
  BATCH_RELAY,
  BATCH_STATES_PER_S,
  BATCH_WINDOW_MS,
  DEFAULT_GOSSIP_PORT,
  GRAYLIST_THRESHOLD,
  GOSSIP_THRESHOLD,
  MAX_CONNECTIONS,
  MAX_GROUPS,
  MESH_D,
  MESH_D_HI,
} from './gossip/constants.ts';
export {
  generateIdentity,
  generateSwarmKey,
  gossipOptionsOf,
  handoffAgentOf,
  loadIdentity,
  parseSwarmKey,
  peerIdOfIdentity,
} from './gossip/keys.ts';
export type { GossipSettings } from './gossip/keys.ts';
export type { SwarmKey } from './gossip/keys.ts';
export { GossipConfigError } from './gossip/types.ts';
export type {
  GossipChannel,
  GossipEvent,
  GossipNode,
  GossipOptions,
  GossipOrigin,
  GossipPrivateKey,
  GossipMeshTuning,
  GossipRelay,
  GossipResolver,
  GossipRpc,
  GossipStats,
  GossipTiming,
  GossipValidator,
  GossipVerdict,
  GossipWarning,
  GossipWarningCode,
  HandoffAgent,
} from './gossip/types.ts';
