/**
 * The launcher from real processes: a one-replica fleet whose router sees its
 * replica, one more router added later (connected to the agent and to the
 * first router), and stop() leaving no process behind;
 * a process that cannot start fails the launch with its name and output.
 */
import { describe, expect, it } from 'vitest';
import { launchFleet, readyReplicas } from '../src/index.ts';

describe('launchFleet', () => {
  it('starts a simulator, its agent and a router joined by gossip, adds a router, and stops them all', async () => {
    const fleet = await launchFleet({ replicas: 1, routers: 1, profile: 'tiny' });
    try {
      expect(fleet.swarmKeyFile).toBeDefined();
      expect(fleet.bootstrap).toHaveLength(1);
      await fleet.waitConverged(30_000);
      expect(await readyReplicas(fleet.routerUrls[0]!)).toBe(1);
      await fleet.addRouter('round-robin');
      expect(fleet.routerUrls).toHaveLength(2);
      await fleet.waitConverged(30_000);
      // The new router dialled the first as well as the agent: the routers have a mesh of their own.
      const routers = async (url: string) =>
        (
          (await (await fetch(`${url}/warmpath/v1/status.json`)).json()) as {
            routers: { connectedPeers: number; batchWindowMs: number };
          }
        ).routers;
      const peers = async (url: string) => (await routers(url)).connectedPeers;
      for (let i = 0; (await peers(fleet.routerUrls[0]!)) < 2; i++) {
        if (i > 100) throw new Error('the first router never connected to the second');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await peers(fleet.routerUrls[1]!)).toBe(2);
      // Two routers: the window stays the configured 50 ms (it widens only with many).
      expect((await routers(fleet.routerUrls[1]!)).batchWindowMs).toBe(50);
    } finally {
      await fleet.stop();
    }
    for (const p of [...fleet.sims, ...fleet.agents, ...fleet.routers])
      expect(p.child.exitCode !== null || p.child.signalCode !== null, p.name).toBe(true);
    expect(fleet.routerUrls).toEqual([]);
  }, 120_000);

  it('with KV sharing, tells each simulator the others as its KV peers', async () => {
    const fleet = await launchFleet({ replicas: 2, routers: 0, profile: 'tiny', kvSharing: true });
    try {
      const urls = fleet.sims.map((s) => s.info.url!);
      const peersOf = async (u: string) =>
        ((await (await fetch(`${u}/sim/v1/kv-peers`)).json()) as { peers: string[] }).peers;
      expect(await peersOf(urls[0]!)).toEqual([urls[1]]);
      expect(await peersOf(urls[1]!)).toEqual([urls[0]]);
    } finally {
      await fleet.stop();
    }
  }, 120_000);

  it('fails with the process name and its output when a simulator cannot start', async () => {
    await expect(launchFleet({ replicas: 1, routers: 1, profile: 'no-such-profile' })).rejects.toThrow(/sim-0/);
  }, 60_000);
});
