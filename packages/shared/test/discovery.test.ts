/**
 * Finding gossip peers, with real libp2p nodes on 127.0.0.1: `bootstrapDns`
 * names resolved by an injected resolver (re-resolved, a node's own record
 * skipped, a failed lookup keeping the last answer), `gossipPeers` keeping a
 * publish-only node connected to exactly k routers and re-picking when one
 * goes away, and the connection cap.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import { createGossipNode, generateSwarmKey } from '../src/gossip.ts';
import type { GossipNode, GossipOptions } from '../src/gossip.ts';

const TIMING = { heartbeatIntervalMs: 200, redialIntervalMs: 200, dialTimeoutMs: 2_000, dnsIntervalMs: 200 };
const swarmKey = generateSwarmKey();
const nodes: GossipNode[] = [];

async function start(opts: Partial<GossipOptions> = {}): Promise<GossipNode> {
  const n = await createGossipNode({ fleet: 'disc', swarmKey, onWarning: null, timing: TIMING, ...opts });
  await n.start();
  nodes.push(n);
  return n;
}
const portOf = (n: GossipNode): number => Number(/\/tcp\/(\d+)/.exec(n.multiaddrs()[0]!)![1]);
const routersOf = (n: GossipNode, routers: GossipNode[]): string[] =>
  routers.filter((r) => n.peers().includes(r.peerId)).map((r) => r.peerId);

afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.stop()));
});

describe('bootstrapDns', () => {
  it('dials every address a name resolves to, re-resolves it, skips its own record and keeps the last answer when a lookup fails', async () => {
    const a = await start();
    const b = await start();
    const answers = new Map<string, string[] | Error>([
      ['a.test', ['127.0.0.1']],
      ['b.test', []],
    ]);
    const lookups: string[] = [];
    const resolve = async (name: string): Promise<string[]> => {
      lookups.push(name);
      const answer = answers.get(name) ?? new Error(`ENOTFOUND ${name}`);
      if (answer instanceof Error) throw answer;
      return answer;
    };
    // The node's own name is in its list too, as with a headless Service over its own pods.
    const self = await start({ listen: ['/ip4/127.0.0.1/tcp/0'] });
    const port = portOf(self);
    await self.stop();
    nodes.pop();
    const c = await start({
      listen: [`/ip4/127.0.0.1/tcp/${port}`],
      resolve,
      bootstrapDns: [`a.test:${portOf(a)}`, `b.test:${portOf(b)}`, `c.test:${port}`],
    });
    answers.set('c.test', ['127.0.0.1']);
    await waitFor(() => c.peers().includes(a.peerId), { timeoutMs: 10_000, message: 'c dialed a.test' });
    expect(c.peers()).not.toContain(b.peerId);
    // b appears in DNS later: found at a re-resolution.
    answers.set('b.test', ['127.0.0.1']);
    await waitFor(() => c.peers().includes(b.peerId), {
      timeoutMs: 10_000,
      message: 'c dialed b.test after it appeared',
    });
    // The DNS server goes away: the last answer stays, and a restarted b is dialed again.
    answers.set('b.test', new Error('SERVFAIL'));
    const lookupsBefore = lookups.length;
    await waitFor(() => lookups.length > lookupsBefore + 3, { timeoutMs: 10_000, message: 'more lookups' });
    expect(c.stats().dnsFailures).toBeGreaterThan(0);
    expect(c.peers()).toContain(b.peerId);
    // Never dialed itself: no failure other than what the test caused.
    expect(c.peers()).not.toContain(c.peerId);
    expect(c.stats().dialFailures).toBe(0);
  });

  it('rejects a malformed name with a clear error', async () => {
    await expect(
      createGossipNode({ fleet: 'x', insecureNoSwarmKey: true, bootstrapDns: ['/ip4/1.2.3.4'] }),
    ).rejects.toThrow(/bootstrapDns\[0\].*not a DNS name/);
    await expect(
      createGossipNode({ fleet: 'x', insecureNoSwarmKey: true, bootstrapDns: ['host:99999'] }),
    ).rejects.toThrow(/bootstrapDns\[0\]/);
    await expect(createGossipNode({ fleet: 'x', insecureNoSwarmKey: true, gossipPeers: -1 })).rejects.toThrow(
      /gossipPeers must be an integer/,
    );
  });
});

describe('gossipPeers', () => {
  it('a publish-only node keeps exactly k of its candidate routers and re-picks when one goes away', async () => {
    const routers = await Promise.all([0, 1, 2, 3].map(() => start()));
    const agent = await start({ subscribe: false, gossipPeers: 2, bootstrap: routers.flatMap((r) => r.multiaddrs()) });
    await waitFor(() => routersOf(agent, routers).length === 2, {
      timeoutMs: 10_000,
      message: 'the agent connected to 2 routers',
    });
    // A few more ticks: still 2, never all 4.
    await new Promise((r) => setTimeout(r, 5 * TIMING.redialIntervalMs));
    const first = routersOf(agent, routers);
    expect(first).toHaveLength(2);
    const gone = routers.find((r) => r.peerId === first[0])!;
    await gone.stop();
    await waitFor(() => routersOf(agent, routers).length === 2 && !agent.peers().includes(gone.peerId), {
      timeoutMs: 10_000,
      message: 'the agent re-picked a router',
    });
    const second = routersOf(agent, routers);
    expect(second).toContain(first[1]);
    expect(second).not.toContain(gone.peerId);
  });

  it('the connection cap bounds what a node holds', async () => {
    const hub = await start({ maxConnections: 3 });
    const leaves = await Promise.all(
      [0, 1, 2, 3, 4, 5].map(() => start({ subscribe: false, bootstrap: hub.multiaddrs() })),
    );
    await waitFor(() => leaves.filter((l) => l.peers().includes(hub.peerId)).length >= 3, {
      timeoutMs: 10_000,
      message: 'three leaves connected',
    });
    await new Promise((r) => setTimeout(r, 5 * TIMING.redialIntervalMs));
    expect(hub.peers().length).toBeLessThanOrEqual(3);
    expect(hub.stats().overCapDropped).toBeGreaterThan(0);
  });
});
