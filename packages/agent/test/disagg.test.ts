/**
 * The agent's part in disaggregation (src/disagg.ts): it learns its role from
 * --role or its engine, publishes it with its zone and KV bootstrap, and a
 * decode leg (its prompt KV arrives by transfer) joins no prefill queue while
 * the cache model still records its chain.
 */
import { describe, expect, it } from 'vitest';
import { startSimServer } from '@warmpath/sim';
import { describeRequest } from '@warmpath/shared/wire';
import { startAgent } from '../src/index.ts';
import { kvBootstrapOf, receivesKv } from '../src/disagg.ts';

const body = (extra: Record<string, unknown> = {}) => ({
  model: 'm',
  messages: [{ role: 'user', content: 'a document '.repeat(200) }],
  max_tokens: 4,
  ...extra,
});

describe('agent disaggregation', () => {
  it('a decode leg is one whose KV comes by transfer, in either dialect; a prefill replica never receives', () => {
    const vllm = body({ kv_transfer_params: { do_remote_prefill: true, remote_host: '10.0.0.1', remote_port: 1 } });
    expect(receivesKv(vllm, 'decode')).toBe(true);
    expect(receivesKv(vllm, 'both')).toBe(true);
    expect(receivesKv(vllm, 'prefill')).toBe(false);
    expect(receivesKv(body({ kv_transfer_params: { do_remote_decode: true } }), 'both')).toBe(false);
    expect(receivesKv(body({ bootstrap_room: 7, bootstrap_host: 'h', bootstrap_port: 1 }), 'decode')).toBe(true);
    // SGLang's non-disaggregated mode ignores bootstrap fields.
    expect(receivesKv(body({ bootstrap_room: 7 }), 'both')).toBe(false);
    expect(receivesKv(body(), 'decode')).toBe(false);
  });

  it("the KV bootstrap address: --kv-bootstrap, else the engine's host with SGLang's port or the engine's own", () => {
    expect(kvBootstrapOf('', 'sglang', 'http://10.1.2.3:30000')).toBe('10.1.2.3:8998');
    expect(kvBootstrapOf('', 'vllm', 'http://10.1.2.3:8100')).toBe('10.1.2.3:8100');
    expect(kvBootstrapOf('p0:9000', 'sglang', 'http://10.1.2.3:30000')).toBe('p0:9000');
  });

  it('learns its role from the simulator, publishes role, zone and bootstrap; a decode leg adds no prefill work', async () => {
    const sim = await startSimServer({ port: 0, role: 'decode', model: 'm' });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false, zone: 'rack-1', scrapeIntervalMs: 50 });
    try {
      const s = agent.publisher.publishNow();
      expect(s).toMatchObject({ role: 'decode', zone: 'rack-1' });
      expect(s.kvBootstrap).toBeUndefined(); // only a prefill replica publishes one
      const info = describeRequest(body(), 'chat');
      const leg = agent.core.admit(info, undefined, undefined, true);
      const other = describeRequest(body({ messages: [{ role: 'user', content: 'another '.repeat(200) }] }), 'chat');
      const plain = agent.core.admit(other);
      expect('reason' in leg || 'reason' in plain).toBe(false);
      const l = agent.core.ledger;
      // Only the plain request's prompt waits for prefill here.
      expect(l.pendingPrefillTokens).toBe(other.promptTokens);
      expect(agent.core.ledger.cache.predict(info.hashes)).toBe(info.hashes.length);
    } finally {
      await agent.close();
      await sim.close();
    }
  });

  it('--role overrides the engine; a prefill replica publishes its KV bootstrap', async () => {
    const sim = await startSimServer({ port: 0, model: 'm' });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false, role: 'prefill' });
    try {
      const s = agent.publisher.publishNow();
      expect(s.role).toBe('prefill');
      expect(s.kvBootstrap).toBe(`127.0.0.1:${sim.port}`);
    } finally {
      await agent.close();
      await sim.close();
    }
  });

  it('an aggregated replica publishes no role at all (its messages are as before)', async () => {
    const sim = await startSimServer({ port: 0, model: 'm' });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false });
    try {
      const s = agent.publisher.publishNow();
      expect('role' in s || 'zone' in s || 'kvBootstrap' in s).toBe(false);
    } finally {
      await agent.close();
      await sim.close();
    }
  });
});
