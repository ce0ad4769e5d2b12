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

import { createHash } from 'node:crypto';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { gossipsub, TopicValidatorResult } from '@libp2p/gossipsub';
import type { GossipSub, Message } from '@libp2p/gossipsub';
import { identify } from '@libp2p/identify';
import type { Identify } from '@libp2p/identify';
import { preSharedKey } from '@libp2p/pnet';
import { tcp } from '@libp2p/tcp';
import { CODE_P2P, multiaddr } from '@multiformats/multiaddr';
import type { Multiaddr } from '@multiformats/multiaddr';
import { createLibp2p } from 'libp2p';
import type { Libp2p, Libp2pOptions } from 'libp2p';
import {
  BOOTSTRAP_REDIAL_INTERVAL_MS,
  DEFAULT_LISTEN,
  DIAL_TIMEOUT_MS,
  FLEET_NAME_PATTERN,
  GOSSIP_WARNING,
  HEARTBEAT_INTERVAL_MS,
  INBOUND_CONNECTIONS_PER_HOST_PER_S,
  INBOUND_UPGRADE_TIMEOUT_MS,
  IP_COLOCATION_FACTOR_WEIGHT,
  ISOLATION_WARNING_AFTER_MS,
  MAX_CONNECTIONS,
  MAX_MESSAGE_BYTES,
  MAX_RPC_BYTES,
  SILENT_PEER_GRACE_MS,
  TOPIC_PREFIX,
  TOPIC_SUFFIX,
} from './gossip-constants.ts';

/** libp2p's private key type, named without depending on @libp2p/interface. */
export type GossipPrivateKey = NonNullable<Libp2pOptions['privateKey']>;

/** Per-node timing overrides (tests, benches); production uses the constants. */
export interface GossipTiming {
  heartbeatIntervalMs?: number;
  redialIntervalMs?: number;
  dialTimeoutMs?: number;
  isolationWarningAfterMs?: number;
  silentPeerGraceMs?: number;
}

export interface GossipOptions {
  /** Fleet name; the topic is `warmpath/<fleet>/state/1`. */
  fleet: string;
  /** Multiaddrs to listen on; default ['/ip4/127.0.0.1/tcp/0']. */
  listen?: string[];
  /** Multiaddrs of peers to dial, normally ending in /p2p/<peer id>. This node's own address may appear (it is skipped), so every node can share one list. */
  bootstrap?: string[];
  /** Contents of a libp2p private-network key file (see generateSwarmKey). */
  swarmKey?: string | Uint8Array;
  /** Stable identity: a libp2p private key or its protobuf bytes (see generateIdentity). Without it the peer id changes on every start. */
  privateKey?: GossipPrivateKey | Uint8Array;
  /** Operator-facing warnings. Default: process.emitWarning. Pass null to rely on onEvent only. */
  onWarning?: ((warning: GossipWarning) => void) | null;
  timing?: GossipTiming;
  /**
   * Subscribe to the fleet topic (default true). Agents publish only: they
   * never receive the fleet's state, so a fleet of N agents costs each agent
   * O(1) messages, not O(N). A publish-only node must be connected to
   * subscribers (routers) directly; it relays nothing.
   */
  subscribe?: boolean;
}

export type GossipWarningCode = (typeof GOSSIP_WARNING)[keyof typeof GOSSIP_WARNING];

export interface GossipWarning {
  code: GossipWarningCode;
  message: string;
}

export type GossipEvent =
  | { type: 'warning'; warning: GossipWarning }
  | { type: 'peer:connect'; peer: string }
  | { type: 'peer:disconnect'; peer: string }
  /** `peer` joined (or left) this node's mesh for the fleet topic: it now relays to/from us. */
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
  /** Connections hung up because the peer stayed silent on the fleet topic (see SILENT_PEER_GRACE_MS). */
  silentPeersDropped: number;
}

