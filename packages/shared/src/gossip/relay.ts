/**
 * A router's side of batched relay (docs/GOSSIP.md, "Batches: one signature
 * for many states"): states its agents hand it, and batches from other routers.
 *
 * The hand-off is offered while the node (with a window) has a router to
 * send batches to: one in its mesh, or, flooding its batches (options.ts
 * floodsBatches), one connected and subscribed. A router with none could
 * relay a batch to no one.
 * A handed-off state (handoff.ts's inbox; or GossipNode.handOff, a bench's
 * agents without a stream), per state:
 *  1. From a peer below the graylist threshold: dropped unread, as gossipsub
 *     drops its RPCs.
 *  2. The node's validator judges it as direct state: the author is the
 *     connection's peer (Noise authenticated it), its addresses the
 *     connection's. A reject counts against the peer's gossipsub score on the
 *     topic (P4), as a rejected signed message would, so three graylist it.
 *  3. Accepted: delivered to the node's handlers at once and added to the
 *     window (batch.ts), which publishes it in one batch per group.
 *     Two of one agent waiting in one window go out as one (coalesce.ts);
 *     each was delivered here on its own.
 * A batch from the topic, per batch:
 *  1. It must unpack (else rejected: its signer packed it).
 *  2. Each state is judged as relayed state: the author the batch names
 *     (or named earlier for its slot; a slot not learnt yet is skipped),
 *     the neighbour it came from as `via`, the signer as `vouchedBy`. One
 *     state rejected outright rejects the batch: the signer checked each by
 *     the same rules before packing, so such a state is the signer's doing.
 *     Ignored states are dropped; the batch is accepted and relayed.
 *  3. On delivery, each accepted state goes to the handlers as if it had
 *     come alone.
 * Complexity: O(states) per batch, plus the validator's cost per state.
 * Trade-off: a router vouches for its agents' states with one signature;
 * receivers can check the author's rights (trust.ts) but not that the author
 * sent those bytes (docs/SECURITY.md).
 */
import type { Message } from '@libp2p/gossipsub';
import { BATCH_MAX_BYTES, GRAYLIST_THRESHOLD, MAX_MESSAGE_BYTES, PUBLISH_THRESHOLD } from './constants.ts';
import { Batcher, isBatch, unpackBatch, type BatchEntry } from './batch.ts';
import { HandoffRate, windowFor } from './window.ts';
import { coalesceStates } from '../coalesce.ts';
import { groupTopicFor, publishTopics } from './groups.ts';
import { HandoffInbox } from './handoff.ts';
import type { GossipLibp2p } from './libp2p.ts';
import type { GossipOrigin, GossipStats, GossipValidator, GossipVerdict } from './types.ts';

/** States one batch may hold: 64 KiB of states of at least 16 bytes each. */
const MAX_BATCH_STATES = BATCH_MAX_BYTES / 16;
/** Slots remembered at most (about 40 bytes each beside the key). */
const MAX_NAMED = 262_144;

/** What the relay needs of its gossip node. */
export interface RelayHost {
  readonly libp2p: GossipLibp2p;
  readonly stats: GossipStats;
  readonly fleet: string;
  /** The fleet topic, and the state topics this node holds. */
  readonly topic: string;
  readonly topics: ReadonlySet<string>;
  validator(): GossipValidator | undefined;
  /** The origin of a state by `author` that reached this node through `via` (whose addresses, when given, are not looked up again). */
  originOf(author: string, via: string, viaAddresses?: readonly string[]): GossipOrigin;
  deliver(data: Uint8Array, from: string, origin: GossipOrigin): void;
  publishOn(topics: Iterable<string>, data: Uint8Array): Promise<number>;
  peerScore(peer: string): number;
}

type Accepted = { state: Uint8Array; from: string; origin: GossipOrigin };

