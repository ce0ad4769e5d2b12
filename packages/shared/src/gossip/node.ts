/**
 * The gossip node: lifecycle, publish, delivery to handlers and mesh events
 * over the libp2p node from libp2p.ts, with ConnectionUpkeep keeping its
 * connections alive. Handlers run inside a guard: a throwing or rejecting
 * handler is counted, never propagated into libp2p.
 */
import type { Message } from '@libp2p/gossipsub';
import { GOSSIP_WARNING, MAX_MESSAGE_BYTES } from './constants.ts';
import { buildLibp2p } from './libp2p.ts';
import type { GossipLibp2p } from './libp2p.ts';
import { validateOptions } from './options.ts';
import type { ValidatedOptions } from './options.ts';
import type { GossipEvent, GossipNode, GossipOptions, GossipStats, GossipWarning } from './types.ts';
import { ConnectionUpkeep } from './upkeep.ts';

export async function createGossipNode(opts: GossipOptions): Promise<GossipNode> {
  const config = validateOptions(opts);
  return new GossipNodeImpl(await buildLibp2p(config), config);
}

class GossipNodeImpl implements GossipNode {
  readonly peerId: string;
  readonly topic: string;
  readonly #libp2p: GossipLibp2p;
  readonly #config: ValidatedOptions;
  readonly #upkeep: ConnectionUpkeep;
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
  #started = false;

  constructor(libp2p: GossipLibp2p, config: ValidatedOptions) {
    this.#libp2p = libp2p;
    this.#config = config;
    this.peerId = libp2p.peerId.toString();
    this.topic = config.topic;
    this.#upkeep = new ConnectionUpkeep(libp2p, config, this.#stats, (warning) => this.#warn(warning));
    const pubsub = libp2p.services.pubsub;
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
      this.#upkeep.peerConnected(peer);
      this.#emit({ type: 'peer:connect', peer });
    });
    libp2p.addEventListener('peer:disconnect', ({ detail }) => {
      const peer = detail.toString();
      this.#upkeep.peerDisconnected(peer);
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
    this.#upkeep.arm();
    await this.#libp2p.start();
    if (this.#config.subscribe) this.#libp2p.services.pubsub.subscribe(this.topic);
    this.#upkeep.startTicking();
    if (this.#config.swarmKey === undefined) {
      this.#warn({ code: GOSSIP_WARNING.insecure, message: `gossip (fleet ${this.#config.fleet}): no swarm key (insecureNoSwarmKey): anyone who reaches this node's gossip port can join the fleet and publish replica state` });
    }
  }

  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    this.#upkeep.disarm();
    // No unsubscribe first: it would PRUNE our mesh peers with a 10 s backoff,
    // and a quickly restarted node (same peer id) could not rejoin their mesh
    // until it expired. Closing the connections drops us without a backoff.
    await this.#libp2p.stop();
    this.#mesh.clear();
    this.#upkeep.clear();
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

  #warn(warning: GossipWarning): void {
    const onWarning = this.#config.onWarning;
    if (onWarning !== null) this.#guard(() => onWarning(warning));
    this.#emit({ type: 'warning', warning });
  }
}
