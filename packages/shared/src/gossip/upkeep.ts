/**
 * Connection upkeep and health of one gossip node, on one timer.
 *
 * Steps of each tick (every `redialIntervalMs`):
 *  1. Hang up peers that stayed silent on the fleet topic and its group topics past
 *     `silentPeerGraceMs` (a gossipsub stream that failed to open is never
 *     re-opened by the library while the connection lives), so the redial
 *     below rebuilds them with fresh streams.
 *  2. Dial the peers dial-peers.ts picks (every unconnected bootstrap
 *     or DNS peer, or enough of them to keep `gossipPeers` routers), so a
 *     restarted peer is rejoined and one that went away is replaced.
 *     `bootstrapDns` names are re-resolved on their own timer
 *     (`dnsIntervalMs`), each answer followed by a tick.
 *  3. While no bootstrap peer and no other peer is connected for
 *     `isolationWarningAfterMs`, warn the operator once per episode. A wrong
 *     swarm key makes dials time out rather than fail, so this is the only
 *     signal an operator gets.
 *
 * Complexity: O(candidates log candidates + connections) per tick.
 *
 * Trade-off: a fixed-interval redial rejoins a restarted peer within one
 * interval, at the cost of dial attempts against peers that are really gone.
 */
import { DialPeers, type DialPeer } from './dial-peers.ts';
import { GOSSIP_WARNING } from './constants.ts';
import type { GossipLibp2p } from './libp2p.ts';
import type { ValidatedOptions } from './options.ts';
import type { GossipStats, GossipWarning } from './types.ts';

export class ConnectionUpkeep {
  readonly #libp2p: GossipLibp2p;
  readonly #config: ValidatedOptions;
  /** The node's counters; upkeep adds dial failures and silent-peer hang-ups. */
  readonly #stats: GossipStats;
  readonly #warn: (warning: GossipWarning) => void;
  readonly #dialPeers: DialPeers;
  readonly #self: string;
  /** Connected peer → when it connected (local clock, ms), for the silent-peer check. */
  readonly #connectedAt = new Map<string, number>();
  #running = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #dnsTimer: ReturnType<typeof setInterval> | undefined;
  #stopController: AbortController | undefined;
  #isolatedSince: number | undefined;
  #isolationWarned = false;
  /** The node's topics: the fleet topic and its group topics (groups.ts). */
  readonly #topics: () => Iterable<string>;

  constructor(
    libp2p: GossipLibp2p,
    config: ValidatedOptions,
    stats: GossipStats,
    warn: (warning: GossipWarning) => void,
    topics: () => Iterable<string> = () => [config.topic],
  ) {
    this.#topics = topics;
    this.#libp2p = libp2p;
    this.#config = config;
    this.#stats = stats;
    this.#warn = warn;
    this.#self = libp2p.peerId.toString();
    this.#dialPeers = new DialPeers(config, this.#self, stats);
  }

  /** `mesh`: the node's fleet-topic mesh peers, kept over the others when the cap is reached. */
  peerConnected(peer: string, mesh: { has(peer: string): boolean }): void {
    this.#connectedAt.set(peer, Date.now());
    this.#enforceCap(mesh);
  }

  peerDisconnected(peer: string): void {
    this.#connectedAt.delete(peer);
    this.#dialPeers.disconnected(peer);
  }

  /** Called before libp2p starts: isolation is measured from here. */
  arm(): void {
    this.#running = true;
    this.#stopController = new AbortController();
    this.#isolatedSince = Date.now();
    this.#isolationWarned = false;
  }

