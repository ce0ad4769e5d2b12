/**
 * The gossip node: lifecycle, publish, validation, delivery to handlers and
 * mesh events over the libp2p node from libp2p.ts, with ConnectionUpkeep
 * keeping its connections alive; an agent's states handed to one router
 * (handoff.ts), a router's batches (relay.ts). Handlers and the validator run inside a
 * guard: a throwing or rejecting handler is counted, never propagated into
 * libp2p.
 */
import { TopicValidatorResult, type Message, type TopicValidatorFn } from '@libp2p/gossipsub';
import { GOSSIP_WARNING, MAX_GROUPS, MAX_MESSAGE_BYTES } from './constants.ts';
import { HandoffOutbox } from './handoff.ts';
import { Origins } from './origins.ts';
import { BatchRelay } from './relay.ts';
import { groupOfTopic, groupTopicFor, isGroupName, publishTopics } from './groups.ts';
import { buildLibp2p, scoreTopic } from './libp2p.ts';
import type { GossipLibp2p } from './libp2p.ts';
import { floodsBatches, validateOptions } from './options.ts';
import type { ValidatedOptions } from './options.ts';
import type {
  GossipChannel,
  GossipEvent,
  GossipNode,
  GossipOptions,
  GossipOrigin,
  GossipRpc,
  GossipStats,
  GossipValidator,
  GossipVerdict,
  GossipWarning,
  HandoffAgent,
} from './types.ts';
import { GossipConfigError, zeroStats } from './types.ts';
import { ConnectionUpkeep } from './upkeep.ts';

type PeerId = Parameters<TopicValidatorFn>[0];
type Handler = (data: Uint8Array, from: string, origin: GossipOrigin) => void;

