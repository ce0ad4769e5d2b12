/**
 * Model-group topics (gossip/groups.ts): names, which topics a state goes
 * on, and over TCP, that a node serving some groups hears only theirs while
 * one serving every group joins a group's topic when a peer subscribes to it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import { createGossipNode, groupTopicFor, type GossipNode } from '../src/gossip.ts';
import { groupOfTopic, publishTopics, validateGroups } from '../src/gossip/groups.ts';
import { GossipConfigError } from '../src/gossip/types.ts';

const FLEET = 'gt';

describe('group topics', () => {
  it('a group name round-trips through its topic, a model name with slashes included; other topics have no group', () => {
    for (const g of ['llama-8b', 'meta-llama/Llama-3.1-8B-Instruct', 'pool a:1'])
      expect(groupOfTopic(FLEET, groupTopicFor(FLEET, g))).toBe(g);
    expect(groupTopicFor(FLEET, 'org/m')).toBe('warmpath/gt/group/org%2Fm/state/1');
    expect(groupOfTopic(FLEET, 'warmpath/gt/state/1')).toBeUndefined();
    expect(groupOfTopic(FLEET, 'warmpath/other/group/m/state/1')).toBeUndefined();
    expect(groupOfTopic(FLEET, 'warmpath/gt/group/%E0%A4%A/state/1')).toBeUndefined();
  });

  it('groups are a non-empty list of names, or absent for every group', () => {
    expect(validateGroups(undefined)).toBeUndefined();
    expect(validateGroups(['a', 'a', 'b'])).toEqual(['a', 'b']);
    expect(() => validateGroups([])).toThrow(GossipConfigError);
    expect(() => validateGroups(['bad\nname'])).toThrow(/not a group name/);
  });

  it('a state goes on its group topic, on the fleet topic too while a peer takes only that, on the fleet topic alone when no peer takes the group', () => {
    const fleet = 'F';
    const group = 'G';
    const subs = (map: Record<string, string[]>) => (t: string) => map[t] ?? [];
    expect(publishTopics(fleet, undefined, subs({ F: ['r1'] }))).toEqual(['F']);
    expect(publishTopics(fleet, group, subs({ F: ['r1'], G: ['r1'] }))).toEqual(['G']);
    expect(publishTopics(fleet, group, subs({ F: ['r1', 'r2'], G: ['r1'] }))).toEqual(['G', 'F']);
    expect(publishTopics(fleet, group, subs({ G: ['r3'] }))).toEqual(['G']);
    expect(publishTopics(fleet, group, subs({ F: ['r1'] }))).toEqual(['F']);
    expect(publishTopics(fleet, group, subs({}))).toEqual(['F']);
  });
});

describe('group topics over TCP', () => {
  const nodes: GossipNode[] = [];
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  });
  const start = async (o: { groups?: string[]; subscribe?: boolean; bootstrap?: string[] }): Promise<GossipNode> => {
    const node = await createGossipNode({ fleet: FLEET, insecureNoSwarmKey: true, onWarning: null, ...o });
    await node.start();
    nodes.push(node);
    return node;
  };

  it('a node of one group hears only it; a node serving every group joins the group a peer subscribes to and relays it', async () => {
    const all = await start({});
    const a = await start({ groups: ['a'], bootstrap: [all.multiaddrs()[0]!] });
    const agent = await start({ subscribe: false, bootstrap: [all.multiaddrs()[0]!] });
    expect(all.servesAll).toBe(true);
    expect(a.servesAll).toBe(false);
    expect(a.joinGroup('b')).toBe(false);
    // `a` subscribing to group a's topic makes `all` join it.
    await waitFor(() => all.groups().includes('a'), { timeoutMs: 10_000, message: 'all to join group a' });
    const heard = { all: [] as string[], a: [] as string[] };
    all.onMessage((d) => heard.all.push(new TextDecoder().decode(d)));
    a.onMessage((d) => heard.a.push(new TextDecoder().decode(d)));
    await waitFor(
      async () => {
        await agent.publish(new TextEncoder().encode(`a-${heard.a.length}`), 'a');
        await agent.publish(new TextEncoder().encode('b'), 'b');
        return heard.a.length > 0 && heard.all.some((m) => m === 'b');
      },
      { timeoutMs: 15_000, intervalMs: 200, message: 'group a relayed to a, group b heard by all' },
    );
    expect(heard.a.every((m) => m.startsWith('a-'))).toBe(true);
    expect(all.groups()).toContain('a');
  }, 30_000);
});
