/**
 * Who may say what about a replica, for state that arrived over gossip. The
 * swarm key keeps strangers out; these rules bound what a peer inside it can
 * claim (docs/SECURITY.md).
 *
 * Steps per message (`check`, pure; `claimed` records it once applied):
 *  1. allowlist: with `agentPeers` set, only those peers publish state.
 *  2. clock: a bootAt or sentAt more than MAX_CLOCK_AHEAD_MS ahead of this
 *     router's clock is refused — a huge bootAt would otherwise supersede
 *     every later boot of the replica for good.
 *  3. ownership: a replica id belongs to the first peer key that claimed it;
 *     another key takes over only once the owner has been silent past the
 *     state TTL, or when it is on the allowlist.
 *  4. at most MAX_REPLICAS_PER_PEER ids per peer.
 *  5. addresses: `url` and `admin` must point where the publisher can serve:
 *     an address this router sees its connection come from; any loopback or
 *     local address when that connection is itself loopback (one machine);
 *     or a network (CIDR) or host name on `agentNetworks`. Nothing else is
 *     ever fetched or sent a prompt.
 *  6. relayed state (the author has no connection to this router; another
 *     router relayed it through the mesh; gossipsub's signature still names
 *     the author): there is no address of the author to check against, so
 *     `url` and `admin` must lie in `agentNetworks`, or be what the relaying
 *     peer could publish itself (its own address; over a loopback connection,
 *     any address of this machine). A relay thus vouches for nothing it could
 *     not claim on its own. Otherwise it is refused as `relayed`.
 *  7. batched state (a router packed it, `vouchedBy`: the agent handed it
 *     the state over its own connection, unsigned; docs/SECURITY.md): an
 *     agent's states are taken from one router at a time — the one that
 *     last vouched for it, or the agent itself when it last came direct or
 *     signed. Another router is heard only once that one has been silent
 *     for the agent past VOUCHER_SWITCH_MS, so a router inside the swarm key
 *     cannot speak for an agent another router relays (it can for its own
 *     agents, and in the gap of a failover). Else refused as `vouch`.
 *  And `spend` meters each peer's messages (a token bucket) before any of it.
 * Complexity: O(1) per message (O(networks) for the address check).
 * Trade-off: binding ids to keys means an agent restarted under a new key
 * (no identity file) is refused for up to one state TTL; a persistent
 * identity or the allowlist removes the wait.
 */
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { ReplicaState } from '@warmpath/shared/wire';

/** What this router knows of a message's author (from the gossip node). */
export interface Origin {
  /** The author's peer id. */
  readonly peer: string;
  /** The neighbour the message came from (the author, or a relay). */
  readonly via: string;
  /** Remote IPs of this router's direct connections to the author. */
  readonly addresses: readonly string[];
  /** Remote IPs of this router's connections to `via` (step 6); none when unknown. */
  readonly viaAddresses?: readonly string[];
  /** The router that packed this state in its batch (step 7); absent when signed by its author or handed to us. */
  readonly vouchedBy?: string;
}

/** Why gossip state was refused (counted in the fleet view's drops). */
export const TRUST_REASONS = [
  'not_allowed',
  'future',
  'not_owner',
  'too_many_ids',
  'foreign_url',
  'relayed',
  'rate',
  'vouch',
] as const;
export type TrustReason = (typeof TRUST_REASONS)[number];

/** A bootAt or sentAt this far ahead of the router's clock is refused, ms: clock skew between hosts, with room. */
export const MAX_CLOCK_AHEAD_MS = 60_000;
/** Replica ids one peer may hold at once: an agent publishes one; the margin is for agents serving several engines. */
export const MAX_REPLICAS_PER_PEER = 8;
/**
 * Messages a peer may publish, per second and in a burst: an agent at the
 * defaults sends at most ~104/s (one per 10 ms gap while its load keeps
 * moving, plus the 250 ms period), and far fewer in practice (docs/SCALE.md,
 * "The fix: publish on a change of about one request's work").
 */