export class BatchRelay {
  readonly #host: RelayHost;
  readonly #inbox: HandoffInbox | undefined;
  readonly #batcher: Batcher;
  /** (router, epoch) → slot → the agent's peer id, as batches named them (bounded: cleared when full; renamed within a second). */
  readonly #authors = new Map<string, Map<number, string>>();
  #named = 0;
  /** The states each batch's validation accepted, for its delivery (the same Message object). */
  readonly #accepted = new WeakMap<Message, Accepted[]>();
  /** The agents handing this router states, and how many a second (the window's states budget). */
  readonly #handed = new HandoffRate();

  /** Batches go straight to every subscribed router (options.ts floodsBatches), not through the mesh. */
  readonly floods: boolean;
  /** The batch window now, ms (0: no hand-offs). */
  readonly windowMs: () => number;

  /** States sent as one with another of their agent's (batch.ts coalescing). */
  get coalesced(): number {
    return this.#batcher.coalesced;
  }

  /**
   * `windowMs` the batch window (0: no hand-offs); flooding, it widens with
   * the routers it sends to so that each reads at most `readsPerS` batches
   * and `statesPerS` states a second (window.ts).
   */
  constructor(host: RelayHost, windowMs: number, floods: boolean, readsPerS = 0, statesPerS = 0) {
    this.#host = host;
    this.floods = floods;
    this.#inbox =
      windowMs > 0
        ? new HandoffInbox(host.libp2p, MAX_MESSAGE_BYTES, (peer, _connection, group, state) =>
            this.handedOff(peer.toString(), peer.toMultihash().bytes, group, state),
          )
        : undefined;
    this.windowMs = floods
      ? () => windowFor(windowMs, this.routers().size, this.#handed.read(Date.now()), readsPerS, statesPerS)
      : () => windowMs;
    this.#batcher = new Batcher(
      this.windowMs,
      BATCH_MAX_BYTES,
      (group, batch) => {
        host.stats.batchesPublished++;
        const groupTopic = group !== undefined ? groupTopicFor(host.fleet, group) : undefined;
        const subscribers = (t: string): string[] => host.libp2p.services.pubsub.getSubscribers(t).map(String);
        host.publishOn(publishTopics(host.topic, groupTopic, subscribers), batch).catch(() => {});
      },
      coalesceStates,
    );
  }

  /**
   * Offers the hand-off while its batches reach another router: one of its
   * `meshPeers`, or, flooding, one of `routers()` (`leaving` not counted: it
   * is going); never once `stopping`.
   */
  peersChanged(meshPeers: number, leaving?: string, stopping = false): void {
    const any = this.floods ? this.routers(leaving, 1).size > 0 : meshPeers > 0;
    this.#inbox?.offer(!stopping && any).catch(() => {});
  }

