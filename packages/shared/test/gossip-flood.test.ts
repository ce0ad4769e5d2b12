/**
 * Flooded batches (GossipOptions.relay 'flood'; docs/GOSSIP.md, "Batches:
 * one signature for many states"), over TCP: a router sends each batch once
 * to every router, which relays none of it, so every router receives each
 * batch once; a router whose copy was lost still gets it by IHAVE/IWANT.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import type { GossipNode, GossipRpc } from '../src/gossip.ts';
import { tcpNodes } from './tcp-nodes.ts';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (b: Uint8Array): string => new TextDecoder().decode(b);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
type RpcMessage = GossipRpc['messages'][number];
/** A gossipsub message's identity on the wire: its author and seqno. */
const wireId = (m: RpcMessage): string =>
  `${Buffer.from(m.from ?? []).toString('hex')}/${Buffer.from(m.seqno ?? []).toString('hex')}`;

describe('flooded batches over TCP', () => {
  const start = tcpNodes('flood');
  /**
   * Four flooding routers, each knowing only the one before it as a
   * candidate (so their links are not all dialed by candidates), each
   * recording what it delivers and every message copy it receives; IHAVE to
   * all 3 others each heartbeat, so a repair does not hang on a random pick.
   */
  const routers = async () => {
    const rs: GossipNode[] = [];
    for (let i = 0; i < 4; i++)
      rs.push(
        await start({
          relay: 'flood',
          mesh: { Dlazy: 3 },
          bootstrap: rs.map((r) => r.multiaddrs()[0]!),
        }),
      );
    const heard = rs.map(() => [] as string[]);
    const copies = rs.map(() => new Map<string, number>());
    rs.forEach((r, i) => {
      r.onMessage((d) => heard[i]!.push(text(d)));
      r.onRpc((rpc) => {
        for (const m of rpc.messages) copies[i]!.set(wireId(m), (copies[i]!.get(wireId(m)) ?? 0) + 1);
      });
    });
    await waitFor(() => rs.every((r) => r.peers().length === 3), {
      timeoutMs: 10_000,
      message: 'every router linked to all',
    });
    return { rs, heard, copies };
  };

  /** Publishes until a state was handed off and heard everywhere: until the hand-off is offered (the first hop sees its peers' subscriptions) the agent may sign. */
  const untilHandedOff = (agent: GossipNode, heard: string[][]) =>
    waitFor(
      async () => {
        await agent.publish(bytes(`warm-${Date.now()}`));
        return agent.stats().handedOff > 0 && heard.every((h) => h.some((m) => m.startsWith('warm-')));
      },
      { timeoutMs: 15_000, intervalMs: 100, message: 'a hand-off heard everywhere' },
    );

  it('every router receives each batch once, from the router that packed it, and none relays it', async () => {
    const { rs, heard, copies } = await routers();
    const agent = await start({ subscribe: false, gossipPeers: 1, bootstrap: [rs[0]!.multiaddrs()[0]!] });
    await untilHandedOff(agent, heard);
    for (const c of copies) c.clear();
    for (let n = 0; n < 10; n++) {
      await agent.publish(bytes(`s-${n}`));
      await sleep(120); // past the window: a batch a state
    }
    await waitFor(() => heard.every((h) => h.filter((m) => m.startsWith('s-')).length === 10), {
      timeoutMs: 10_000,
      message: 'every state on every router',
    });
    await sleep(300); // any relayed copy would have come by now
    expect(rs.every((r) => r.meshPeers().length === 3)).toBe(true); // the routers it floods to, not a gossipsub mesh
    expect(rs[0]!.stats().batchesPublished).toBeGreaterThanOrEqual(10);
    expect([...copies[0]!.values()]).toEqual([]); // the packer hears its own batches from no one
    for (const c of copies.slice(1)) {
      expect(c.size).toBeGreaterThanOrEqual(10);
      expect([...c.values()].every((k) => k === 1)).toBe(true);
    }
  }, 40_000);

  it('a router whose copy of a batch was lost gets it by IHAVE and IWANT at a heartbeat', async () => {
    const { rs, heard } = await routers();
    const agent = await start({ subscribe: false, gossipPeers: 1, bootstrap: [rs[0]!.multiaddrs()[0]!] });
    await untilHandedOff(agent, heard);
    // rs[3] loses the first copy of every batch; a later copy of the same message is let through.
    const lost = new Set<string>();
    const repaired = new Set<string>();
    let ihaves = 0;
    rs[3]!.onRpc((rpc) => {
      ihaves += rpc.control?.ihave?.length ?? 0;
      rpc.messages = rpc.messages.filter((m) => {
        const id = wireId(m);
        if (lost.has(id)) return (void repaired.add(id), true);
        lost.add(id);
        return false;
      });
    });
    await agent.publish(bytes('lost-1'));
    await waitFor(() => heard.every((h) => h.includes('lost-1')), {
      timeoutMs: 10_000,
      message: 'the lost state on every router',
    });
    expect(lost.size).toBeGreaterThanOrEqual(1);
    expect(repaired.size).toBeGreaterThanOrEqual(1);
    expect(ihaves).toBeGreaterThan(0);
    expect(heard[3]!.filter((m) => m === 'lost-1')).toHaveLength(1);
  }, 40_000);

  it("a router relaying through its mesh ('mesh') forms one and relays: a router not linked to the packer still hears it", async () => {
    const a = await start({ relay: 'mesh' });
    const b = await start({ relay: 'mesh', bootstrap: [a.multiaddrs()[0]!] });
    const c = await start({ relay: 'mesh', bootstrap: [b.multiaddrs()[0]!] });
    const heard: string[] = [];
    c.onMessage((d) => heard.push(text(d)));
    await waitFor(() => b.meshPeers().length === 2, { timeoutMs: 10_000, message: 'b meshed with a and c' });
    expect(a.peers()).not.toContain(c.peerId);
    const agent = await start({ subscribe: false, gossipPeers: 1, bootstrap: [a.multiaddrs()[0]!] });
    await waitFor(
      async () => {
        await agent.publish(bytes('m'));
        return heard.includes('m') && agent.stats().handedOff > 0;
      },
      { timeoutMs: 15_000, intervalMs: 100, message: 'c to hear a state handed to a' },
    );
  }, 40_000);
});
