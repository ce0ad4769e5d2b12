/**
 * Three routers' fleet shares over real libp2p gossip (TCP, swarm key): each
 * hears the other two's usage on the `routers` channel (B and C only through
 * A), garbage and a message forged in another router's name are rejected by
 * the channel's validator, a bye makes the others forget its router at once,
 * and the fleet topic never sees the channel's messages. The routers relay
 * through the mesh (relay 'mesh'): flooding routers link to every router and
 * relay nothing (shared test/gossip-flood.test.ts).
 */
import { Packr } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGossipNode, generateSwarmKey, type GossipNode } from '@warmpath/shared/gossip';
import { waitFor } from '@warmpath/testkit';
import { UsageShare, type TenantUsage } from '../src/tenants/share.ts';
import { linkShare, SHARE_CHANNEL, type ShareLink } from '../src/tenants/share-link.ts';

const TIMING = { heartbeatIntervalMs: 200, redialIntervalMs: 200, dialTimeoutMs: 1_000 };
const WAIT = { timeoutMs: 15_000, intervalMs: 50 };

interface Peer {
  node: GossipNode;
  share: UsageShare;
  link: ShareLink;
  usage: Map<string, TenantUsage>;
}

describe('fleet share over libp2p', () => {
  const swarmKey = generateSwarmKey();
  const peers: Peer[] = [];
  const stateTopic: Uint8Array[] = [];

  async function peer(bootstrap: string[], tokens: number): Promise<Peer> {
    const node = await createGossipNode({
      fleet: 'share',
      swarmKey,
      bootstrap,
      onWarning: null,
      timing: TIMING,
      channels: [SHARE_CHANNEL],
      relay: 'mesh', // B and C reach each other only through A's relay: no flooding router relays
    });
    await node.start();
    node.onMessage((data) => void stateTopic.push(data));
    const usage = new Map([['search', { requests: tokens / 100, tokens }]]);
    const share = new UsageShare({ id: node.peerId, local: () => usage, limited: (t) => t === 'search' });
    const p = { node, share, link: linkShare(node.channel(SHARE_CHANNEL), share, Date.now, 50), usage };
    peers.push(p);
    return p;
  }

  beforeAll(async () => {
    const a = await peer([], 1_000);
    await peer(a.node.multiaddrs(), 2_000);
    await peer(a.node.multiaddrs(), 4_000);
  });

  afterAll(async () => {
    await Promise.all(peers.map(async (p) => p.node.stop()));
  });

  it("each router hears the other two's usage, B and C through A", async () => {
    const [a, b, c] = peers as [Peer, Peer, Peer];
    await waitFor(
      () =>
        a.share.others('search', Date.now()).tokens >= 6_000 &&
        b.share.others('search', Date.now()).tokens >= 5_000 &&
        c.share.others('search', Date.now()).tokens >= 3_000,
      { ...WAIT, message: 'every router to hear the other two' },
    );
    // Steady usage: no growth to extrapolate, so exactly the others' sums.
    expect(a.share.others('search', Date.now())).toEqual({ requests: 60, tokens: 6_000 });
    expect(b.share.others('search', Date.now())).toEqual({ requests: 50, tokens: 5_000 });
    expect(c.share.others('search', Date.now())).toEqual({ requests: 30, tokens: 3_000 });
    expect(a.share.limitFactor(Date.now())).toBe(1);
    expect(a.share.stats.garbage).toBe(0);
    expect(stateTopic).toHaveLength(0);
  });

  it('rejects garbage and a message forged in another router’s name before it is delivered', async () => {
    const [a, b, c] = peers as [Peer, Peer, Peer];
    const packr = new Packr({ useRecords: false, moreTypes: false });
    const before = a.node.stats().rejected;
    const channel = c.node.channel(SHARE_CHANNEL);
    await channel.publish(new Uint8Array([1, 2, 3]));
    // Signed by C, naming B, claiming B admitted a million tokens.
    await channel.publish(packr.pack({ v: 1, r: b.node.peerId, e: Date.now() + 1e9, s: 1, u: ['search', 1, 1e6] }));
    await waitFor(() => a.node.stats().rejected >= before + 2, { ...WAIT, message: 'A to reject both' });
    // Rejected before delivery, and not relayed: neither share ever saw them.
    await new Promise((r) => setTimeout(r, 200));
    expect(a.share.others('search', Date.now()).tokens).toBe(6_000);
    expect(b.share.others('search', Date.now()).tokens).toBe(5_000);
    expect(a.share.stats.garbage + b.share.stats.garbage).toBe(0);
  });

  it('a router that stops says bye: the others forget it at once', async () => {
    const [a, b, c] = peers as [Peer, Peer, Peer];
    await c.link.stop();
    await waitFor(() => a.share.routers(Date.now()).known === 1 && b.share.routers(Date.now()).known === 1, {
      ...WAIT,
      message: 'A and B to forget C on its bye',
    });
    expect(a.share.others('search', Date.now()).tokens).toBe(2_000);
    expect(a.share.limitFactor(Date.now())).toBe(1);
  });
});