  /**
   * Flooding, who its batches go to (as gossipsub's flood publish picks):
   * connected subscribers of its state topics scoring at least
   * PUBLISH_THRESHOLD, but `leaving`; the first `enough` of them when given.
   */
  routers(leaving?: string, enough = Infinity): Set<string> {
    const pubsub = this.#host.libp2p.services.pubsub;
    const peers = new Set<string>();
    for (const topic of this.#host.topics)
      for (const p of pubsub.getSubscribers(topic)) {
        const id = p.toString();
        if (id !== leaving && this.#host.peerScore(id) >= PUBLISH_THRESHOLD) peers.add(id);
        if (peers.size >= enough) return peers;
      }
    return peers;
  }

  /** Sends what is pending (before the node stops). */
  flush(): void {
    this.#batcher.flushAll();
  }

  /** Whether a hand-off is taken now: a window, and the protocol offered (peersChanged). */
  get takesHandoffs(): boolean {
    return this.#inbox?.offered === true;
  }

  /**
   * One state handed off by agent `peer` (its peer id; `author`: its
   * multihash bytes, what a batch names it by): steps 1–3 of the header.
   * The inbox calls it for each frame, with the peer Noise named.
   */
  handedOff(peer: string, author: Uint8Array, group: string | undefined, state: Uint8Array): void {
    const host = this.#host;
    if (host.peerScore(peer) < GRAYLIST_THRESHOLD || state.byteLength > MAX_MESSAGE_BYTES)
      return void host.stats.ignored++;
    const origin = host.originOf(peer, peer);
    const verdict = judge(host, state, origin);
    if (verdict === 'reject') {
      host.stats.rejected++;
      const score = (host.libp2p.services.pubsub as unknown as { score: ScoreHook }).score;
      const groupTopic = group !== undefined ? groupTopicFor(host.fleet, group) : undefined;
      score.markInvalidMessageDelivery(
        peer,
        groupTopic !== undefined && host.topics.has(groupTopic) ? groupTopic : host.topic,
      );
      return;
    }
    if (verdict === 'ignore') return void host.stats.ignored++;
    host.stats.handOffsReceived++;
    host.stats.received++;
    host.deliver(state, peer, origin); // every state applied here; only what is batched is coalesced
    this.#handed.add(peer, Date.now());
    this.#batcher.add(group, author, state);
  }

  /** Is this a batch (the first byte; batch.ts)? */
  static isBatch(msg: Message): boolean {
    return isBatch(msg.data);
  }

  /** The topic validator's verdict on a batch (the steps above); remembers what it accepted. */
  validate(via: string, msg: Message): GossipVerdict {
    if (msg.type !== 'signed') return 'reject';
    const batch = unpackBatch(msg.data, MAX_BATCH_STATES);
    if (batch === undefined) return 'reject';
    const vouchedBy = msg.from.toString();
    const accepted: Accepted[] = [];
    const named = this.#namedBy(vouchedBy, batch.epoch);
    const viaAddresses = this.#host.originOf(via, via).addresses; // one look-up a batch: every state came through `via`
    for (const e of batch.entries) {
      const author = this.#authorOf(named, e);
      if (author === undefined) {
        this.#host.stats.ignored++; // its agent not named to this router yet: at most AUTHOR_EVERY_MS
        continue;
      }
      const origin = { ...this.#host.originOf(author, via, viaAddresses), vouchedBy };
      const verdict = judge(this.#host, e.state, origin);
      if (verdict === 'reject') return 'reject';
      if (verdict === 'accept') accepted.push({ state: e.state, from: author, origin });
      else this.#host.stats.ignored++;
    }
    this.#accepted.set(msg, accepted);
    return 'accept';
  }

  /** Delivers a batch's accepted states, each as if it had come alone (validated: the node's validator ran it). */
  deliver(msg: Message): void {
    this.#host.stats.batchesReceived++;
    for (const a of this.#accepted.get(msg) ?? []) {
      this.#host.stats.received++;
      this.#host.deliver(a.state, a.from, a.origin);
    }
  }

  /** The slots a router named in an epoch (all forgotten once MAX_NAMED are held). */
  #namedBy(router: string, epoch: number): Map<number, string> {
    if (this.#named >= MAX_NAMED) {
      this.#authors.clear();
      this.#named = 0;
    }
    const key = `${router}/${epoch}`;
    let named = this.#authors.get(key);
    if (named === undefined) this.#authors.set(key, (named = new Map()));
    return named;
  }

  /** An entry's agent: named in it (and remembered for its slot), or named earlier by the same router in this epoch. */
  #authorOf(named: Map<number, string>, e: BatchEntry): string | undefined {
    if (e.author === undefined) return named.get(e.slot);
    if (!named.has(e.slot)) this.#named++;
    named.set(e.slot, e.author);
    return e.author;
  }
}

interface ScoreHook {
  markInvalidMessageDelivery(peer: string, topic: string): void;
}

/** The validator's verdict, `accept` without one; a throw is an ignore. */
function judge(host: RelayHost, state: Uint8Array, origin: GossipOrigin): GossipVerdict {
  const validate = host.validator();
  if (validate === undefined) return 'accept';
  try {
    return validate(state, origin);
  } catch {
    host.stats.handlerErrors++;
    return 'ignore';
  }
}
