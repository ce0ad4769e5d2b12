/**
 * Coalesced states over TCP (shared coalesce.ts, gossip/batch.ts): an agent
 * hands its first hop a burst of chained digest deltas, tier moves among
 * them; the first hop composes those that share a window, and a router that
 * hears them only through its batches ends with the digest (the view's
 * holders, each hash's tier, the chain's seq) of a view that applied every
 * state, having applied fewer states and pulled no snapshot.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createGossipNode, generateIdentity, handoffAgentOf, type GossipNode } from '@warmpath/shared/gossip';
import { mulberry32 } from '@warmpath/shared/runtime';
import { decodeState, encodeState, type ReplicaState } from '@warmpath/shared/wire';
import { waitFor } from '@warmpath/testkit';
import type { FleetView } from '../src/fleet/view.ts';
import { makeState, makeView } from './helpers.ts';

const FLEET = 'coalesce';
const HASHES = 16;
const hashOf = (i: number): bigint => (BigInt(i + 1) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
const pick = (rand: () => number, share: number): bigint[] =>
  Array.from({ length: HASHES }, (_, i) => i).flatMap((i) => (rand() < share ? [hashOf(i)] : []));

/** Each hash's standing in `view`'s digest of `replica`: 0 absent, 1 on the GPU, 2 in host memory only. */
function standings(view: FleetView, replica: string): number[] {
  const r = view.replicas.get(replica)!;
  return Array.from({ length: HASHES }, (_, i) => {
    if (!view.holds(r, hashOf(i))) return 0;
    const chain = BigUint64Array.of(hashOf(i));
    view.scanWarmth(chain);
    return view.depthOf(r.slot, chain) === 1 ? 1 : 2;
  });
}

describe('coalesced states over TCP', () => {
  const nodes: GossipNode[] = [];
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  });

  it("a router hearing an agent's states through its first hop's batches ends with the digest of one that applied them all", async () => {
    const views = [
      makeView([], { fleet: FLEET, agentNetworks: ['127.0.0.0/8'] }),
      makeView([], { fleet: FLEET, agentNetworks: ['127.0.0.0/8'] }),
    ];
    for (const view of views) {
      const node = await createGossipNode({
        fleet: FLEET,
        insecureNoSwarmKey: true,
        onWarning: null,
        timing: { heartbeatIntervalMs: 100 },
        batchWindowMs: 300,
        batchReadsPerS: 0,
        ...(nodes.length > 0 ? { bootstrap: [nodes[0]!.multiaddrs()[0]!] } : {}),
      });
      node.setValidator((bytes, origin) => view.judge(bytes, origin));
      node.onMessage((bytes, _from, origin) => void view.applyBytes(bytes, origin));
      await node.start();
      nodes.push(node);
    }
    const [hop, far] = nodes as [GossipNode, GossipNode];
    const [, farView] = views as [FleetView, FleetView];
    await waitFor(() => hop.meshPeers().length >= 1 && far.meshPeers().length >= 1, {
      timeoutMs: 10_000,
      message: 'the two routers linked',
    });
    const agent = handoffAgentOf(await generateIdentity());
    const reference = makeView([], { fleet: FLEET, agentNetworks: ['127.0.0.0/8'] });
    const rand = mulberry32(46);
    const bootAt = Date.now() - 60_000;
    // The agent's digest as the receivers model it: held hashes, some only in host memory.
    const held = new Set<bigint>();
    const host = new Set<bigint>();
    const stateOf = (seq: number): ReplicaState => {
      const first = seq === 1;
      // Moves an agent makes of what it holds: evictions, new chunks, reloads, offloads.
      const removed = first ? [] : pick(rand, 0.15).filter((h) => held.has(h));
      const added = pick(rand, first ? 0.5 : 0.25).filter((h) => !held.has(h));
      const gpu = first ? [] : [...host].filter(() => rand() < 0.4);
      const toHost = first ? [] : [...held].filter((h) => !host.has(h) && rand() < 0.3);
      for (const h of removed) (held.delete(h), host.delete(h));
      for (const h of added) (held.add(h), host.delete(h));
      for (const h of gpu) host.delete(h);
      for (const h of toHost) if (held.has(h)) host.add(h);
      return makeState('r', {
        fleet: FLEET,
        boot: 'b',
        bootAt,
        seq,
        sentAt: Date.now(),
        url: 'http://127.0.0.1:20001', // on agentNetworks: a hand-off here has no connection to check it against
        admin: '', // a pull would fail: none may be needed
        ...(seq > 2 ? { staticSeq: 2 } : {}),
        digest: {
          from: first ? -1 : seq - 1,
          size: held.size,
          added: BigUint64Array.from(added),
          removed: BigUint64Array.from(removed),
          ...(gpu.length > 0 ? { gpu: BigUint64Array.from(gpu) } : {}),
          ...(toHost.length > 0 ? { host: BigUint64Array.from(toHost) } : {}),
        },
      });
    };
    const handOff = (seq: number): void => {
      const bytes = encodeState(stateOf(seq));
      expect(hop.handOff(agent, undefined, bytes)).toBe(true);
      const s = decodeState(bytes, (id) => reference.replicas.get(id)?.state);
      expect(s.ok && reference.apply(s.value)).toBe(true);
    };
    const BURST = 5;
    const LAST = 1 + 8 * BURST;
    handOff(1);
    let hostSeen = 0;
    // Bursts of states back to back: each burst's states share a window or two; compared after each.
    for (let seq = 1; seq < LAST;) {
      const end = seq + BURST;
      for (seq++; seq <= end; seq++) handOff(seq);
      seq = end;
      await waitFor(() => farView.replicas.get('r')?.state.seq === end, {
        timeoutMs: 10_000,
        message: `seq ${end} heard`,
      });
      const expected = standings(reference, 'r');
      hostSeen += expected.filter((x) => x === 2).length;
      expect(standings(farView, 'r')).toEqual(expected);
      expect(standings(views[0]!, 'r')).toEqual(expected); // the first hop applied each state itself
    }
    expect(hostSeen).toBeGreaterThan(0);
    expect(hop.stats().statesCoalesced).toBeGreaterThan(LAST / 4);
    expect(farView.applied).toBe(LAST - hop.stats().statesCoalesced);
    expect(farView.pulls).toEqual({ ok: 0, failed: 0 });
    expect(farView.digestOf(farView.replicas.get('r')!)).toMatchObject({ boot: 'b', seq: LAST, pulling: false });
  }, 30_000);
});
