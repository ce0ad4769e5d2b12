/** The router learns the fleet over real libp2p gossip and routes on it. */
import { encodeState } from '@warmpath/shared/wire';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGossipNode, generateSwarmKey, type GossipNode } from '@warmpath/shared/gossip';
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
});
