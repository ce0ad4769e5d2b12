/**
 * Connection upkeep and health of one gossip node, on one timer.
 *
 * Steps of each tick (every `redialIntervalMs`):
 *  1. Hang up peers that stayed silent on the fleet topic past
 *     `silentPeerGraceMs` (a gossipsub stream that failed to open is never
 *     re-opened by the library while the connection lives), so the redial
 *     below rebuilds them with fresh streams.
 *  2. Re-dial every unconnected bootstrap peer, so a restarted peer is
 *     rejoined.
 *  3. While no bootstrap peer and no other peer is connected for
 *     `isolationWarningAfterMs`, warn the operator once per episode. A wrong
 *     swarm key makes dials time out rather than fail, so this is the only
 *     signal an operator gets.
 *
 * Complexity: O(bootstrap + connections) per tick.
 *
 * Trade-off: a fixed-interval redial rejoins a restarted peer within one
 * interval, at the cost of dial attempts against peers that are really gone.
 */
import { CODE_P2P } from '@multiformats/multiaddr';
import type { Multiaddr } from '@multiformats/multiaddr';
import { GOSSIP_WARNING } from './constants.ts';
import type { GossipLibp2p } from './libp2p.ts';
import { errorText } from './options.ts';
import type { ValidatedOptions } from './options.ts';
import type { GossipStats, GossipWarning } from './types.ts';

interface BootstrapTarget {
  addr: Multiaddr;
  text: string;
  /** From the address's /p2p/ component, else learned from the first successful dial. */
  peerId: string | undefined;
  dialing: boolean;
  lastError: string | undefined;
}

function peerIdOf(addr: Multiaddr): string | undefined {
  return addr.getComponents().findLast((c) => c.code === CODE_P2P)?.value;
}

export class ConnectionUpkeep {
  readonly #libp2p: GossipLibp2p;
  readonly #config: ValidatedOptions;
  /** The node's counters; upkeep adds dial failures and silent-peer hang-ups. */
  readonly #stats: GossipStats;
  readonly #warn: (warning: GossipWarning) => void;
  readonly #bootstrap: BootstrapTarget[];
  /** Connected peer → when it connected (local clock, ms), for the silent-peer check. */
  readonly #connectedAt = new Map<string, number>();
  #running = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #stopController: AbortController | undefined;
  #isolatedSince: number | undefined;
  #isolationWarned = false;

  constructor(libp2p: GossipLibp2p, config: ValidatedOptions, stats: GossipStats, warn: (warning: GossipWarning) => void) {
    this.#libp2p = libp2p;
    this.#config = config;
    this.#stats = stats;
    this.#warn = warn;
    const self = libp2p.peerId.toString();
    this.#bootstrap = config.bootstrap
      .map((addr) => ({ addr, text: addr.toString(), peerId: peerIdOf(addr), dialing: false, lastError: undefined }))
      .filter((target) => target.peerId !== self);
  }

  peerConnected(peer: string): void {
    this.#connectedAt.set(peer, Date.now());
  }

  peerDisconnected(peer: string): void {
    this.#connectedAt.delete(peer);
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
    this.#timer = setInterval(() => this.#tick(), this.#config.timing.redialIntervalMs);
    this.#tick();
  }

  /** Stops ticking and aborts dials in flight; called before libp2p stops. */
  disarm(): void {
    this.#running = false;
    clearInterval(this.#timer);
    this.#timer = undefined;
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
    const topic = this.#config.topic;
    const deadline = Date.now() - this.#config.timing.silentPeerGraceMs;
    const subscribed = new Set(pubsub.getSubscribers(topic).map(String));
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
}
