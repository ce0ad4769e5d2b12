/** The router learns the fleet over real libp2p gossip and routes on it. */
import { encodeState } from '@warmpath/shared/wire';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createGossipNode,
  generateIdentity,
  generateSwarmKey,
  handoffAgentOf,
  type GossipNode,
} from '@warmpath/shared/gossip';
import { waitFor } from '@warmpath/testkit';
import { startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';
import { chat, makeState } from './helpers.ts';

describe('router over gossip', () => {
  let publisher: GossipNode | undefined;
  let routers: Router[] = [];
  const agents: FakeAgent[] = [];
  let timer: ReturnType<typeof setInterval> | undefined;
  afterAll(async () => {
    clearInterval(timer);
    await Promise.all(routers.map((r) => r.close()));
    await publisher?.stop();
    await Promise.all(agents.map((a) => a.close()));
  });

  it('two routers on one gossip topic see the same fleet and agree on placement', async () => {
    for (let i = 0; i < 3; i++) agents.push(await startFakeAgent(`g${i}`));
    const swarmKey = generateSwarmKey();
    const keyFile = join(mkdtempSync(join(tmpdir(), 'wp-router-gossip-')), 'swarm.key');
    writeFileSync(keyFile, swarmKey);
    publisher = await createGossipNode({ fleet: 'gtest', swarmKey, onWarning: null });
    await publisher.start();
    const boot = [publisher.multiaddrs()[0]!];
    routers = await Promise.all(
      [0, 1].map((i) =>
        startRouter({ port: 0, fleet: 'gtest', swarmKey: keyFile, bootstrap: boot, id: `gr${i}`, log: () => {} }),
      ),
    );
    let seq = 1;
    const publishAll = (): void => {
      seq++;
      for (const [i, a] of agents.entries())
        publisher!
          .publish(
            encodeState(
              makeState(`g${i}`, {
                fleet: 'gtest',
                url: a.url,
                seq,
                sentAt: Date.now(),
                digest: { from: -1, added: new BigUint64Array(0), size: 0 },
              }),
            ),
          )
          .catch(() => {});
    };
    timer = setInterval(publishAll, 100);
    await waitFor(() => routers.every((r) => r.view.replicas.size >= 3), {
      timeoutMs: 15_000,
      intervalMs: 50,
      message: 'both routers to see 3 replicas',
    });
    for (const r of routers) expect(r.view.replicas.size).toBe(3);
    for (let k = 0; k < 10; k++) {
      const body = JSON.stringify(chat(`conversation ${k}`));
      const picks = await Promise.all(
        routers.map(async (r) => {
          const res = await request(`${r.url}/v1/chat/completions`, { method: 'POST', body });
          await res.body.dump();
          expect(res.statusCode).toBe(200);
          return res.headers['x-warmpath-replica'];
        }),
      );
      expect(picks[0]).toBe(picks[1]);
    }
  });

  it('counts the routers whose batches it hears, and before traffic takes itself for one of them', async () => {
    const agent = await startFakeAgent('heard');
    agents.push(agent);
    const common = { port: 0, fleet: 'heard', insecureNoSwarmKey: true, agentNetworks: ['127.0.0.0/8'], log: () => {} };
    const first = await startRouter({ ...common, id: 'heard-first' });
    routers.push(first);
    const far = await startRouter({ ...common, id: 'heard-far', bootstrap: [first.peerAddrs[0]!] });
    routers.push(far);
    await waitFor(() => first.gossip!.meshPeers().length === 1 && far.gossip!.meshPeers().length === 1, {
      timeoutMs: 15_000,
      message: 'the two routers linked',
    });
    // The agent hands its state to `first`, which packs it into its batches: `far` hears it vouched for by `first`.
    const author = handoffAgentOf(await generateIdentity());
    let seq = 0;
    const handOff = (): boolean =>
      first.gossip!.handOff(
        author,
        undefined,
        encodeState(makeState('heard-0', { fleet: 'heard', url: agent.url, seq: ++seq, sentAt: Date.now() })),
      );
    timer = setInterval(handOff, 100);
    await waitFor(() => far.view.replicas.size === 1 && first.view.replicas.size === 1, {
      timeoutMs: 15_000,
      message: 'both routers to hold the replica',
    });
    const gauge = async (r: Router, name: string): Promise<number> => {
      const text = await (await request(`${r.url}/metrics`)).body.text();
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    };
    expect(await gauge(far, 'warmpath_router_routers_heard')).toBe(1);
    expect(await gauge(first, 'warmpath_router_routers_heard')).toBe(0);
    const status = (await (await request(`${far.url}/warmpath/v1/status.json`)).body.json()) as {
      routers: { heard: number };
    };
    expect(status.routers.heard).toBe(1);
    for (const r of [first, far]) {
      const res = await request(`${r.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chat('hi')) });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
    }
    // No traffic yet to read the share from: `far` counts itself one of two, `first` hears no other router.
    expect(await gauge(far, 'warmpath_router_traffic_routers')).toBeCloseTo(2, 1);
    expect(await gauge(first, 'warmpath_router_traffic_routers')).toBe(1);
  });
});