/** A channel's (GossipOptions.channels) validator and handlers. */
interface ChannelState {
  validator: GossipValidator | undefined;
  readonly handlers: Set<Handler>;
  readonly channel: GossipChannel;
}

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
  readonly #messageHandlers = new Set<Handler>();
  /** The channels' state, by topic. */
  readonly #channels = new Map<string, ChannelState>();
  /** The origin the validator saw, for the delivery that follows it (same Message object). */
  readonly #origins = new WeakMap<Message, GossipOrigin>();
  #validator: GossipValidator | undefined;
  readonly #eventHandlers = new Set<(event: GossipEvent) => void>();
  /** Mesh peers, each with the topics it shares a mesh with us on. */
  readonly #mesh = new Map<string, Set<string>>();
  /** Topics subscribed (or to subscribe at start): the fleet topic when serving every group, and group topics. */
  readonly #topics = new Set<string>();
  /** A publish-only node's group topics it has published on (its peers' subscriptions to them count). */
  readonly #published = new Set<string>();
  readonly #stats: GossipStats = zeroStats();
  /** A publish-only node's hand-off to its first-hop router; a subscriber's batched relay (window > 0). */
  readonly #outbox: HandoffOutbox | undefined;
  readonly #relay: BatchRelay | undefined;
  readonly #senders: Origins;
  #started = false;
  readonly #rpcHandlers = new Set<(rpc: GossipRpc, bytes: number) => void>();

  constructor(libp2p: GossipLibp2p, config: ValidatedOptions) {
    this.#libp2p = libp2p;
    this.#config = config;
    this.peerId = libp2p.peerId.toString();
    this.topic = config.topic;
    this.servesAll = config.groups === undefined;
    if (this.servesAll) this.#topics.add(this.topic);
    for (const g of config.groups ?? []) this.#topics.add(groupTopicFor(config.fleet, g));
    const topics = (): Iterable<string> => (config.subscribe ? this.#topics : [this.topic, ...this.#published]);
    this.#upkeep = new ConnectionUpkeep(libp2p, config, this.#stats, (warning) => this.#warn(warning), topics);
    this.#senders = new Origins(libp2p);
    this.#outbox = config.subscribe ? undefined : new HandoffOutbox(libp2p);
    this.#relay = config.subscribe ? this.#relayOf() : undefined;
    const pubsub = libp2p.services.pubsub;
    for (const topic of this.#topics)
      pubsub.topicValidators.set(topic, (via, msg) => this.#validate(via, msg, this.#validator));
    for (const topic of config.channels.values()) {
      const state: ChannelState = { validator: undefined, handlers: new Set(), channel: this.#channelOf(topic) };
      this.#channels.set(topic, state);
      pubsub.topicValidators.set(topic, (via, msg) => this.#validate(via, msg, state.validator));
    }
    pubsub.addEventListener('message', (evt) => this.#onPubsubMessage(evt.detail));
    pubsub.addEventListener('gossipsub:graft', ({ detail }) => {
      if (!this.#topics.has(detail.topic)) return;
      const shared = this.#mesh.get(detail.peerId);
      if (shared !== undefined) return void shared.add(detail.topic);
      this.#mesh.set(detail.peerId, new Set([detail.topic]));
      this.#emit({ type: 'mesh:join', peer: detail.peerId });
      if (this.#started) this.#relay?.peersChanged(this.#mesh.size);
    });
    pubsub.addEventListener('gossipsub:prune', ({ detail }) => {
      const shared = this.#mesh.get(detail.peerId);
      if (shared?.delete(detail.topic) === true && shared.size === 0) this.#leaveMesh(detail.peerId);
    });
    // A node serving every group joins a group's topic when a peer (a group's router) subscribes to it.
    pubsub.addEventListener('subscription-change', ({ detail }) => {
      for (const { topic, subscribe } of detail.subscriptions) {
        const group = subscribe ? groupOfTopic(config.fleet, topic) : undefined;
        if (group !== undefined && this.#started) this.joinGroup(group);
      }
      if (this.#started) this.#relay?.peersChanged(this.#mesh.size);
    });
    libp2p.addEventListener('peer:connect', ({ detail }) => {
      const peer = detail.toString();
      this.#upkeep.peerConnected(peer, this.#mesh);
      this.#emit({ type: 'peer:connect', peer });
    });
    libp2p.addEventListener('peer:disconnect', ({ detail }) => {
      const peer = detail.toString();
      this.#upkeep.peerDisconnected(peer);
      this.#leaveMesh(peer);
      if (this.#started) this.#relay?.peersChanged(this.#mesh.size, peer);
      this.#emit({ type: 'peer:disconnect', peer });
    });
  }

  onRpc(handler: (rpc: GossipRpc, bytes: number) => void): () => void {
    if (this.#rpcHandlers.size === 0) {
      // gossipsub decodes every inbound RPC through this one method: wrapping it sees each RPC once, as read.
      const pubsub = this.#libp2p.services.pubsub as unknown as { decodeRpc(bytes: Uint8Array): GossipRpc };
      const decode = pubsub.decodeRpc.bind(pubsub);
      pubsub.decodeRpc = (bytes) => {
        const rpc = decode(bytes);
        for (const h of this.#rpcHandlers) this.#guard(() => h(rpc, bytes.byteLength));
        return rpc;
      };
    }
    this.#rpcHandlers.add(handler);
    return () => this.#rpcHandlers.delete(handler);
  }

  multiaddrs(): string[] {
    return this.#libp2p.getMultiaddrs().map(String);
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#upkeep.arm();
    await this.#libp2p.start();
    if (this.#config.subscribe) for (const topic of this.#topics) this.#libp2p.services.pubsub.subscribe(topic);
    for (const topic of this.#channels.keys()) this.#libp2p.services.pubsub.subscribe(topic);
    this.#upkeep.startTicking();
    if (this.#config.swarmKey === undefined) {
      this.#warn({
        code: GOSSIP_WARNING.insecure,
        message: `gossip (fleet ${this.#config.fleet}): no swarm key (insecureNoSwarmKey): anyone who reaches this node's gossip port can join the fleet and publish replica state`,
      });
    }
  }

  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#relay?.flush(); // while publish still works
    this.#relay?.peersChanged(0, undefined, true);
    this.#started = false;
    this.#upkeep.disarm();
    this.#outbox?.close();
    // No unsubscribe first: it would PRUNE our mesh peers with a 10 s backoff,
    // and a quickly restarted node (same peer id) could not rejoin their mesh
    // until it expired. Closing the connections drops us without a backoff.
    await this.#libp2p.stop();
    this.#mesh.clear();
    this.#upkeep.clear();
  }

  async publish(data: Uint8Array, group?: string): Promise<number> {
    const pubsub = this.#libp2p.services.pubsub;
    const groupTopic = isGroupName(group) ? groupTopicFor(this.#config.fleet, group) : undefined;
    if (groupTopic !== undefined && !this.#published.has(groupTopic) && this.#published.size < MAX_GROUPS)
      this.#published.add(groupTopic);
    if (this.#outbox !== undefined && this.#started) {
      const takes = new Set<string>(pubsub.getSubscribers(this.topic).map(String));
      if (groupTopic !== undefined) for (const p of pubsub.getSubscribers(groupTopic)) takes.add(p.toString());
      if (await this.#outbox.send(groupTopic !== undefined ? group : undefined, data, takes)) {
        this.#stats.published++;
        this.#stats.handedOff++;
        return 1;
      }
    }
    return this.#publish(
      publishTopics(this.topic, groupTopic, (t) => pubsub.getSubscribers(t).map(String)),
      data,
    );
  }

  channel(name: string): GossipChannel {
    const topic = this.#config.channels.get(name);
    if (topic === undefined)
      throw new GossipConfigError(`no channel ${JSON.stringify(name)}: name it in the node's channels option`);
    return this.#channels.get(topic)!.channel;
  }

  #channelOf(topic: string): GossipChannel {
    const state = (): ChannelState => this.#channels.get(topic)!;
    return {
      topic,
      publish: (data) => this.#publish([topic], data),
      onMessage: (handler) => {
        state().handlers.add(handler);
        return () => state().handlers.delete(handler);
      },
      setValidator: (validate) => {
        state().validator = validate;
      },
    };
  }

  async #publish(topics: Iterable<string>, data: Uint8Array): Promise<number> {
    if (!this.#started) throw new Error('gossip node is not started; call start() before publish()');
    if (data.byteLength > MAX_MESSAGE_BYTES) {
      throw new RangeError(
        `gossip message is ${data.byteLength} bytes; the limit is ${MAX_MESSAGE_BYTES} (send snapshots over HTTP)`,
      );
    }
    const pubsub = this.#libp2p.services.pubsub;
    let recipients = 0;
    try {
      for (const topic of topics) recipients += (await pubsub.publish(topic, data)).recipients.length;
    } catch (err) {
      this.#stats.publishErrors++;
      throw err;
    }
    this.#stats.published++;
    if (recipients === 0) this.#stats.publishedToNoPeers++;
    return recipients;
  }

  readonly servesAll: boolean;

  joinGroup(group: string): boolean {
    if (!this.servesAll || !this.#config.subscribe || !isGroupName(group)) return false;
    const topic = groupTopicFor(this.#config.fleet, group);
    if (this.#topics.has(topic) || this.#topics.size > MAX_GROUPS) return false;
    this.#topics.add(topic);
    const pubsub = this.#libp2p.services.pubsub;
    scoreTopic(this.#libp2p, topic);
    pubsub.topicValidators.set(topic, (via, msg) => this.#validate(via, msg, this.#validator));
    if (this.#started) pubsub.subscribe(topic);
    return true;
  }

  groups(): string[] {
    const out: string[] = [];
    for (const topic of this.#topics) {
      const group = groupOfTopic(this.#config.fleet, topic);
      if (group !== undefined) out.push(group);
    }
    return out;
  }

  onMessage(handler: (data: Uint8Array, from: string, origin: GossipOrigin) => void): () => void {
    this.#messageHandlers.add(handler);
    return () => this.#messageHandlers.delete(handler);
  }

  setValidator(validate: GossipValidator | undefined): void {
    this.#validator = validate;
  }

  peerScore(peer: string): number {
    return (this.#libp2p.services.pubsub as unknown as { getScore(id: string): number }).getScore(peer);
  }

  onEvent(handler: (event: GossipEvent) => void): () => void {
    this.#eventHandlers.add(handler);
    return () => this.#eventHandlers.delete(handler);
  }

  peers(): string[] {
    return this.#libp2p.getPeers().map(String);
  }

  async disconnect(peer: string): Promise<void> {
    const id = this.#libp2p.getConnections().find((c) => c.remotePeer.toString() === peer)?.remotePeer;
    if (id !== undefined) await this.#libp2p.hangUp(id);
  }

  meshPeers(): string[] {
    return this.#relay?.floods === true ? [...this.#relay.routers()] : [...this.#mesh.keys()];
  }

  stats(): GossipStats {
    const windowMs = this.#relay?.windowMs();
    return {
      ...this.#stats,
      statesCoalesced: this.#relay?.coalesced ?? 0,
      ...(windowMs !== undefined && windowMs > 0 ? { batchWindowMs: windowMs } : {}),
    };
  }

  handOff(agent: HandoffAgent, group: string | undefined, state: Uint8Array): boolean {
    if (this.#relay?.takesHandoffs !== true) return false;
    this.#relay.handedOff(agent.peerId, agent.author, group, state);
    return true;
  }

  /** A topic's validator: size, signature policy, a batch's states (relay.ts), then the user's validator (a throw is an ignore). */
  #validate(via: PeerId, msg: Message, validate: GossipValidator | undefined): TopicValidatorResult {
    if (msg.data.byteLength > MAX_MESSAGE_BYTES || msg.type !== 'signed') return this.#verdict('reject');
    if (this.#topics.has(msg.topic) && BatchRelay.isBatch(msg))
      return this.#verdict(this.#relay?.validate(via.toString(), msg) ?? 'ignore');
    if (validate === undefined) return TopicValidatorResult.Accept;
    const origin = this.#senders.of(msg.from, via);
    this.#origins.set(msg, origin);
    try {
      return this.#verdict(validate(msg.data, origin));
    } catch {
      this.#stats.handlerErrors++;
      return this.#verdict('ignore');
    }
  }

  #verdict(v: GossipVerdict): TopicValidatorResult {
    if (v === 'accept') return TopicValidatorResult.Accept;
    if (v === 'reject') {
      this.#stats.rejected++;
      return TopicValidatorResult.Reject;
    }
    this.#stats.ignored++;
    return TopicValidatorResult.Ignore;
  }

  #onPubsubMessage(msg: Message): void {
    if (msg.type !== 'signed') return;
    const isState = this.#topics.has(msg.topic);
    const handlers = isState ? this.#messageHandlers : this.#channels.get(msg.topic)?.handlers;
    if (handlers === undefined) return;
    // `received` counts the state topics' messages (GossipStats).
    if (isState && BatchRelay.isBatch(msg)) return this.#relay?.deliver(msg);
    if (isState) this.#stats.received++;
    const from = msg.from.toString();
    const origin = this.#origins.get(msg) ?? this.#senders.of(msg.from, msg.from);
    for (const handler of handlers) this.#guard(() => handler(msg.data, from, origin));
  }

  /** The batched relay (relay.ts) over this node: it reads batches; with a window it also takes hand-offs. */
  #relayOf(): BatchRelay {
    const { fleet, batchWindowMs, batchReadsPerS, batchStatesPerS } = this.#config;
    const host = { libp2p: this.#libp2p, stats: this.#stats, fleet, topic: this.topic, topics: this.#topics };
    return new BatchRelay(
      {
        ...host,
        validator: () => this.#validator,
        originOf: (author, via, viaAddresses) => this.#senders.of(author, via, viaAddresses),
        deliver: (data, from, origin) => this.#messageHandlers.forEach((h) => this.#guard(() => h(data, from, origin))),
        publishOn: (topics, data) => this.#publish(topics, data),
        peerScore: (peer) => this.peerScore(peer),
      },
      batchWindowMs,
      floodsBatches(this.#config),
      batchReadsPerS,
      batchStatesPerS,
    );
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
    if (!this.#mesh.delete(peer)) return;
    this.#emit({ type: 'mesh:leave', peer });
    if (this.#started) this.#relay?.peersChanged(this.#mesh.size);
  }

  #warn(warning: GossipWarning): void {
    const onWarning = this.#config.onWarning;
    if (onWarning !== null) this.#guard(() => onWarning(warning));
    this.#emit({ type: 'warning', warning });
  }
}
