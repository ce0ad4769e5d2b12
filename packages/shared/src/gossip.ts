/**
 * The fleet's gossip node: agents publish replica state on it, routers
 * subscribe. One libp2p node per process, one gossipsub topic per fleet.
 *
 * Steps:
 *  1. Validate options once (fleet name, multiaddrs, swarm key, identity).
 *  2. Build libp2p: TCP, optional pnet protector (pre-shared swarm key),
 *     noise, yamux, identify, gossipsub (signed messages, flood publish, only
 *     the fleet topic allowed).
 *  3. start(): listen, subscribe to `warmpath/<fleet>/state/1` (every node
 *     subscribes, so every node relays), dial the bootstrap peers, then
 *     re-dial the unconnected ones every BOOTSTRAP_REDIAL_INTERVAL_MS so a
 *     restarted peer is rejoined. On the same tick every node hangs up peers
 *     that stayed silent on the fleet topic past SILENT_PEER_GRACE_MS (a
 *     gossipsub stream that failed to open is never re-opened by the library
 *     while the connection lives), so the redial rebuilds them.
 *  4. While no bootstrap peer and no other peer is connected for
 *     ISOLATION_WARNING_AFTER_MS, warn the operator once per episode. A wrong
 *     swarm key makes dials time out rather than fail, so this is the only
 *     signal an operator gets.
 *  5. Deliver messages to handlers inside try/catch; a throwing handler is
 *     counted, never propagated into libp2p.
 *
 * Complexity: publish is O(peers subscribed) sends (flood publish); each
 * tick is O(bootstrap + connections).
 *
 * Trade-off: flood publish plus every node being a full subscriber favours
 * latency and delivery in small fleets (tens of nodes) over bandwidth; a fleet
 * of hundreds would want agents as publish-only fanout peers and a lower D.
 */

// Modules: types.ts (the contract), options.ts (validation, topic), keys.ts
// (swarm key, identity), libp2p.ts (node construction, topic validation),
// upkeep.ts (redial, silent peers, isolation warning), node.ts (lifecycle,
// publish, delivery), constants.ts (tunables with units).
export { createGossipNode } from './gossip/node.ts';
export { topicFor } from './gossip/options.ts';
export { GRAYLIST_THRESHOLD, GOSSIP_THRESHOLD } from './gossip/constants.ts';
export { generateIdentity, generateSwarmKey, loadIdentity, parseSwarmKey } from './gossip/keys.ts';
export type { SwarmKey } from './gossip/keys.ts';
export { GossipConfigError } from './gossip/types.ts';
export type {
  GossipEvent,
  GossipNode,
  GossipOptions,
  GossipOrigin,
  GossipPrivateKey,
  GossipStats,
  GossipTiming,
  GossipValidator,
  GossipVerdict,
  GossipWarning,
  GossipWarningCode,
} from './gossip/types.ts';
