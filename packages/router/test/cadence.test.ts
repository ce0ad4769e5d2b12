/**
 * The full-cadence bench's synthetic agents (bench/lib/mesh-feed.ts) over
 * real libp2p TCP on 127.0.0.1: 3 routers in this process, the other two
 * linked to router-0 only (as bench/cadence.ts links its sources to the
 * router under test), 24 agents each with a peer id of its own handing
 * their states to their router through GossipNode.handOff. Router-0 applies
 * states from every source router's batches and its own agents' hand-offs,
 * holds every agent's replica, and no router refuses a state; a replica id
 * handed off under another agent's peer id is refused (the identity check
 * the synthetic agents pass is live), and a router with no other router to
 * send batches to takes none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import { createGossipNode, generateIdentity, handoffAgentOf } from '@warmpath/shared/gossip';
import { encodeState } from '@warmpath/shared/wire';
import { TRUST_REASONS } from '../src/fleet/trust.ts';
import { freePorts, MESH_FLEET, MeshFleet } from '../bench/lib/mesh-fleet.ts';
import { SyntheticFeed } from '../bench/lib/mesh-feed.ts';

const ROUTERS = 3;
const AGENTS = 24;
const HZ = 4;
const TIMING = { heartbeatIntervalMs: 700, redialIntervalMs: 1_000, dialTimeoutMs: 10_000, silentPeerGraceMs: 15_000 };
/** Generous: a loaded 2-core host. */
const WAIT_MS = 40_000;

describe(`${AGENTS} synthetic agents handing off to ${ROUTERS} routers, router-0 linked to each`, () => {
  let fleet: MeshFleet;
  let feed: SyntheticFeed;
  let stop = (): void => {};
  /** Who vouched for each state router-0 applied from a batch (a router's peer id), and how many. */
  const vouchers = new Map<string, number>();
  const own = new Set<string>();

  beforeAll(async () => {
    const addrs = (await freePorts(ROUTERS)).map((p) => `/ip4/127.0.0.1/tcp/${p}`);
    fleet = await MeshFleet.start({
      routers: ROUTERS,
      agents: 0,
      listenAddrs: addrs,
      candidates: addrs.slice(0, 1),
      timing: TIMING,
      agentNetworks: ['127.0.0.1/32'],
      digestHashes: 12,
      fullEvery: 4,
      onDelivery: (router, state, origin) => {
        if (router.name !== 'router-0') return;
        if (origin.vouchedBy === undefined) own.add(state.replica);
        else vouchers.set(origin.vouchedBy, (vouchers.get(origin.vouchedBy) ?? 0) + 1);
      },
    });
    feed = await SyntheticFeed.create(fleet, AGENTS, 0);
    // The hand-off is taken once a router has another to send batches to: the sources once linked to router-0.
    await waitFor(() => fleet.routers.every((r) => r.node.meshPeers().length > 0), {
      timeoutMs: WAIT_MS,
      message: 'every router linked to another',
    });
    stop = feed.start(HZ);
  }, 60_000);

  afterAll(async () => {
    stop();
    await fleet?.stop();
  });

  it('router-0 applies states from every source router and from its own agents; none is refused', async () => {
    const [rut, ...sources] = fleet.routers;
    await waitFor(
      () => rut!.view.replicas.size === AGENTS && sources.every((s) => (vouchers.get(s.node.peerId) ?? 0) >= 8),
      {
        timeoutMs: WAIT_MS,
        message: 'router-0 to hold every agent, with states from every source',
      },
    );
    expect(new Set(vouchers.keys())).toEqual(new Set(sources.map((s) => s.node.peerId)));
    expect(own.size).toBe(AGENTS / ROUTERS); // agents dealt in turn: every third is router-0's
    for (const r of fleet.routers) {
      for (const reason of TRUST_REASONS) expect(r.view.drops[reason] ?? 0, `${r.name} ${reason}`).toBe(0);
      expect(r.node.stats().rejected).toBe(0);
    }
    expect(feed.counts.handed).toBeGreaterThan(0);
    expect(feed.counts.notTaken).toBe(0);
  }, 60_000);

  it("a state handed off under another agent's peer id is refused: the replica id is bound to its own", async () => {
    const [rut, source] = fleet.routers;
    const impostor = handoffAgentOf(await generateIdentity());
    const state = fleet.stateOf({ name: 'agent-1', bootAt: Date.now() - 60_000, boot: 'impostor-boot', seq: 1 });
    const before = source!.view.drops.not_owner ?? 0;
    expect(source!.node.handOff(impostor, undefined, encodeState(state))).toBe(true);
    expect(source!.view.drops.not_owner ?? 0).toBe(before + 1);
    expect(source!.node.stats().rejected).toBeGreaterThan(0);
    expect(rut!.view.trust.ownerOf('agent-1')).toBe(feed.peerIds()[1]);
  });

  it('a router with no other router to send batches to takes no hand-off', async () => {
    const alone = await createGossipNode({ fleet: MESH_FLEET, swarmKey: fleet.swarmKey, onWarning: null });
    await alone.start();
    try {
      const state = encodeState(fleet.stateOf({ name: 'agent-99', bootAt: Date.now(), boot: 'alone-boot', seq: 1 }));
      expect(alone.handOff(handoffAgentOf(await generateIdentity()), undefined, state)).toBe(false);
      expect(alone.stats().handOffsReceived).toBe(0);
    } finally {
      await alone.stop();
    }
  });
});