export const PEER_MESSAGES_PER_S = 150;
export const PEER_MESSAGE_BURST = 300;
/**
 * Another router may vouch for an agent once the last one has been silent
 * for it this long, ms (step 7): two publish floors (500 ms), so a router
 * relaying a live agent is never replaced, and a failover waits at most this.
 */
export const VOUCHER_SWITCH_MS = 1_000;
/** URL and address pairs whose verdict is remembered (`#servableUrl`): a replica's URL and admin per agent link, with room. */
const SERVABLE_MEMO_SIZE = 65_536;

export interface TrustOptions {
  /** An owner silent longer than this loses its ids, ms (the view's state TTL). */
  readonly stateTtlMs: number;
  /** Agent peer ids allowed to publish (empty = any peer holding the swarm key). */
  readonly agentPeers: readonly string[];
  /** Networks (CIDR) and host names (`name`, `*.suffix`) agent URLs may point to whatever the publisher's address. */
  readonly agentNetworks: readonly string[];
}

interface Owner {
  peer: string;
  lastSeen: number;
}

export class PublisherTrust {
  readonly #ttlMs: number;
  readonly #allowed: ReadonlySet<string>;
  readonly #networks = new BlockList();
  readonly #hosts: readonly string[];
  #local: ReadonlySet<string> | undefined;
  readonly #owners = new Map<string, Owner>();
  readonly #held = new Map<string, Set<string>>();
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  /** An agent's peer id → who vouched for its last applied state (a router, or the agent itself), and when. */
  readonly #vouchers = new Map<string, { by: string; at: number }>();
  /** URL → the addresses' key (one address, or several joined) → may they name it. */
  readonly #servableMemo = new Map<string, Map<string, boolean>>();
  #memoized = 0;

  constructor(o: TrustOptions) {
    this.#ttlMs = o.stateTtlMs;
    this.#allowed = new Set(o.agentPeers);
    const hosts: string[] = [];
    for (const entry of o.agentNetworks) {
      const [net, bits] = entry.split('/');
      const family = isIP(net ?? '');
      if (family === 0) hosts.push(entry.toLowerCase());
      else if (bits === undefined) this.#networks.addAddress(net!, family === 6 ? 'ipv6' : 'ipv4');
      else this.#networks.addSubnet(net!, Number(bits), family === 6 ? 'ipv6' : 'ipv4');
    }
    this.#hosts = hosts;
  }

  /** Meters one message of `peer` (a token bucket); false = over its rate. */
  spend(peer: string, now: number): boolean {
    let b = this.#buckets.get(peer);
    if (b === undefined) this.#buckets.set(peer, (b = { tokens: PEER_MESSAGE_BURST, at: now }));
    b.tokens = Math.min(PEER_MESSAGE_BURST, b.tokens + ((now - b.at) / 1000) * PEER_MESSAGES_PER_S);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens--;
    return true;
  }