export interface GossipNode {
  readonly peerId: string;
  readonly topic: string;
  /** Listening addresses, each ending in /p2p/<peer id>. */
  multiaddrs(): string[];
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Publish to the fleet topic; resolves to the number of peers it was sent to. Zero peers is not an error. */
  publish(data: Uint8Array): Promise<number>;
  /** Handlers run synchronously on delivery and must not block; throws are caught and counted. */
  onMessage(handler: (data: Uint8Array, from: string) => void): () => void;
  onEvent(handler: (event: GossipEvent) => void): () => void;
  /** Connected peers (any topic). */
  peers(): string[];
  /** Peers in this node's fleet-topic mesh. */
  meshPeers(): string[];
  stats(): GossipStats;
}

/** Thrown for invalid options; `code` is stable, the message says what is acceptable. */
export class GossipConfigError extends Error {
  readonly code = 'ERR_GOSSIP_CONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'GossipConfigError';
  }
}

export function topicFor(fleet: string): string {
  validateFleet(fleet);
  return `${TOPIC_PREFIX}${fleet}${TOPIC_SUFFIX}`;
}

// ---------------------------------------------------------------------------
// Swarm key (libp2p private network, /key/swarm/psk/1.0.0/)

const SWARM_KEY_HEADER = '/key/swarm/psk/1.0.0/';
const SWARM_KEY_CODEC = '/base16/';
const SWARM_KEY_HEX = /^[0-9a-fA-F]{64}$/;

export interface SwarmKey {
  /** Normalized key-file bytes, as @libp2p/pnet's preSharedKey expects. */
  file: Uint8Array;
  /** First 8 hex chars of SHA-256 of the key: lets operators compare keys without revealing them. */
  fingerprint: string;
}

/** Contents of a new swarm key file: three lines, 32 random bytes in hex. */
export function generateSwarmKey(): string {
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex');
  return `${SWARM_KEY_HEADER}\n${SWARM_KEY_CODEC}\n${key}\n`;
}

/** Validates a swarm key file's contents; throws GossipConfigError saying what a valid file looks like. */
export function parseSwarmKey(input: string | Uint8Array): SwarmKey {
  let text: string;
  if (typeof input === 'string') {
    text = input;
  } else {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(input);
    } catch {
      throw swarmKeyError('it is not UTF-8 text');
    }
  }
  const lines = text.trim().split(/\r?\n/).map((line) => line.trim());
  if (lines.length !== 3) throw swarmKeyError(`it has ${lines.length} non-blank line(s)`);
  const [header, codec, hex] = lines as [string, string, string];
  if (header !== SWARM_KEY_HEADER) throw swarmKeyError(`line 1 is ${JSON.stringify(header.slice(0, 40))}`);
  if (codec !== SWARM_KEY_CODEC) throw swarmKeyError(`line 2 is ${JSON.stringify(codec.slice(0, 40))} (only /base16/ is supported)`);
  if (!SWARM_KEY_HEX.test(hex)) throw swarmKeyError(`line 3 has ${hex.length} characters, not 64 hex digits`);
  const lower = hex.toLowerCase();
  return {
    file: new TextEncoder().encode(`${SWARM_KEY_HEADER}\n${SWARM_KEY_CODEC}\n${lower}`),
    fingerprint: createHash('sha256').update(Buffer.from(lower, 'hex')).digest('hex').slice(0, 8),
  };
}

function swarmKeyError(problem: string): GossipConfigError {
  return new GossipConfigError(
    `invalid swarmKey: ${problem}; expected three lines: "${SWARM_KEY_HEADER}", "${SWARM_KEY_CODEC}" and 64 hex digits (generate one with generateSwarmKey())`,
  );
}

// ---------------------------------------------------------------------------
// Identity

/** A new Ed25519 identity as protobuf bytes, to persist and pass back as `privateKey`. */
export async function generateIdentity(): Promise<Uint8Array> {
  return privateKeyToProtobuf(await generateKeyPair('Ed25519'));
}

// ---------------------------------------------------------------------------
// Options

interface BootstrapTarget {
  addr: Multiaddr;
  text: string;
  /** From the address's /p2p/ component, else learned from the first successful dial. */
  peerId: string | undefined;
  dialing: boolean;
  lastError: string | undefined;
}

interface ValidatedOptions {
  fleet: string;
  topic: string;
  listen: string[];
  bootstrap: Multiaddr[];
  swarmKey: SwarmKey | undefined;
  privateKey: GossipPrivateKey | undefined;
  onWarning: ((warning: GossipWarning) => void) | null;
  timing: Required<GossipTiming>;
  subscribe: boolean;
}

