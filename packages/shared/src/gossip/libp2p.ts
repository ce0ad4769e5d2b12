/**
 * Builds the libp2p node behind a gossip node: TCP, optional pnet protector
 * (pre-shared swarm key), noise, yamux, identify and gossipsub (StrictSign:
 * every message carries its author's signature, checked on receipt, so the
 * author is known even when a router relays it; flood publish, but for the
 * batches of a router relaying through its mesh, which go to the mesh; a
 * router flooding its batches has no mesh (meshDegrees); only the fleet topic,
 * the node's channels and its group topics allowed (groups.ts); a router
 * mesh of degree MESH_D with peer exchange on prune; peer scoring: rejected messages graylist their sender). No direct peers:
 * they need peer ids known in advance and bypass the mesh and its scoring,
 * where bootstrap/DNS candidates plus PX reach the same routers. Not started;
 * the topic validator is node.ts's.
 */
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { gossipsub } from '@libp2p/gossipsub';
import { createTopicScoreParams } from '@libp2p/gossipsub/score';
import type { GossipSub, Message } from '@libp2p/gossipsub';
import { identify } from '@libp2p/identify';
import type { Identify } from '@libp2p/identify';
import { preSharedKey } from '@libp2p/pnet';
import { tcp } from '@libp2p/tcp';
import { createLibp2p } from 'libp2p';
import type { Libp2p, Libp2pOptions } from 'libp2p';
import {
  ACCEPT_PX_THRESHOLD,
  DO_PX,
  GOSSIP_THRESHOLD,
  GRAYLIST_THRESHOLD,
  INBOUND_CONNECTIONS_PER_HOST_PER_S,
  INBOUND_UPGRADE_TIMEOUT_MS,
  INVALID_MESSAGE_DECAY,
  INVALID_MESSAGE_WEIGHT,
  IP_COLOCATION_FACTOR_WEIGHT,
  MAX_PENDING_INBOUND,
  MAX_RPC_BYTES,
  MESSAGE_CACHE_WINDOWS,
  MESH_D_OUT,
  PRUNE_PEERS,
  PUBLISH_THRESHOLD,
} from './constants.ts';
import { groupOfTopic, groupTopicFor } from './groups.ts';
import { mendSwarmCipher } from './pnet-mend.ts';
import { floodsBatches, type ValidatedOptions } from './options.ts';

export type Services = { pubsub: GossipSub; identify: Identify };
export type GossipLibp2p = Libp2p<Services>;

/**
 * (author, seqno) is what the StrictSign message id is made of, so it is an
 * exact, cheap key for the pre-verification duplicate check. gossipsub caches
 * it only after the message validated, so a forged copy cannot poison it.
 */
function fastId(from: Uint8Array, seqno: Uint8Array): string {
  const author = Buffer.from(from.buffer, from.byteOffset, from.byteLength).toString('base64');
  return author + Buffer.from(seqno.buffer, seqno.byteOffset, seqno.byteLength).toString('base64');
}
let unkeyed = 0;

/**
 * The message id IHAVE, IWANT and IDONTWANT carry and the seen cache keys:
 * the last 8 bytes of the author's key and the 8-byte seqno, 16 bytes where
 * gossipsub's StrictSign id is the whole key in its protobuf and the seqno
 * (44 bytes; docs/GOSSIP.md, "Mesh degree, message id, IDONTWANT: measured").
 * Distinct messages share an id only if their authors' keys share 64 bits
 * and they share a seqno (a nanosecond counter), which no honest fleet meets
 * and a member cannot aim for without searching 2^64 keys. An author whose
 * key is not in its peer id (RSA) keeps its whole key in the id. Nodes of
 * both ids in one fleet still relay each other's messages on the mesh; only
 * their IHAVE repair misses, until the rolling upgrade ends.
 */
export function shortMsgId(msg: Message): Uint8Array {
  if (msg.type !== 'signed') throw new Error('expected a signed message');
  const author = msg.from.publicKey !== undefined ? msg.from.publicKey.raw.subarray(-8) : msg.key.raw;
  const id = new Uint8Array(author.byteLength + 8);
  id.set(author, 0);
  new DataView(id.buffer).setBigUint64(author.byteLength, msg.sequenceNumber, false);
  return id;
}