  /** May `origin` publish this state? undefined = yes, else why not. Pure. */
  check(s: ReplicaState, origin: Origin, now: number): TrustReason | undefined {
    const allowlisted = this.#allowed.has(origin.peer);
    if (this.#allowed.size > 0 && !allowlisted) return 'not_allowed';
    if (s.bootAt > now + MAX_CLOCK_AHEAD_MS || s.sentAt > now + MAX_CLOCK_AHEAD_MS) return 'future';
    const owner = this.#owners.get(s.replica);
    const owns = owner?.peer === origin.peer;
    if (owner !== undefined && !owns && now - owner.lastSeen <= this.#ttlMs && !allowlisted) return 'not_owner';
    if (!owns && (this.#held.get(origin.peer)?.size ?? 0) >= MAX_REPLICAS_PER_PEER) return 'too_many_ids';
    const voucher = origin.vouchedBy !== undefined ? this.#vouchers.get(origin.peer) : undefined;
    if (voucher !== undefined && voucher.by !== origin.vouchedBy && now - voucher.at <= VOUCHER_SWITCH_MS)
      return 'vouch';
    if (origin.addresses.length === 0) return this.#servable(s, origin.viaAddresses ?? []) ? undefined : 'relayed';
    return this.#servable(s, origin.addresses) ? undefined : 'foreign_url';
  }

  /** The state was applied: `origin` owns its replica id (from now, or still). */
  claimed(s: ReplicaState, origin: Origin, now: number): void {
    this.#vouchers.set(origin.peer, { by: origin.vouchedBy ?? origin.peer, at: now });
    const owner = this.#owners.get(s.replica);
    if (owner !== undefined && owner.peer === origin.peer) {
      owner.lastSeen = now;
      return;
    }
    if (owner !== undefined) this.#held.get(owner.peer)?.delete(s.replica);
    this.#owners.set(s.replica, { peer: origin.peer, lastSeen: now });
    let held = this.#held.get(origin.peer);
    if (held === undefined) this.#held.set(origin.peer, (held = new Set()));
    held.add(s.replica);
  }

  /** The peer that owns a replica id, if any (operators, tests). */
  ownerOf(replica: string): string | undefined {
    return this.#owners.get(replica)?.peer;
  }

  /** Periodic: drop owners silent past `forgetMs` and idle rate buckets. */
  sweep(now: number, forgetMs: number): void {
    for (const [replica, o] of this.#owners) {
      if (now - o.lastSeen <= forgetMs) continue;
      this.#owners.delete(replica);
      const held = this.#held.get(o.peer);
      held?.delete(replica);
      if (held?.size === 0) this.#held.delete(o.peer);
    }
    for (const [peer, b] of this.#buckets) if (now - b.at > forgetMs) this.#buckets.delete(peer);
    for (const [peer, v] of this.#vouchers) if (now - v.at > forgetMs) this.#vouchers.delete(peer);
  }

  /** May a peer connected from `addresses` name the state's url and admin? Steps 5 and 6 of the header. */
  #servable(s: ReplicaState, addresses: readonly string[]): boolean {
    return this.#servableUrl(s.url, addresses) && (s.admin === '' || this.#servableUrl(s.admin, addresses));
  }

  /**
   * Memoised: the verdict depends only on the URL, the addresses and this
   * router's settings, and a replica sends the same URL in every state, so
   * each pair is parsed once (the memo is dropped whole when it fills).
   */
  #servableUrl(url: string, addresses: readonly string[]): boolean {
    const key = addresses.length === 1 ? addresses[0]! : addresses.join(' ');
    let byAddress = this.#servableMemo.get(url);
    let ok = byAddress?.get(key);
    if (ok !== undefined) return ok;
    if (this.#memoized >= SERVABLE_MEMO_SIZE) {
      this.#servableMemo.clear();
      this.#memoized = 0;
      byAddress = undefined;
    }
    if (byAddress === undefined) this.#servableMemo.set(url, (byAddress = new Map()));
    byAddress.set(key, (ok = this.#servableNow(url, addresses)));
    this.#memoized++;
    return ok;
  }

  #servableNow(url: string, addresses: readonly string[]): boolean {
    let host: string;
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
      host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    } catch {
      return false;
    }
    const family = isIP(host);
    if (family === 0)
      return host === 'localhost' ? addresses.some(isLoopback) : this.#hosts.some((h) => hostMatches(host, h));
    const ip = unmapped(host);
    if (this.#networks.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4')) return true;
    if (addresses.some((a) => unmapped(a) === ip)) return true;
    // A peer connected over loopback runs on this machine: it can serve any of its addresses.
    return addresses.some(isLoopback) && (isLoopback(ip) || (this.#local ??= localAddresses()).has(ip));
  }
}

/** `::ffff:10.0.0.1` and `::ffff:a00:1` (as URLs spell it) → `10.0.0.1`: one spelling per address. */
function unmapped(ip: string): string {
  if (!ip.startsWith('::ffff:')) return ip;
  const rest = ip.slice(7);
  if (isIP(rest) === 4) return rest;
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(rest);
  if (hex === null) return ip;
  const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

function isLoopback(ip: string): boolean {
  const a = unmapped(ip);
  return a === '::1' || a.startsWith('127.');
}

/** `name` matches itself; `*.suffix` matches any name under suffix. */
function hostMatches(host: string, pattern: string): boolean {
  return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;
}

function localAddresses(): ReadonlySet<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) out.add(unmapped(i.address));
  return out;
}
