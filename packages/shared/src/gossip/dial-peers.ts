/**
 * The peers a gossip node may dial, and which of them to dial now.
 *
 * Dial peers are the static `bootstrap` multiaddrs plus every address the
 * `bootstrapDns` names resolve to (all A/AAAA records, re-resolved every
 * `dnsIntervalMs`; a failed lookup keeps the previous answer). A DNS address
 * has no peer id: it is dialed as /ipX/<ip>/tcp/<port> and noise learns the
 * id. This node's own addresses, and any that turns out to be this node, are
 * never dialed.
 *
 * Picking (`toDial`), each upkeep tick:
 *  - gossipPeers = 0, or a router flooding its batches (each goes straight
 *    to every router of its group): every unconnected dial peer.
 *  - gossipPeers = k: while fewer than k fleet-topic peers are connected
 *    (dial peers this node is connected to, plus subscribers that dialed it),
 *    the unconnected dial peers with the fewest consecutive dial failures,
 *    ties broken at random. A router that goes away is replaced at the next
 *    tick; a dead address is retried only when no better one is left.
 *
 * Complexity: O(c log c) per tick for c dial peers; one lookup per name per
 * interval.
 * Trade-off: random picks spread agents over routers with no coordination
 * (a router holds agents × k / routers links on average, binomially spread)
 * and no notion of locality.
 */
import { CODE_P2P, multiaddr } from '@multiformats/multiaddr';
import type { Multiaddr } from '@multiformats/multiaddr';
import { isIP } from 'node:net';
import { errorText, floodsBatches } from './options.ts';
import type { ValidatedOptions } from './options.ts';
import type { GossipStats } from './types.ts';

export interface DialPeer {
  readonly addr: Multiaddr;
  /** The multiaddr as text, without /p2p/: the dial peer's key. */
  readonly text: string;
  /** From the address's /p2p/ component, else learned from the first successful dial. */
  peerId: string | undefined;
  dialing: boolean;
  lastError: string | undefined;
  /** Consecutive failed dials. */
  failures: number;
  /** This node's own address: never dialed. */
  self: boolean;
}

function dialPeer(addr: Multiaddr): DialPeer {
  const peerId = addr.getComponents().findLast((c) => c.code === CODE_P2P)?.value;
  const text = addr.toString().replace(/\/p2p\/[^/]+$/, '');
  return { addr, text, peerId, dialing: false, lastError: undefined, failures: 0, self: false };
}

export class DialPeers {
  readonly #config: ValidatedOptions;
  readonly #stats: GossipStats;
  readonly #static: DialPeer[];
  /** DNS dial peers by `name:port`, and all of them by text. */
  readonly #byName = new Map<string, Map<string, DialPeer>>();
  #dns = new Map<string, DialPeer>();
  /** Own listen addresses (text, without /p2p/), set once listening. */
  #own = new Set<string>();

  constructor(config: ValidatedOptions, selfId: string, stats: GossipStats) {
    this.#config = config;
    this.#stats = stats;
    this.#static = config.bootstrap.map(dialPeer).filter((c) => c.peerId !== selfId);
  }

  /** Every dial peer that is not this node. */
  all(): DialPeer[] {
    return [...this.#static, ...this.#dns.values()].filter((c) => !c.self && !this.#own.has(c.text));
  }

  /** How many dial peers there are to report in the isolation warning. */
  get size(): number {
    return this.#static.length + this.#dns.size;
  }

  /** This node's listen addresses, so its own DNS record is not dialed. */
  setOwnAddresses(addrs: readonly string[]): void {
    this.#own = new Set(addrs.map((a) => a.replace(/\/p2p\/[^/]+$/, '')));
  }

  /** Re-resolves every DNS name; keeps what it knew of addresses it sees again, and a name's last answer when its lookup fails. Never throws. */
  async refreshDns(): Promise<void> {
    await Promise.all(
      this.#config.dns.map(async ({ name, port }) => {
        const key = `${name}:${port}`;
        const known = this.#byName.get(key) ?? new Map<string, DialPeer>();
        let ips: string[];
        try {
          ips = await this.#config.resolve(name);
        } catch {
          this.#stats.dnsFailures++;
          return;
        }
        const next = new Map<string, DialPeer>();
        for (const ip of ips) {
          const family = isIP(ip);
          if (family === 0) continue;
          const text = `/ip${family}/${ip}/tcp/${port}`;
          next.set(text, known.get(text) ?? next.get(text) ?? dialPeer(multiaddr(text)));
        }
        this.#byName.set(key, next);
      }),
    );
    const merged = new Map<string, DialPeer>();
    for (const m of this.#byName.values()) for (const [text, c] of m) if (!merged.has(text)) merged.set(text, c);
    this.#dns = merged;
  }

  /** Peers to dial now (see the header); `connected` peers, `subscribers` among them. */
  toDial(connected: ReadonlySet<string>, subscribers: ReadonlySet<string>): DialPeer[] {
    const open = this.all().filter((c) => !c.dialing && (c.peerId === undefined || !connected.has(c.peerId)));
    const k = floodsBatches(this.#config) ? 0 : this.#config.gossipPeers;
    if (k === 0) return open;
    const linked = new Set<string>();
    let dialing = 0;
    for (const c of this.all()) {
      if (c.dialing) dialing++;
      else if (c.peerId !== undefined && connected.has(c.peerId)) linked.add(c.peerId);
    }
    for (const peer of subscribers) if (connected.has(peer)) linked.add(peer);
    const want = k - linked.size - dialing;
    if (want <= 0) return [];
    const ranked = open.map((c) => ({ c, r: c.failures + Math.random() * 0.5 })).sort((a, b) => a.r - b.r);
    return ranked.slice(0, want).map((x) => x.c);
  }

  /** A dial of `c` connected to `peer`. */
  dialed(c: DialPeer, peer: string, selfId: string): void {
    c.failures = 0;
    c.lastError = undefined;
    c.peerId ??= peer;
    if (peer === selfId) c.self = true;
  }

  /** A dial of `c` failed; an address of this node itself is never dialed again. */
  failed(c: DialPeer, err: unknown): void {
    c.failures++;
    c.lastError = errorText(err);
    if (/dial self/i.test(c.lastError)) c.self = true;
  }

  /** `peer` went away (or hung up on us): its dial peers rank behind the others at the next pick. */
  disconnected(peer: string): void {
    for (const c of this.all()) if (c.peerId === peer) c.failures++;
  }

  /** `text: last error` of each dial peer whose last dial failed. */
  errors(): string {
    return this.all()
      .filter((c) => c.lastError !== undefined)
      .map((c) => `${c.text}: ${c.lastError}`)
      .join('; ');
  }
}
