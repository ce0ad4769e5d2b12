/**
 * Model groups over real libp2p TCP (shared/gossip/groups.ts,
 * fleet/served.ts): two agents of two groups publish to a router serving
 * every group only; a second router serving one group, connected to that
 * router alone, holds that group's agent (relayed on the group's topic once
 * the first router joined it) and never the other's, and says so.
 */
import { encodeState } from '@warmpath/shared/wire';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { createGossipNode, groupTopicFor, type GossipNode } from '@warmpath/shared/gossip';
import { waitFor } from '@warmpath/testkit';
import { startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';
import { chat, makeState, makeState as state, makeView, type StateOverrides } from './helpers.ts';

const FLEET = 'groups';

describe('the fleet view of a router serving some model groups', () => {
  it('drops the states of other groups (never pulling their snapshots); a group is the --group, else the one base model', async () => {
    const pulled: string[] = [];
    const view = makeView([], {
      models: ['m', 'pool-1'],
      fetchSnapshot: (r) => (pulled.push(r.id), Promise.reject(new Error('none'))),
    });
    // Every state below needs a snapshot (a digest with no base): only those of served groups get one.
    const makeState = (id: string, o: StateOverrides) => state(id, { ...o, digest: { from: -1, size: 10 } });
    expect(view.served.all).toBe(false);
    expect(view.apply(makeState('in-by-model', { models: ['m'] }))).toBe(true);
    expect(view.apply(makeState('in-by-label', { models: ['x'], group: 'pool-1' }))).toBe(true);
    expect(view.apply(makeState('out-by-model', { models: ['x'] }))).toBe(false);
    expect(view.apply(makeState('out-by-label', { models: ['m'], group: 'pool-2' }))).toBe(false);
    // Several base models and no --group: no group, held only by a router serving every group.
    expect(view.apply(makeState('several', { models: ['m', 'x'] }))).toBe(false);
    expect(view.drops.group).toBe(3);
    await waitFor(() => pulled.length >= 2, { timeoutMs: 2_000, message: 'the served replicas’ snapshots pulled' });
    await new Promise((r) => setTimeout(r, 100));
    expect(pulled.sort()).toEqual(['in-by-label', 'in-by-model']);
    expect([...view.replicas.keys()].sort()).toEqual(['in-by-label', 'in-by-model']);
    const every = makeView([], {});
    expect(every.served.all).toBe(true);
    expect(every.apply(makeState('several', { models: ['m', 'x'] }))).toBe(true);
  });
});

describe('routers that serve some model groups', () => {
  const agents: Array<{ node: GossipNode; http: FakeAgent }> = [];
  const routers: Router[] = [];
  let timer: ReturnType<typeof setInterval> | undefined;
  afterAll(async () => {
    clearInterval(timer);
    await Promise.all(routers.map((r) => r.close()));
    await Promise.all(agents.map(async (a) => (await a.node.stop(), await a.http.close())));
  });

  it('a router of one group holds only its agents, relayed by a router serving every group; that one holds both', async () => {
    const all = await startRouter({ port: 0, fleet: FLEET, insecureNoSwarmKey: true, id: 'all', log: () => {} });
    routers.push(all);
    const one = await startRouter({
      port: 0,
      fleet: FLEET,
      insecureNoSwarmKey: true,
      id: 'one',
      models: ['model-a'],
      bootstrap: [all.peerAddrs[0]!],
      log: () => {},
    });
    routers.push(one);
    for (const model of ['model-a', 'model-b']) {
      const node = await createGossipNode({
        fleet: FLEET,
        insecureNoSwarmKey: true,
        subscribe: false,
        bootstrap: [all.peerAddrs[0]!],
        onWarning: null,
      });
      await node.start();
      agents.push({ node, http: await startFakeAgent(model) });
    }
    let seq = 1;
    timer = setInterval(() => {
      seq++;
      for (const [i, model] of ['model-a', 'model-b'].entries()) {
        const state = makeState(`agent-${model}`, {
          fleet: FLEET,
          models: [model],
          url: agents[i]!.http.url,
          seq,
          sentAt: Date.now(),
          digest: { from: -1, added: new BigUint64Array(0), size: 0 },
        });
        agents[i]!.node.publish(encodeState(state), model).catch(() => {});
      }
    }, 100);
    await waitFor(() => all.view.replicas.size === 2 && one.view.replicas.size === 1, {
      timeoutMs: 20_000,
      intervalMs: 50,
      message: 'the router serving every group to hold both agents, the other its group’s',
    });
    // The router serving every group joined both groups' topics; the other holds only its own, not the fleet topic.
    await waitFor(() => all.gossip!.groups().length === 2, { timeoutMs: 5_000, message: 'both groups joined' });
    expect(all.gossip!.groups().sort()).toEqual(['model-a', 'model-b']);
    expect(one.gossip!.groups()).toEqual(['model-a']);
    expect([...one.view.replicas.keys()]).toEqual(['agent-model-a']);
    // Nothing of model-b arrived at all (not even to be dropped): it is on a topic `one` does not hold.
    const seen = one.view.applied;
    await new Promise((r) => setTimeout(r, 500));
    expect(one.view.drops.group ?? 0).toBe(0);
    expect(one.view.applied).toBeGreaterThan(seen);
    expect(groupTopicFor(FLEET, 'model-a')).toBe('warmpath/groups/group/model-a/state/1');

    // The fleet view and the status JSON say which groups each holds.
    const fleetOf = async (r: Router) => (await (await request(`${r.url}/warmpath/v1/fleet`)).body.json()) as never;
    expect(await fleetOf(all)).toMatchObject({ groups: { all: true, served: [], held: ['model-a', 'model-b'] } });
    expect(await fleetOf(one)).toMatchObject({ groups: { all: false, served: ['model-a'], held: ['model-a'] } });

    // A request for the other group's model: an OpenAI-shaped model_not_found that says where to go, once settled.
    await waitFor(() => one.view.settled(one.view.now()), { timeoutMs: 10_000, message: 'the view to settle' });
    const res = await request(`${one.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(chat('hello', { model: 'model-b' })),
    });
    const body = (await res.body.json()) as { error: { code: string; message: string; param: string } };
    expect(res.statusCode).toBe(404);
    expect(body.error).toMatchObject({ code: 'model_not_found', param: 'model' });
    expect(body.error.message).toMatch(/not served by this router.*"model-a".*--models/);
    const ok = await request(`${one.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(chat('hello', { model: 'model-a' })),
    });
    await ok.body.dump();
    expect(ok.statusCode).toBe(200);
  }, 40_000);
});
