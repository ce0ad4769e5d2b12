import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeSnapshot } from '@warmpath/shared/wire';
import { startSimServer } from '@warmpath/sim';
import type { SimServer } from '@warmpath/sim';
import { startAgent } from '../src/index.ts';
import type { Agent } from '../src/index.ts';
import { chatBody, post, subscribe, SWARM_KEY_FILE, until } from './helpers.ts';
import type { Subscriber } from './helpers.ts';

describe('agent state over gossip', () => {
  let sim: SimServer;
  let agent: Agent;
  let sub: Subscriber;
  beforeAll(async () => {
    sim = await startSimServer({ port: 0, profile: 'tiny', speed: 1 });
    agent = await startAgent({
      engineUrl: sim.url,
      fleet: 'gossip-test',
      swarmKey: SWARM_KEY_FILE,
      cacheCapacityChunks: 24,
      publishIntervalMs: 100,
    });
    sub = await subscribe('gossip-test', agent.peerAddrs);
  });
  afterAll(async () => {
    await sub?.close();
    await agent?.close();
    await sim?.close();
  });

  it('publishes ready state that reaches a subscriber within a second of a change', async () => {
    // Nothing evicted yet: no eviction age (0 would read as "evicts at once").
    expect(await (await fetch(`${agent.adminUrl}/metrics`)).text()).not.toContain(
      'warmpath_agent_cache_eviction_age_seconds',
    );
    const first = await sub.waitFor('first state', (s) => s.replica === agent.replica);
    expect(first.status).toBe('ready');
    expect(first.url).toBe(agent.url);
    expect(first.admin).toBe(agent.adminUrl);
    expect(first.models).toEqual([sim.modelName]);
    expect(first.capacity.kvTokens).toBe(4096);
    expect(first.chunkChars).toBe(256);
    // A change (a request in flight) is on the wire within a second.
    const t0 = Date.now();
    const req = post(
      `${agent.url}/v1/chat/completions`,
      chatBody(sim.modelName, 'a'.repeat(1200), 'go', { max_tokens: 300, stream: true }),
    );
    const seen = await sub.waitFor('in-flight load', (s) => s.load.inflight > 0 && s.sentAt >= t0, 1000);
    expect(seen.receivedAt - t0).toBeLessThan(1000);
    expect((await req).status).toBe(200);
    await sub.waitFor('idle again', (s) => s.load.inflight === 0 && s.sentAt > seen.sentAt);
  });

  it('deltas rebuild exactly the set the snapshot holds (with evictions)', async () => {
    for (let i = 0; i < 30; i++) {
      const r = await post(`${agent.url}/v1/completions`, {
        model: sim.modelName,
        prompt: `${i}:`.padEnd(256 * (1 + (i % 4)) + 10, String.fromCharCode(97 + (i % 26))),
        max_tokens: 2,
      });
      expect(r.status).toBe(200);
    }
    expect(agent.core.ledger.cache.stats.evictions).toBeGreaterThan(0);
    // The evicted chunks had gone unused for less than this test has run, and /metrics says so after the next publish.
    const age = agent.core.ledger.cache.evictionAgeMs;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(60_000);
    await until('eviction age on /metrics', async () =>
      (await (await fetch(`${agent.adminUrl}/metrics`)).text()).includes('warmpath_agent_cache_eviction_age_seconds '),
    );
    // Quiet: wait until the subscriber has applied a message at or after the last change.
    const seq = agent.publisher.seq;
    await until('mirror caught up', () => sub.mirrorSeq > seq);
    const res = await fetch(`${agent.adminUrl}/warmpath/v1/digest`);
    const snap = decodeSnapshot(new Uint8Array(await res.arrayBuffer()));
    expect(snap.ok).toBe(true);
    if (!snap.ok) return;
    expect(snap.value.seq).toBeGreaterThanOrEqual(sub.mirrorSeq);
    expect([...sub.mirror].sort()).toEqual([...snap.value.hashes].sort());
    expect(sub.mirror.size).toBe(agent.core.ledger.cache.size);
    const deltaMessages = sub.states.filter(
      (s) => s.digest.from >= 0 && (s.digest.added.length > 0 || s.digest.removed.length > 0),
    );
    expect(deltaMessages.length).toBeGreaterThan(0);
  });
});
