/**
 * The router mesh with real libp2p nodes on 127.0.0.1: 60 agents and 8
 * routers in this process (bench/lib/mesh-fleet.ts), each agent publishing its
 * replica's state to 2 routers only (gossipPeers, picked from all 8). Every
 * router's fleet view holds every replica, most of them relayed by other
 * routers and accepted under the relayed-state rule (the relay is on this
 * machine, so loopback URLs); a router whose direct agent links are cut keeps
 * receiving those agents' state through the other routers' batches (flooded
 * to every router: the default relay). With relay 'mesh' the routers' mesh is
 * one part, each router in it by at least two links. Bounds are generous:
 * the whole fleet shares this process's event loop on a loaded host.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import type { GossipOrigin } from '@warmpath/shared/gossip';
import { MeshFleet, type MeshRouter } from '../bench/lib/mesh-fleet.ts';

const ROUTERS = 8;
const AGENTS = 60;
const PUBLISH_MS = 1_000;
/** Production heartbeat; slow dials and stream set-up are not cut short on a loaded host. */
const TIMING = { heartbeatIntervalMs: 700, redialIntervalMs: 1_000, dialTimeoutMs: 10_000, silentPeerGraceMs: 15_000 };
/** Generous: start-up of 68 nodes plus mesh formation on a loaded 2-core host takes a few seconds. */
const CONVERGE_MS = 40_000;

const live = (r: MeshRouter): number => [...r.view.replicas.values()].filter((x) => x.live).length;