  /** Called once libp2p listens. Every node ticks, bootstrap or not: a node that only accepts connections (the first agent of a fleet) must hang up silent peers too. */
  startTicking(): void {
    this.#dialPeers.setOwnAddresses(this.#libp2p.getMultiaddrs().map(String));
    this.#timer = setInterval(() => this.#tick(), this.#config.timing.redialIntervalMs);
    this.#tick();
    if (this.#config.dns.length === 0) return;
    const resolve = (): void => void this.#dialPeers.refreshDns().then(() => this.#tick());
    this.#dnsTimer = setInterval(resolve, this.#config.timing.dnsIntervalMs);
    resolve();
  }

  /** Stops ticking and aborts dials in flight; called before libp2p stops. */
  disarm(): void {
    this.#running = false;
    clearInterval(this.#timer);
    clearInterval(this.#dnsTimer);
    this.#timer = undefined;
    this.#dnsTimer = undefined;
    this.#stopController?.abort();
  }

  /** Forgets connection times; called once libp2p has stopped. */
  clear(): void {
    this.#connectedAt.clear();
  }

  #tick(): void {
    if (!this.#running) return;
    this.#dropSilentPeers();
    const connected = new Set(this.#libp2p.getPeers().map(String));
    for (const c of this.#dialPeers.toDial(connected, this.#subscribers())) this.#dial(c);
    const bootstrapConnected = this.#dialPeers.all().some((c) => c.peerId !== undefined && connected.has(c.peerId));
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
   * publish-only node — that announced none of its topics: the bootstrap
   * redial on either side then reconnects with fresh streams.
   * O(connections) per tick.
   */
  #dropSilentPeers(): void {
    const pubsub = this.#libp2p.services.pubsub;
    const deadline = Date.now() - this.#config.timing.silentPeerGraceMs;
    const subscribed = this.#subscribers();
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

  /** Peers subscribed to any of this node's topics. */
  #subscribers(): Set<string> {
    const out = new Set<string>();
    for (const topic of this.#topics())
      for (const peer of this.#libp2p.services.pubsub.getSubscribers(topic)) out.add(peer.toString());
    return out;
  }

  /**
   * Holds the node to `maxConnections` peers. libp2p's own cap admits every
   * inbound upgrade that was already pending and never closes a connection
   * gossipsub holds streams on, so beyond it this hangs up peers outside the
   * mesh first (agents, on a router), newest first; a refused agent picks
   * another router. O(1) under the cap, O(peers log peers) over it.
   */
  #enforceCap(mesh: { has(peer: string): boolean }): void {
    const peers = this.#libp2p.getPeers();
    const excess = peers.length - this.#config.maxConnections;
    if (excess <= 0) return;
    const ranked = peers
      .map((id) => ({ id, inMesh: mesh.has(id.toString()), at: this.#connectedAt.get(id.toString()) ?? 0 }))
      .sort((a, b) => Number(a.inMesh) - Number(b.inMesh) || b.at - a.at);
    for (const { id } of ranked.slice(0, excess)) {
      this.#stats.overCapDropped++;
      this.#libp2p.hangUp(id).catch(() => {});
    }
  }

  #dial(target: DialPeer): void {
    const stopSignal = this.#stopController?.signal;
    if (stopSignal === undefined || stopSignal.aborted) return;
    target.dialing = true;
    const signal = AbortSignal.any([stopSignal, AbortSignal.timeout(this.#config.timing.dialTimeoutMs)]);
    this.#libp2p
      .dial(target.addr, { signal })
      .then(
        (conn) => this.#dialPeers.dialed(target, conn.remotePeer.toString(), this.#self),
        (err: unknown) => {
          if (stopSignal.aborted) return;
          this.#stats.dialFailures++;
          this.#dialPeers.failed(target, err);
        },
      )
      .finally(() => {
        target.dialing = false;
      });
  }

  #isolationMessage(afterMs: number): string {
    const seconds = (afterMs / 1000).toFixed(afterMs % 1000 === 0 ? 0 : 1);
    const errors = this.#dialPeers.errors();
    const key = this.#config.swarmKey;
    const hint =
      key !== undefined
        ? `This node uses a private network (swarm key fingerprint ${key.fingerprint}); a peer with a different key does not refuse the connection, the dial just times out. If the fleet uses a swarm key, check that this node's key matches the other nodes' key.`
        : 'Check the bootstrap addresses (including /p2p/<peer id>), that those peers are running, and firewalls. If the fleet uses a private network (swarm key), this node needs the same key.';
    const tried =
      this.#dialPeers.size === 0
        ? `has no bootstrap peer to dial (neither --bootstrap nor --bootstrap-dns gave one) and no peer connected to it within ${seconds}s`
        : `could not connect to any of ${this.#dialPeers.size} bootstrap peer(s) within ${seconds}s and no other peer is connected`;
    return (
      `gossip (fleet ${this.#config.fleet}): ${tried}, so this node neither sends nor receives fleet state. ${hint}` +
      (errors !== '' ? ` Last dial errors: ${errors}` : '')
    );
  }
}