export async function buildLibp2p(config: ValidatedOptions): Promise<GossipLibp2p> {
  const init: Libp2pOptions<Services> = {
    start: false,
    addresses: { listen: config.listen },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionManager: {
      maxConnections: config.maxConnections,
      dialTimeout: config.timing.dialTimeoutMs,
      inboundUpgradeTimeout: INBOUND_UPGRADE_TIMEOUT_MS,
      inboundConnectionThreshold: INBOUND_CONNECTIONS_PER_HOST_PER_S,
      maxIncomingPendingConnections: MAX_PENDING_INBOUND,
    },
    services: {
      identify: identify(),
      pubsub: gossipsub({
        emitSelf: false,
        globalSignaturePolicy: 'StrictSign',
        ...meshDegrees(config),
        Dlazy: config.mesh.Dlazy,
        idontwantMinDataSize: config.mesh.idontwantMinDataSize,
        mcacheLength: MESSAGE_CACHE_WINDOWS,
        mcacheGossip: config.mesh.gossipWindows,
        doPX: DO_PX,
        prunePeers: PRUNE_PEERS,
        allowPublishToZeroTopicPeers: true,
        // A router relaying through the mesh sends its own batches to its mesh (D peers), not to every
        // router it is connected to: a flood would send each batch once per router peer on top of the
        // mesh's copies. Agents are in no mesh and flood to their routers; so does a flooding router.
        floodPublish: !config.subscribe || config.batchWindowMs === 0 || floodsBatches(config),
        fallbackToFloodsub: false,
        heartbeatInterval: config.timing.heartbeatIntervalMs,
        maxInboundDataLength: MAX_RPC_BYTES,
        scoreParams: {
          IPColocationFactorWeight: IP_COLOCATION_FACTOR_WEIGHT,
          topics: {
            [config.topic]: topicScoreParams(),
            ...Object.fromEntries([...config.channels.values()].map((t) => [t, topicScoreParams()])),
            ...Object.fromEntries(
              (config.groups ?? []).map((g) => [groupTopicFor(config.fleet, g), topicScoreParams()]),
            ),
          },
        },
        scoreThresholds: {
          gossipThreshold: GOSSIP_THRESHOLD,
          publishThreshold: PUBLISH_THRESHOLD,
          graylistThreshold: GRAYLIST_THRESHOLD,
          acceptPXThreshold: ACCEPT_PX_THRESHOLD,
        },
        // Without a fast id, every duplicate copy (one per mesh peer) has its
        // signature verified before it is recognised as a duplicate.
        msgIdFn: shortMsgId,
        fastMsgIdFn: (msg) =>
          msg.from != null && msg.seqno != null ? fastId(msg.from, msg.seqno) : `unkeyed:${++unkeyed}`,
      }),
    },
  };
  if (config.swarmKey !== undefined) {
    mendSwarmCipher();
    init.connectionProtector = preSharedKey({ psk: config.swarmKey.file });
  }
  if (config.privateKey !== undefined) init.privateKey = config.privateKey;
  const node = await createLibp2p<Services>(init);
  // Only the fleet's topics: its own, its channels and its groups' (a set no list can name in advance).
  // gossipsub reads allowedTopics through has() alone, for peers' subscriptions and messages.
  const channels = new Set(config.channels.values());
  const inFleet = (topic: string): boolean =>
    topic === config.topic || channels.has(topic) || groupOfTopic(config.fleet, topic) !== undefined;
  (node.services.pubsub as unknown as { allowedTopics: { has(topic: string): boolean } }).allowedTopics = {
    has: inFleet,
  };
  return node;
}

/**
 * The mesh degrees: the configured ones, or none for a router that floods its
 * batches. With D = Dlo = Dhi = 0 gossipsub grafts no one and prunes any
 * peer that grafts it (an older router), at once or at the next heartbeat, so it relays
 * no message on; every peer of a topic is then outside the mesh, and
 * gossipFactor 0 keeps its IHAVE to Dlazy of them a heartbeat, as a mesh
 * router's (rather than a quarter of every router: a flooding router is
 * connected to all of its groups' routers).
 */
function meshDegrees(config: ValidatedOptions): {
  D: number;
  Dlo: number;
  Dhi: number;
  Dout: number;
  gossipFactor?: number;
} {
  if (floodsBatches(config)) return { D: 0, Dlo: 0, Dhi: 0, Dout: 0, gossipFactor: 0 };
  const { D, Dlo, Dhi } = config.mesh;
  return { D, Dlo, Dhi, Dout: Math.max(0, Math.min(MESH_D_OUT, Math.floor(D / 2), Dlo - 1)) };
}

/**
 * The score parameters of every fleet topic. Agents publish a few messages a
 * second and are never in a router's mesh: no mesh-delivery quotas (P3, P3b)
 * that an honest quiet peer would miss; small credit for time in mesh and
 * first deliveries (P1, P2, capped at +10 in all); invalid messages (P4)
 * weigh the rest.
 */
export function topicScoreParams(): ReturnType<typeof createTopicScoreParams> {
  return createTopicScoreParams({
    topicWeight: 1,
    timeInMeshWeight: 0.01,
    timeInMeshQuantum: 1_000,
    timeInMeshCap: 300,
    firstMessageDeliveriesWeight: 0.1,
    firstMessageDeliveriesDecay: 0.9,
    firstMessageDeliveriesCap: 50,
    meshMessageDeliveriesWeight: 0,
    meshFailurePenaltyWeight: 0,
    invalidMessageDeliveriesWeight: INVALID_MESSAGE_WEIGHT,
    invalidMessageDeliveriesDecay: INVALID_MESSAGE_DECAY,
  });
}

/** Scores a topic joined after start (a group a node serving every group learned of) as the others. */
export function scoreTopic(libp2p: GossipLibp2p, topic: string): void {
  const score = (libp2p.services.pubsub as unknown as { score: { params: { topics: Record<string, unknown> } } }).score;
  score.params.topics[topic] ??= topicScoreParams();
}
