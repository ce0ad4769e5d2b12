/**
 * The GPU tier of an engine with a host-memory tier (tiers.ts): which of the
 * cache model's chunks the agent tells routers are only in host memory.
 */
import { manualClock } from '@warmpath/testkit';
import { describeRequest, type ReplicaState } from '@warmpath/shared/wire';
import { describe, expect, it } from 'vitest';
import { CacheModel } from '../src/cache-model.ts';
import { agentConfig } from '../src/config.ts';
import { AgentCore } from '../src/core.ts';
import { emptySnapshot } from '../src/engines/types.ts';
import { GpuTier } from '../src/tiers.ts';
import { testIdentity } from './identity.ts';

const chain = (base: number, n: number) => BigUint64Array.from({ length: n }, (_, i) => BigInt(base * 1000 + i + 1));

describe('GPU tier', () => {
  it('reports the chunks the GPU evicted while the pooled model holds them, and the ones reloaded', () => {
    const pooled = new CacheModel({ capacity: 12 });
    const gpu = new GpuTier(4);
    const record = (h: BigUint64Array) => {
      pooled.record(h);
      gpu.record(h);
    };
    const a = chain(1, 4);
    const b = chain(2, 4);
    record(a);
    pooled.takeDelta(1e6);
    expect(gpu.take(pooled, a)).toEqual({ promoted: new BigUint64Array(0), host: new BigUint64Array(0) });
    record(b);
    let d = gpu.take(pooled, pooled.takeDelta(1e6).added);
    expect([...d.host].sort()).toEqual([...a].sort());
    expect(d.promoted).toHaveLength(0);
    expect(gpu.hostOf(pooled.hashes()).length).toBe(4);
    record(a);
    d = gpu.take(pooled, pooled.takeDelta(1e6).added);
    expect([...d.promoted].sort()).toEqual([...a].sort());
    expect([...d.host].sort()).toEqual([...b].sort());
    // Past the pooled capacity, the oldest chunks leave both tiers: no host move for them.
    record(chain(3, 4));
    record(chain(4, 4));
    d = gpu.take(pooled, pooled.takeDelta(1e6).added);
    for (const h of d.host) expect(pooled.has(h)).toBe(true);
    expect([...d.host].some((h) => b.includes(h))).toBe(false);
  });
});

describe('agent with a host tier', () => {
  it('publishes host moves in its deltas and the host chunks in its snapshot; without the tier, neither', () => {
    for (const hostKvTokens of [2048, 0]) {
      const clock = manualClock(0);
      const sent: ReplicaState[] = [];
      const core = new AgentCore({
        // 1,024 GPU tokens: 16 chunks of 256 chars at 4 chars a token; the host tier twice that.
        config: agentConfig({ gossip: false, kvCapacityTokens: 1024, hostKvTokens }),
        identity: testIdentity(),
        engine: {
          endpoints: ['chat'],
          scrape: (done) => done(undefined, { ...emptySnapshot(), kvCapacityTokens: 1024, counters: [1] }),
          models: (done) => done(undefined, [{ id: 'm', parent: undefined }]),
        },
        clock,
        wallClock: clock.now,
        send: (_bytes, s) => void sent.push(s),
      });
      core.startMonitor();
      core.startPublishing();
      const prompts = [0, 1, 2].map((k) => `${k} `.repeat(128 * 6)); // 6 chunks each
      for (const p of prompts) {
        const info = describeRequest({ model: 'm', prompt: p, max_tokens: 1 }, 'completion');
        const a = core.admit(info);
        if ('reason' in a) throw new Error(a.reason);
        core.finish(info, a);
        clock.advance(core.config.publishIntervalMs);
      }
      const host = sent.flatMap((s) => [...(s.digest.host ?? [])]);
      const snap = core.publisher.snapshot();
      if (hostKvTokens === 0) {
        expect(host).toHaveLength(0);
        expect(snap.host).toBeUndefined();
        continue;
      }
      // 18 chunks on a 16-chunk GPU: the first prompt's two oldest (its tail, recorded first) went to host memory.
      expect(host.length).toBeGreaterThanOrEqual(2);
      expect(snap.hashes).toHaveLength(18);
      expect(snap.host).toHaveLength(2);
    }
  });
});
