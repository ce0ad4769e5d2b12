/**
 * The hand-off: an agent gives each state to ONE router (its first hop) over
 * a libp2p stream on a connection it already holds; that router checks it
 * as direct state (Noise names the agent: no per-state signature is needed
 * to know the author) and relays it in its next batch (batch.ts).
 *
 * Agent (`HandoffOutbox.send`), per state:
 *  1. The first hop: the router it handed off to last, while it is connected
 *     and takes the state's topic; else the first connected peer that takes
 *     it (subscribed to the group's topic or the fleet topic) and was not
 *     found to lack the protocol.
 *  2. Write one frame on the stream to it (opened once, kept open).
 *  3. On a failed open or write: drop that stream, mark a peer lacking the
 *     protocol (an older router) and try the next candidate; with none left,
 *     `send` answers false and the caller publishes a signed state on the
 *     topic as before (node.ts): a fleet mid-upgrade loses nothing.
 * Router (`HandoffInbox`): offers the protocol only while it has a router
 * in its mesh to relay to (relay.ts); reads frames from each agent's stream
 * and hands each to the node with the connection's peer id. A router in no
 * mesh (routers that dial the agents and not each other) offers none, so
 * its agents sign their states and flood them to every router they reach.
 *
 * Complexity: O(connections) to pick a first hop, O(1) per state after.
 * Trade-off: a write accepted by a stream whose connection is dying is lost
 * without notice; the next state (at most one floor, 500 ms, later) goes to
 * the second router. Gossipsub's own publish lost such states in the same way.
 */
import { HandoffReader, packHandoff } from './batch.ts';
import type { GossipLibp2p } from './libp2p.ts';

type PeerId = ReturnType<GossipLibp2p['getPeers']>[number];
type Stream = Awaited<ReturnType<GossipLibp2p['dialProtocol']>>;
type Connection = ReturnType<GossipLibp2p['getConnections']>[number];

/** The hand-off stream's protocol id (one version; a router without it is an older one). */
export const HANDOFF_PROTOCOL = '/warmpath/state-handoff/1';
/** Hand-off streams one agent connection may hold open at the router (an agent opens one). */
const MAX_INBOUND_STREAMS = 2;
/** A router that refused the protocol is asked again after this long, ms: it offers it once it joins a mesh. */
const ASK_AGAIN_MS = 5_000;

export class HandoffOutbox {
  readonly #libp2p: GossipLibp2p;
  /** Peers that refused the protocol, and until when (ms) they are not asked again. */
  readonly #lacking = new Map<string, number>();
  #target: { peer: string; stream: Stream } | undefined;
  #opening: Promise<void> = Promise.resolve();

  constructor(libp2p: GossipLibp2p) {
    this.#libp2p = libp2p;
    libp2p.addEventListener('peer:disconnect', ({ detail }) => {
      const peer = detail.toString();
      this.#lacking.delete(peer);
      if (this.#target?.peer === peer) this.#target = undefined;
    });
  }

  /** The peer states go to now (tests, the bench), if any. */
  get firstHop(): string | undefined {
    return this.#target?.peer;
  }

  /**
   * Hands one state to a first hop among `takes` (peers that take its topic).
   * Resolves to true once written to a stream, false when no connected peer
   * speaks the protocol. Calls run one after another, in order.
   */
  send(group: string | undefined, state: Uint8Array, takes: ReadonlySet<string>): Promise<boolean> {
    const frame = packHandoff(group, state);
    const run = this.#opening.then(() => this.#send(frame, takes));
    this.#opening = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  async #send(frame: Uint8Array, takes: ReadonlySet<string>): Promise<boolean> {
    const tried = new Set<string>();
    for (;;) {
      const t = this.#target;
      if (t !== undefined && takes.has(t.peer) && t.stream.status === 'open') {
        try {
          t.stream.send(frame);
          return true;
        } catch {
          t.stream.abort(new Error('hand-off write failed'));
          tried.add(t.peer);
          this.#target = undefined;
        }
      }
      const next = this.#candidate(takes, tried);
      if (next === undefined) return false;
      tried.add(next.toString());
      try {
        const stream = await this.#libp2p.dialProtocol(next, HANDOFF_PROTOCOL, { signal: AbortSignal.timeout(5_000) });
        this.#target?.stream.abort(new Error('first hop replaced'));
        this.#target = { peer: next.toString(), stream };
      } catch (err) {
        if ((err as { name?: string }).name === 'UnsupportedProtocolError')
          this.#lacking.set(next.toString(), Date.now() + ASK_AGAIN_MS);
      }
    }
  }

  /** The first connected peer that takes the topic, lacks nothing and was not tried for this state. */
  #candidate(takes: ReadonlySet<string>, tried: ReadonlySet<string>): PeerId | undefined {
    for (const peer of this.#libp2p.getPeers()) {
      const id = peer.toString();
      if (takes.has(id) && !tried.has(id) && !((this.#lacking.get(id) ?? 0) > Date.now())) return peer;
    }
    return undefined;
  }

  close(): void {
    this.#target?.stream.abort(new Error('closed'));
    this.#target = undefined;
  }
}

/** What a router does with one handed-off state: the agent's peer id (Noise), its connection, group and bytes. */
export type HandoffSink = (peer: PeerId, connection: Connection, group: string | undefined, state: Uint8Array) => void;

/** A router's side: the protocol offered or withdrawn; every frame of every agent's stream goes to `sink`. */
export class HandoffInbox {
  readonly #libp2p: GossipLibp2p;
  readonly #maxBytes: number;
  readonly #sink: HandoffSink;
  readonly #streams = new Set<Stream>();
  #offered = false;

  constructor(libp2p: GossipLibp2p, maxBytes: number, sink: HandoffSink) {
    this.#libp2p = libp2p;
    this.#maxBytes = maxBytes;
    this.#sink = sink;
  }

  /** Is the protocol offered now? */
  get offered(): boolean {
    return this.#offered;
  }

  /** Offers the protocol, or withdraws it and closes the agents' streams (they fail over, or sign). */
  async offer(on: boolean): Promise<void> {
    if (on === this.#offered) return;
    this.#offered = on;
    if (!on) {
      for (const stream of this.#streams) stream.abort(new Error('hand-off withdrawn'));
      this.#streams.clear();
      return this.#libp2p.unhandle(HANDOFF_PROTOCOL);
    }
    await this.#libp2p.handle(HANDOFF_PROTOCOL, (stream, connection) => this.#read(stream, connection), {
      maxInboundStreams: MAX_INBOUND_STREAMS,
    });
  }

  #read(stream: Stream, connection: Connection): void {
    const reader = new HandoffReader(this.#maxBytes);
    this.#streams.add(stream);
    stream.addEventListener('close', () => this.#streams.delete(stream));
    stream.addEventListener('message', (evt) => {
      const frames = reader.push(evt.data.subarray());
      if (frames === undefined) return stream.abort(new Error('malformed hand-off frame'));
      for (const f of frames) this.#sink(connection.remotePeer, connection, f.group, f.state);
    });
  }
}