const OPTION_KEYS = new Set(['fleet', 'listen', 'bootstrap', 'swarmKey', 'privateKey', 'onWarning', 'timing', 'subscribe']);
const TIMING_KEYS = new Set(['heartbeatIntervalMs', 'redialIntervalMs', 'dialTimeoutMs', 'isolationWarningAfterMs', 'silentPeerGraceMs']);

function validateFleet(fleet: unknown): asserts fleet is string {
  if (typeof fleet !== 'string' || !FLEET_NAME_PATTERN.test(fleet)) {
    throw new GossipConfigError(
      `invalid fleet ${JSON.stringify(fleet)}: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
}

function parseAddrs(key: string, value: unknown): Multiaddr[] {
  if (!Array.isArray(value)) throw new GossipConfigError(`${key} must be an array of multiaddr strings`);
  return value.map((text: unknown, i) => {
    if (typeof text !== 'string') throw new GossipConfigError(`${key}[${i}] must be a multiaddr string`);
    try {
      return multiaddr(text);
    } catch (err) {
      throw new GossipConfigError(
        `${key}[${i}] ${JSON.stringify(text)} is not a multiaddr (e.g. /ip4/10.0.0.5/tcp/4001/p2p/12D3Koo...): ${errorText(err)}`,
      );
    }
  });
}

function validateTiming(timing: unknown): Required<GossipTiming> {
  const out: Required<GossipTiming> = {
    heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    redialIntervalMs: BOOTSTRAP_REDIAL_INTERVAL_MS,
    dialTimeoutMs: DIAL_TIMEOUT_MS,
    isolationWarningAfterMs: ISOLATION_WARNING_AFTER_MS,
    silentPeerGraceMs: SILENT_PEER_GRACE_MS,
  };
  if (timing === undefined) return out;
  if (timing === null || typeof timing !== 'object') throw new GossipConfigError('timing must be an object');
  for (const [key, value] of Object.entries(timing)) {
    if (!TIMING_KEYS.has(key)) {
      throw new GossipConfigError(`unknown option timing.${key}; known: ${[...TIMING_KEYS].join(', ')}`);
    }
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 10 || value > 600_000) {
      throw new GossipConfigError(`timing.${key} must be a number of milliseconds between 10 and 600000`);
    }
    out[key as keyof GossipTiming] = value;
  }
  return out;
}

function validateOptions(opts: GossipOptions): ValidatedOptions {
  if (opts === null || typeof opts !== 'object') throw new GossipConfigError('options must be an object');
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key)) throw new GossipConfigError(`unknown option ${key}; known: ${[...OPTION_KEYS].join(', ')}`);
  }
  validateFleet(opts.fleet);
  const listen = parseAddrs('listen', opts.listen ?? [...DEFAULT_LISTEN]).map(String);
  if (listen.length === 0) throw new GossipConfigError('listen must name at least one multiaddr');
  const bootstrap = parseAddrs('bootstrap', opts.bootstrap ?? []);
  let privateKey: GossipPrivateKey | undefined;
  if (opts.privateKey instanceof Uint8Array) {
    try {
      privateKey = privateKeyFromProtobuf(opts.privateKey);
    } catch (err) {
      throw new GossipConfigError(`privateKey bytes are not a protobuf-encoded libp2p private key (see generateIdentity()): ${errorText(err)}`);
    }
  } else {
    privateKey = opts.privateKey;
  }
  const onWarning = opts.onWarning === undefined ? emitProcessWarning : opts.onWarning;
  if (onWarning !== null && typeof onWarning !== 'function') throw new GossipConfigError('onWarning must be a function or null');
  if (opts.subscribe !== undefined && typeof opts.subscribe !== 'boolean') throw new GossipConfigError('subscribe must be true or false');
  return Object.freeze({
    subscribe: opts.subscribe ?? true,
    fleet: opts.fleet,
    topic: topicFor(opts.fleet),
    listen,
    bootstrap,
    swarmKey: opts.swarmKey === undefined ? undefined : parseSwarmKey(opts.swarmKey),
    privateKey,
    onWarning,
    timing: Object.freeze(validateTiming(opts.timing)),
  });
}

function emitProcessWarning(warning: GossipWarning): void {
  process.emitWarning(warning.message, { code: warning.code });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}

function peerIdOf(addr: Multiaddr): string | undefined {
  return addr.getComponents().findLast((c) => c.code === CODE_P2P)?.value;
}

// ---------------------------------------------------------------------------
// The node

type Services = { pubsub: GossipSub; identify: Identify };

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

export async function createGossipNode(opts: GossipOptions): Promise<GossipNode> {
  const config = validateOptions(opts);
  const init: Libp2pOptions<Services> = {
    start: false,
    addresses: { listen: config.listen },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionManager: {
      maxConnections: MAX_CONNECTIONS,
      dialTimeout: config.timing.dialTimeoutMs,
      inboundUpgradeTimeout: INBOUND_UPGRADE_TIMEOUT_MS,
      inboundConnectionThreshold: INBOUND_CONNECTIONS_PER_HOST_PER_S,
    },
    services: {
      identify: identify(),
      pubsub: gossipsub({
        emitSelf: false,
        allowPublishToZeroTopicPeers: true,
        floodPublish: true,
        fallbackToFloodsub: false,
        heartbeatInterval: config.timing.heartbeatIntervalMs,
        allowedTopics: [config.topic],
        maxInboundDataLength: MAX_RPC_BYTES,
        scoreParams: { IPColocationFactorWeight: IP_COLOCATION_FACTOR_WEIGHT },
        // Without a fast id, every duplicate copy (one per mesh peer) has its
        // signature verified before it is recognised as a duplicate.
        fastMsgIdFn: (msg) => (msg.from != null && msg.seqno != null ? fastId(msg.from, msg.seqno) : `unkeyed:${++unkeyed}`),
      }),
    },
  };
  if (config.swarmKey !== undefined) init.connectionProtector = preSharedKey({ psk: config.swarmKey.file });
  if (config.privateKey !== undefined) init.privateKey = config.privateKey;
  const libp2p = await createLibp2p<Services>(init);
  return new GossipNodeImpl(libp2p, config);
}

class GossipNodeImpl implements GossipNode {
  readonly peerId: string;
  readonly topic: string;
  readonly #libp2p: Libp2p<Services>;
  readonly #config: ValidatedOptions;
  readonly #bootstrap: BootstrapTarget[];
  readonly #messageHandlers = new Set<(data: Uint8Array, from: string) => void>();
  readonly #eventHandlers = new Set<(event: GossipEvent) => void>();
  readonly #mesh = new Set<string>();
  readonly #stats: GossipStats = {
    published: 0,
    publishedToNoPeers: 0,
    publishErrors: 0,
    received: 0,
    handlerErrors: 0,
    dialFailures: 0,
    silentPeersDropped: 0,
  };
  /** Connected peer → when it connected (local clock, ms), for the silent-peer check. */
  readonly #connectedAt = new Map<string, number>();
  #started = false;
  #redialTimer: ReturnType<typeof setInterval> | undefined;
  #stopController: AbortController | undefined;
  #isolatedSince: number | undefined;
  #isolationWarned = false;

  constructor(libp2p: Libp2p<Services>, config: ValidatedOptions) {
    this.#libp2p = libp2p;
    this.#config = config;
    this.peerId = libp2p.peerId.toString();
    this.topic = config.topic;
    this.#bootstrap = config.bootstrap
      .map((addr) => ({ addr, text: addr.toString(), peerId: peerIdOf(addr), dialing: false, lastError: undefined }))
      .filter((target) => target.peerId !== this.peerId);
    const pubsub = libp2p.services.pubsub;
    pubsub.topicValidators.set(config.topic, (_peer, msg) =>
      msg.data.byteLength > MAX_MESSAGE_BYTES ? TopicValidatorResult.Reject : TopicValidatorResult.Accept,
    );
    pubsub.addEventListener('message', (evt) => this.#onPubsubMessage(evt.detail));
    pubsub.addEventListener('gossipsub:graft', ({ detail }) => {
      if (detail.topic !== this.topic || this.#mesh.has(detail.peerId)) return;
      this.#mesh.add(detail.peerId);
      this.#emit({ type: 'mesh:join', peer: detail.peerId });
    });
    pubsub.addEventListener('gossipsub:prune', ({ detail }) => {
      if (detail.topic === this.topic) this.#leaveMesh(detail.peerId);
    });
    libp2p.addEventListener('peer:connect', ({ detail }) => {
      const peer = detail.toString();
      this.#connectedAt.set(peer, Date.now());
      this.#emit({ type: 'peer:connect', peer });
    });
    libp2p.addEventListener('peer:disconnect', ({ detail }) => {
      const peer = detail.toString();
      this.#connectedAt.delete(peer);
      this.#leaveMesh(peer);
      this.#emit({ type: 'peer:disconnect', peer });
    });
  }

  multiaddrs(): string[] {
    return this.#libp2p.getMultiaddrs().map(String);
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#stopController = new AbortController();
    this.#isolatedSince = Date.now();
    this.#isolationWarned = false;
    await this.#libp2p.start();
    if (this.#config.subscribe) this.#libp2p.services.pubsub.subscribe(this.topic);
    // Every node ticks, bootstrap or not: a node that only accepts connections
    // (the first agent of a fleet) must hang up silent peers too.
    this.#redialTimer = setInterval(() => this.#tick(), this.#config.timing.redialIntervalMs);
    this.#tick();
  }

  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    clearInterval(this.#redialTimer);
    this.#redialTimer = undefined;
    this.#stopController?.abort();
    // No unsubscribe first: it would PRUNE our mesh peers with a 10 s backoff,
    // and a quickly restarted node (same peer id) could not rejoin their mesh
    // until it expired. Closing the connections drops us without a backoff.
    await this.#libp2p.stop();
    this.#mesh.clear();
    this.#connectedAt.clear();
  }

  async publish(data: Uint8Array): Promise<number> {
    if (!this.#started) throw new Error('gossip node is not started; call start() before publish()');
    if (data.byteLength > MAX_MESSAGE_BYTES) {
      throw new RangeError(`gossip message is ${data.byteLength} bytes; the limit is ${MAX_MESSAGE_BYTES} (send snapshots over HTTP)`);
    }
    let recipients: number;
    try {
      recipients = (await this.#libp2p.services.pubsub.publish(this.topic, data)).recipients.length;
    } catch (err) {
      this.#stats.publishErrors++;
      throw err;
    }
    this.#stats.published++;
    if (recipients === 0) this.#stats.publishedToNoPeers++;
    return recipients;
  }

  onMessage(handler: (data: Uint8Array, from: string) => void): () => void {
    this.#messageHandlers.add(handler);
    return () => this.#messageHandlers.delete(handler);
  }

  onEvent(handler: (event: GossipEvent) => void): () => void {
    this.#eventHandlers.add(handler);
    return () => this.#eventHandlers.delete(handler);
  }

  peers(): string[] {
    return this.#libp2p.getPeers().map(String);
  }

  meshPeers(): string[] {
    return [...this.#mesh];
  }

  stats(): GossipStats {
    return { ...this.#stats };
  }

  #onPubsubMessage(msg: Message): void {
    if (msg.topic !== this.topic || msg.type !== 'signed') return;
    this.#stats.received++;
    const from = msg.from.toString();
    for (const handler of this.#messageHandlers) this.#guard(() => handler(msg.data, from));
  }

  #emit(event: GossipEvent): void {
    for (const handler of this.#eventHandlers) this.#guard(() => handler(event));
  }

  /** Runs a user handler so that neither a throw nor a rejected promise reaches libp2p. */
  #guard(run: () => unknown): void {
    try {
      const result = run();
      if (result instanceof Promise) result.catch(() => this.#stats.handlerErrors++);
    } catch {
      this.#stats.handlerErrors++;
    }
  }

  #leaveMesh(peer: string): void {
    if (this.#mesh.delete(peer)) this.#emit({ type: 'mesh:leave', peer });
  }

  /** Re-dials unconnected bootstrap peers, hangs up silent ones, and tracks isolation for the operator warning. */
  #tick(): void {
    if (!this.#started) return;
    this.#dropSilentPeers();
    const connected = new Set(this.peers());
    let bootstrapConnected = false;
    for (const target of this.#bootstrap) {
      if (target.peerId !== undefined && connected.has(target.peerId)) {
        bootstrapConnected = true;
      } else if (!target.dialing) {
        this.#dial(target);
      }
    }
    if (bootstrapConnected || connected.size > 0) {
      this.#isolatedSince = undefined;
      this.#isolationWarned = false;
      return;
    }
    const now = Date.now();
    this.#isolatedSince ??= now;
    const after = this.#config.timing.isolationWarningAfterMs;
    if (!this.#isolationWarned && now - this.#isolatedSince >= after) {
      this.#isolationWarned = true;
      this.#warn({ code: GOSSIP_WARNING.isolated, message: this.#isolationMessage(after) });
    }
  }

  /**
   * Hangs up peers connected longer than the grace to which gossipsub holds
   * no outbound stream (the library does not re-open it) or — on a
   * publish-only node — that never announced the fleet topic: the bootstrap
   * redial on either side then reconnects with fresh streams.
   * O(connections) per tick.
   */
  #dropSilentPeers(): void {
    const pubsub = this.#libp2p.services.pubsub;
    const deadline = Date.now() - this.#config.timing.silentPeerGraceMs;
    const subscribed = new Set(pubsub.getSubscribers(this.topic).map(String));
    // Not part of the GossipSub interface; checked only when the implementation exposes it.
    const outbound = (pubsub as unknown as { streamsOutbound?: unknown }).streamsOutbound;
    for (const [peer, since] of this.#connectedAt) {
      if (since > deadline) continue;
      const streamOk = !(outbound instanceof Map) || outbound.has(peer);
      // A subscriber keeps publish-only peers (they never announce the topic) as long as its own
      // stream to them lives; a publish-only node needs both: the peer's subscription and a stream.
      if (streamOk && (this.#config.subscribe || subscribed.has(peer))) continue;
      this.#connectedAt.set(peer, Date.now()); // one hang-up per grace period, even if it lingers
      this.#stats.silentPeersDropped++;
      const id = this.#libp2p.getConnections().find((c) => c.remotePeer.toString() === peer)?.remotePeer;
      if (id !== undefined) this.#libp2p.hangUp(id).catch(() => {});
    }
  }

  #dial(target: BootstrapTarget): void {
    const stopSignal = this.#stopController?.signal;
    if (stopSignal === undefined || stopSignal.aborted) return;
    target.dialing = true;
    const signal = AbortSignal.any([stopSignal, AbortSignal.timeout(this.#config.timing.dialTimeoutMs)]);
    this.#libp2p
      .dial(target.addr, { signal })
      .then(
        (conn) => {
          target.peerId ??= conn.remotePeer.toString();
          target.lastError = undefined;
        },
        (err: unknown) => {
          if (stopSignal.aborted) return;
          this.#stats.dialFailures++;
          target.lastError = errorText(err);
        },
      )
      .finally(() => {
        target.dialing = false;
      });
  }

  #isolationMessage(afterMs: number): string {
    const seconds = (afterMs / 1000).toFixed(afterMs % 1000 === 0 ? 0 : 1);
    const errors = this.#bootstrap
      .filter((t) => t.lastError !== undefined)
      .map((t) => `${t.text}: ${t.lastError}`)
      .join('; ');
    const key = this.#config.swarmKey;
    const hint =
      key !== undefined
        ? `This node uses a private network (swarm key fingerprint ${key.fingerprint}); a peer with a different key does not refuse the connection, the dial just times out. If the fleet uses a swarm key, check that this node's key matches the other nodes' key.`
        : 'Check the bootstrap addresses (including /p2p/<peer id>), that those peers are running, and firewalls. If the fleet uses a private network (swarm key), this node needs the same key.';
    return (
      `gossip (fleet ${this.#config.fleet}): could not connect to any of ${this.#bootstrap.length} bootstrap peer(s) within ${seconds}s ` +
      `and no other peer is connected, so this node neither sends nor receives fleet state. ${hint}` +
      (errors !== '' ? ` Last dial errors: ${errors}` : '')
    );
  }

  #warn(warning: GossipWarning): void {
    const onWarning = this.#config.onWarning;
    if (onWarning !== null) this.#guard(() => onWarning(warning));
    this.#emit({ type: 'warning', warning });
  }
}