describe(`a router mesh: ${AGENTS} agents × ${ROUTERS} routers, each agent linked to 2 routers`, () => {
  let fleet: MeshFleet;
  let stopPublishing: (() => void) | undefined;
  /** Origins of what router-0 applied, by replica: the latest. */
  const origins = new Map<string, GossipOrigin>();

  beforeAll(async () => {
    fleet = await MeshFleet.start({
      routers: ROUTERS,
      agents: AGENTS,
      agentPeers: 2,
      timing: TIMING,
      onDelivery: (router, state, origin) => {
        if (router.name === 'router-0') origins.set(state.replica, origin);
      },
    });
    stopPublishing = fleet.startPublishing(PUBLISH_MS);
  }, 60_000);

  afterAll(async () => {
    stopPublishing?.();
    await fleet?.stop();
  });

  it(
    'every router sees every replica; an agent holds 2 router links, a router its router peers plus the agents that picked it',
    async () => {
      await waitFor(() => fleet.routers.every((r) => live(r) === AGENTS), {
        timeoutMs: CONVERGE_MS,
        intervalMs: 100,
        message: 'every router to see every replica',
      });
      for (const a of fleet.agents) {
        expect(fleet.linksOf(a), a.name).toHaveLength(2);
        expect(a.node.peers(), a.name).toHaveLength(2);
      }
      const c = fleet.connections();
      expect(c.routerToAgent.reduce((x, y) => x + y, 0)).toBe(2 * AGENTS);
      for (const n of c.routerToRouter) expect(n).toBe(ROUTERS - 1);
      // No router is dialed by every agent: each holds well under all 60.
      for (const n of c.routerToAgent) expect(n).toBeLessThan(AGENTS / 2);
      // Most of what each router holds came through the mesh, and nothing was refused as relayed.
      for (const r of fleet.routers) {
        const direct = new Set(r.node.peers());
        expect(fleet.agents.filter((a) => !direct.has(a.node.peerId)).length, r.name).toBeGreaterThan(AGENTS / 2);
        expect(r.view.drops.relayed ?? 0, r.name).toBe(0);
      }
      // The author of a relayed state is the agent that signed it, not the relay.
      // (A copy from a relay can also beat the author's own copy to a router it is linked to.)
      const relayed = [...origins.entries()].filter(([, o]) => o.via !== o.peer);
      expect(relayed.filter(([, o]) => o.addresses.length === 0).length).toBeGreaterThan(0);
      for (const [replica, o] of relayed) {
        expect(o.peer).toBe(fleet.agents.find((a) => a.name === replica)!.node.peerId);
        expect(fleet.routers.map((r) => r.node.peerId)).toContain(o.via);
      }
    },
    CONVERGE_MS + 10_000,
  );

  it('flooding, every router sends its batches to all the others (its relay peers) and is in no gossipsub mesh', () => {
    for (const r of fleet.routers) {
      expect(r.node.meshPeers().sort(), r.name).toEqual(
        fleet.routers
          .filter((o) => o !== r)
          .map((o) => o.node.peerId)
          .sort(),
      );
      expect(r.node.stats().batchesPublished + r.node.stats().batchesReceived, r.name).toBeGreaterThan(0);
    }
  });

  it("a router whose direct agent links are cut keeps receiving those agents' state through the mesh", async () => {
    const r0 = fleet.routers[0]!;
    const direct = fleet.agents.filter((a) => fleet.linksOf(a).includes(r0));
    expect(direct.length).toBeGreaterThan(0);
    // Router-0 hangs up on them: each picks another of its 8 candidates, ranking the one that hung up last.
    await Promise.all(direct.map((a) => r0.node.disconnect(a.node.peerId)));
    const mark = new Map(direct.map((a) => [a.name, a.seq]));
    const lagging = (): string[] =>
      direct
        .filter((a) => !((r0.view.replicas.get(a.name)?.state.seq ?? 0) > mark.get(a.name)! + 2))
        .map(
          (a) =>
            `${a.name}: seq ${r0.view.replicas.get(a.name)?.state.seq} (cut at ${mark.get(a.name)}, now ${a.seq}), links ${fleet.linksOf(a).map((r) => r.name)}`,
        );
    await waitFor(() => lagging().length === 0, {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: 'router-0 to receive newer state from every agent it lost',
    }).catch((err: unknown) => {
      throw new Error(
        `${String(err)}; lagging: ${lagging().join('; ')}; router-0 drops ${JSON.stringify(r0.view.drops)}`,
      );
    });
    // Meanwhile each of them re-picks a second router (not router-0) as its dials complete;
    // under load a dial can take seconds, and the state flows through the remaining link anyway.
    const r0Peers = new Set(r0.node.peers());
    for (const a of direct) {
      expect(r0Peers.has(a.node.peerId), a.name).toBe(false);
      expect(fleet.linksOf(a).length, a.name).toBeGreaterThanOrEqual(1);
      expect(origins.get(a.name)?.via, a.name).not.toBe(a.node.peerId);
      expect(r0.view.trust.ownerOf(a.name)).toBe(a.node.peerId);
    }
    expect(live(r0)).toBe(AGENTS);
  }, 45_000);
});

describe(`relay 'mesh': ${ROUTERS} routers`, () => {
  let fleet: MeshFleet | undefined;
  afterAll(async () => {
    await fleet?.stop();
  });

  it("the routers' mesh is one part, and no router holds it by fewer than Dlo = 2 links (MESH_D_LO)", async () => {
    fleet = await MeshFleet.start({ routers: ROUTERS, agents: 0, timing: TIMING, relay: 'mesh' });
    await waitFor(() => fleet!.routers.every((r) => r.node.meshPeers().length >= 2), {
      timeoutMs: CONVERGE_MS,
      message: 'every router meshed',
    });
    // Sampled every heartbeat over four: with Dlo 1 a router may hang by one link and the mesh fall into parts.
    const s = await fleet.sampleMesh(4 * TIMING.heartbeatIntervalMs, TIMING.heartbeatIntervalMs);
    expect(s.most).toBe(1);
    expect(s.minDegree).toBeGreaterThanOrEqual(2);
    expect(s.maxDegree).toBeLessThan(ROUTERS - 1); // Dhi 3: a mesh, not every link
  }, 60_000);
});
