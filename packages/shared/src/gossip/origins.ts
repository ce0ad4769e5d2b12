/**
 * Who a state is from, as this node sees it (GossipOrigin): the author, the
 * neighbour it came through, and the IPs of this node's connections to each
 * (the router's trust rules check URLs against them). Connected peers are
 * kept by id, so an author named only by its text (a batch's, relay.ts) is
 * looked up in O(1).
 */
import { CODE_IP4, CODE_IP6 } from '@multiformats/multiaddr';
import type { GossipLibp2p } from './libp2p.ts';
import type { GossipOrigin } from './types.ts';

type PeerId = ReturnType<GossipLibp2p['getPeers']>[number];

export class Origins {
  readonly #libp2p: GossipLibp2p;
  readonly #connected = new Map<string, PeerId>();

  constructor(libp2p: GossipLibp2p) {
    this.#libp2p = libp2p;
    libp2p.addEventListener('peer:connect', ({ detail }) => void this.#connected.set(detail.toString(), detail));
    libp2p.addEventListener('peer:disconnect', ({ detail }) => void this.#connected.delete(detail.toString()));
  }

  /** `viaAddresses`: the relay's, when the caller looked them up already (once for a batch's states). */
  of(author: PeerId | string, via: PeerId | string, viaAddresses?: readonly string[]): GossipOrigin {
    const peer = author.toString();
    const relay = via.toString();
    const addresses = this.addressesOf(peer);
    return {
      peer,
      via: relay,
      addresses,
      viaAddresses: relay === peer ? addresses : (viaAddresses ?? this.addressesOf(relay)),
    };
  }

  /** Remote IPs of this node's connections to `peer`; none when it is not connected. */
  addressesOf(peer: string): string[] {
    const addresses: string[] = [];
    const id = this.#connected.get(peer);
    if (id === undefined) return addresses;
    for (const conn of this.#libp2p.getConnections(id)) {
      const ip = conn.remoteAddr.getComponents().find((c) => c.code === CODE_IP4 || c.code === CODE_IP6)?.value;
      if (ip !== undefined && !addresses.includes(ip)) addresses.push(ip);
    }
    return addresses;
  }
}
