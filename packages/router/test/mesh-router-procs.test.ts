/**
 * The mesh bench's routers in child processes (bench/lib/mesh-routers.ts):
 * 4 routers in 2 processes and 8 agents here, over real libp2p TCP. The
 * fleet forms across processes (one mesh part, every replica on every
 * router, every agent linked), each router's snapshot and each process's
 * usage come back, delays are recorded only while asked, from each state's
 * `sentAt`, and a new agent is seen on every router. Agents under another
 * swarm key never link: convergence says so (ok false) instead of waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSwarmKey } from '@warmpath/shared/gossip';
import { MeshFleet } from '../bench/lib/mesh-fleet.ts';
import { agentStats, converge, RouterProcs } from '../bench/lib/mesh-routers.ts';

const ROUTERS = 4;
const AGENTS = 8;
const TIMING = { heartbeatIntervalMs: 700, redialIntervalMs: 1_000, dialTimeoutMs: 10_000, silentPeerGraceMs: 15_000 };
/** Generous: two processes' start-up and the mesh's forming on a loaded 2-core host. */
const FORM_MS = 60_000;

describe(`a mesh bench fleet: ${ROUTERS} routers in 2 processes, ${AGENTS} agents here`, () => {
  let routers: RouterProcs;
  let fleet: MeshFleet;
  let stop: () => void = () => {};
  const links = (f: MeshFleet) => () =>
    Promise.resolve({ peers: f.agents.map((a) => a.node.peers().length), stats: agentStats(f.agents) });

  beforeAll(async () => {
    const swarmKey = generateSwarmKey();
    routers = await RouterProcs.start(2, { routers: ROUTERS, swarmKey, options: { routerPeers: 0, timing: TIMING } });
    fleet = await MeshFleet.start({
      routers: 0,
      agents: AGENTS,
      routerAddrs: routers.addrs(),
      swarmKey,
      timing: TIMING,
    });
    stop = fleet.startPublishing(500);
  }, 90_000);

  afterAll(async () => {
    stop();
    await fleet?.stop();
    await routers?.stop();
  });

  it('forms across processes; snapshots, usage and delays come back', async () => {
    const c = await converge(routers, AGENTS, links(fleet), FORM_MS);
    expect(c).toMatchObject({ ok: true, meshParts: 1, routersMissing: 0, agentsUnlinked: 0 });
    const snap = await routers.snapshot();
    expect(snap.routers.map((r) => r.name).sort()).toEqual(['router-0', 'router-1', 'router-2', 'router-3']);
    expect(snap.usage).toHaveLength(2);
    for (const r of snap.routers) {
      expect(r.replicas).toBe(AGENTS);
      expect(r.bytes.read).toBeGreaterThan(0);
    }
    expect(await routers.delays(false)).toEqual([]); // not recording yet
    await routers.delays(true);
    await new Promise((r) => setTimeout(r, 2_000));
    const delays = await routers.delays(false);
    // About 4 states a second over 2 s, each to 4 routers; a delay is ms on one host's clock.
    expect(delays.length).toBeGreaterThan(ROUTERS * 2);
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(0);
  }, 90_000);

  it('a new agent is held by every router; one that never links is reported, not waited for', async () => {
    const agent = await fleet.addAgent(routers.addrs());
    const t0 = Date.now();
    const timer = setInterval(() => void fleet.publish(agent), 250);
    const at = await routers.holds(agent.name, 30_000).finally(() => clearInterval(timer));
    expect(at).not.toBeNull();
    expect(at!).toBeGreaterThanOrEqual(t0);
    // Another swarm key: the dials time out, no replica arrives.
    const stranger = await MeshFleet.start({ routers: 0, agents: 2, firstAgent: 100, routerAddrs: routers.addrs() });
    try {
      const c = await converge(routers, AGENTS + 1, links(stranger), 1_000);
      expect(c.ok).toBe(false);
      expect(c.agentsUnlinked).toBe(2);
      expect(await routers.holds('agent-100', 500)).toBeNull();
    } finally {
      await stranger.stop();
    }
  }, 90_000);
});
