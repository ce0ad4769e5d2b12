import { describe, expect, it } from 'vitest';
import { startSimServer } from '@warmpath/sim';
import { admit } from '../src/admission.ts';
import { startAgent } from '../src/index.ts';
import { chatBody, metricValue, post } from './helpers.ts';

const limits = { maxWaiting: 4, maxInflight: 0, kvHighWatermark: 0.9 };
const base = {
  running: 2,
  waiting: 0,
  kvUsedTokens: 0,
  kvCapacityTokens: 1000,
  inflight: 2,
  sinceCount: 0,
  sinceNeed: 0,
  meanNeed: 100,
  need: 100,
};

describe('admit (pure)', () => {
  it('admits with headroom, rejects kv over the watermark', () => {
    expect(admit(base, limits)).toBeUndefined();
    expect(admit({ ...base, kvUsedTokens: 700, sinceNeed: 150 }, limits)).toBe('kv');
    expect(admit({ ...base, kvUsedTokens: 500, waiting: 1, meanNeed: 400 }, limits)).toBe('kv');
  });
  it("a scrape taken early in the running requests' decode does not free the KV they reserved", () => {
    // The engine shows 100 tokens used, but the agent's in-flight requests reserved 900 (prompts + max_tokens).
    expect(admit({ ...base, kvUsedTokens: 100, totalNeed: 900 }, limits)).toBe('kv');
    expect(admit({ ...base, kvUsedTokens: 100, totalNeed: 500 }, limits)).toBeUndefined();
  });
  it('rejects queue only when the engine already queues', () => {
    expect(admit({ ...base, sinceCount: 10 }, { ...limits, kvHighWatermark: 1 })).toBeUndefined();
    expect(admit({ ...base, waiting: 2, sinceCount: 2, meanNeed: 0 }, { ...limits, kvHighWatermark: 1 })).toBe('queue');
  });
  it('an idle engine admits anything that fits; a request larger than the cache is too_large', () => {
    expect(admit({ ...base, running: 0, inflight: 0, kvUsedTokens: 950, need: 900 }, limits)).toBeUndefined();
    expect(admit({ ...base, running: 0, need: 1001 }, limits)).toBe('too_large');
    expect(admit({ ...base, inflight: 3 }, { ...limits, maxInflight: 3 })).toBe('inflight');
  });
  it('refuses batch before standard before interactive as load rises (x-warmpath-priority)', () => {
    const at = (kvUsedTokens: number) =>
      [undefined, 0, 1, 2].map((band) =>
        admit({ ...base, kvUsedTokens, ...(band !== undefined ? { band } : {}) }, limits),
      );
    // Watermark 900 of 1000; each band fills its share of it (1, 0.9, 0.75) before it is refused.
    expect(at(500)).toEqual([undefined, undefined, undefined, undefined]);
    expect(at(650)).toEqual([undefined, undefined, undefined, 'kv']);
    expect(at(750)).toEqual([undefined, undefined, 'kv', 'kv']);
    expect(at(850)).toEqual(['kv', 'kv', 'kv', 'kv']);
    const queue = { ...limits, maxWaiting: 10, kvHighWatermark: 1 };
    const queued = (band: number) => admit({ ...base, waiting: 2, sinceCount: 6, meanNeed: 0, band }, queue);
    expect([0, 1, 2].map(queued)).toEqual([undefined, undefined, 'queue']);
    const inflight = (band: number) => admit({ ...base, inflight: 9, band }, { ...limits, maxInflight: 10 });
    expect([0, 1, 2].map(inflight)).toEqual([undefined, 'inflight', 'inflight']);
  });
  it("refuses stale only when more prefill is queued than the router's limit", () => {
    expect(admit({ ...base, pendingPrefill: 1_500 }, limits)).toBeUndefined();
    expect(admit({ ...base, pendingPrefill: 1_500, queueLimit: 1_500 }, limits)).toBeUndefined();
    expect(admit({ ...base, pendingPrefill: 1_501, queueLimit: 1_500 }, limits)).toBe('stale');
    expect(admit({ ...base, pendingPrefill: 0, queueLimit: 0 }, limits)).toBeUndefined();
  });
});

async function burst(url: string, model: string, n: number, tag: string) {
  const rs = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      post(
        `${url}/v1/chat/completions`,
        chatBody(model, `${tag}${i} `.repeat(400).slice(0, 2000), 'q', { max_tokens: 200 }),
      ),
    ),
  );
  const by: Record<string, number> = {};
  for (const r of rs) {
    const k = r.status === 200 ? 'ok' : `${r.status}:${r.headers.get('x-warmpath-reject-reason') ?? ''}`;
    by[k] = (by[k] ?? 0) + 1;
  }
  return { by, rs };
}

describe('admission control against the simulator (tiny profile)', () => {
  it('the same burst preempts on the bare engine and is refused before preemption through the agent', async () => {
    const bare = await startSimServer({ port: 0, profile: 'tiny', speed: 4 });
    const direct = await burst(bare.url, bare.modelName, 24, 'd');
    expect(direct.by.ok).toBe(24);
    expect(await metricValue(`${bare.url}/metrics`, 'vllm:num_preemptions_total')).toBeGreaterThan(0);
    await bare.close();

    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 4 });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false });
    try {
      const viaAgent = await burst(agent.url, sim.modelName, 24, 'a');
      expect(viaAgent.by.ok).toBeGreaterThan(0);
      expect((viaAgent.by['429:kv'] ?? 0) + (viaAgent.by['429:queue'] ?? 0)).toBeGreaterThan(0);
      const rejected = viaAgent.rs.find((r) => r.status === 429)!;
      expect(JSON.parse(rejected.text).error.code).toBe('admission_rejected');
      expect(rejected.headers.get('retry-after')).toBe('1');
      expect(await metricValue(`${sim.url}/metrics`, 'vllm:num_preemptions_total')).toBe(0);
      // Once the burst is done, the replica admits again.
      const after = await post(
        `${agent.url}/v1/chat/completions`,
        chatBody(sim.modelName, 'after', 'q', { max_tokens: 5 }),
      );
      expect(after.status).toBe(200);
      expect(await metricValue(`${agent.adminUrl}/metrics`, 'warmpath_agent_rejected_total')).toBe(
        viaAgent.rs.filter((r) => r.status === 429).length,
      );
    } finally {
      await agent.close();
      await sim.close();
    }
  });
});

describe('admission counts a shared prefix once', async () => {
  const { AgentLedger } = await import('../src/ledger.ts');
  const { agentConfig } = await import('../src/config.ts');
  const { createMetrics } = await import('../src/metrics.ts');
  const { emptySnapshot } = await import('../src/engines/types.ts');
  const { describeRequest } = await import('@warmpath/shared/wire');
  it('a fan-out of one long prompt needs its uncached part per call, not the whole prompt', () => {
    // 100k tokens of KV; each call: an 8k-token shared prefix + a short question + 100 output tokens.
    const core = new AgentLedger(agentConfig({ kvCapacityTokens: 100_000, maxWaiting: 0 }), createMetrics());
    core.setSnapshot({ ...emptySnapshot(), running: 1, kvUsedFraction: 0.1 }, 0);
    const shared = 'the shared conversation so far '.repeat(1_100);
    const call = (k: number) =>
      describeRequest(
        { model: 'm', messages: [{ role: 'user', content: `${shared} call ${k}` }], max_tokens: 100 },
        'chat',
      );
    const verdicts = Array.from({ length: 16 }, (_, k) => ('reason' in core.admit(call(k)) ? 'refused' : 'admitted'));
    // Counting the whole prompt per call (16 × 8k on top of 10k used) would refuse from the 11th call.
    expect(verdicts.every((v) => v === 'admitted')).toBe(true);
    // Distinct long prompts still fill the cache and are refused.
    const distinct = Array.from({ length: 16 }, (_, k) =>
      core.admit(
        describeRequest(
          { model: 'm', messages: [{ role: 'user', content: `${k} ${shared}` }], max_tokens: 100 },
          'chat',
        ),
      ),
    );
    expect(distinct.some((a) => 'reason' in a && a.reason === 'kv')).toBe(true);
  });
  it('admission off admits everything the rules would refuse (engines without Warmpath, in the benchmark)', () => {
    const shared = 'a long prompt of its own '.repeat(2_000);
    const fill = (l: InstanceType<typeof AgentLedger>) =>
      Array.from({ length: 16 }, (_, k) =>
        l.admit(
          describeRequest(
            { model: 'm', messages: [{ role: 'user', content: `${k} ${shared}` }], max_tokens: 100 },
            'chat',
          ),
        ),
      );
    const on = new AgentLedger(agentConfig({ kvCapacityTokens: 20_000 }), createMetrics());
    const off = new AgentLedger(agentConfig({ kvCapacityTokens: 20_000, admission: false }), createMetrics());
    for (const l of [on, off]) l.setSnapshot({ ...emptySnapshot(), running: 8, waiting: 100, kvUsedFraction: 0.9 }, 0);
    expect(fill(on).every((a) => 'reason' in a)).toBe(true);
    expect(fill(off).some((a) => 'reason' in a)).toBe(false);
    expect(off.inflight.size).toBe(16);
  });
  it("counts requests admitted and not yet at their first token against a router's queue limit", () => {
    const core = new AgentLedger(agentConfig({ kvCapacityTokens: 1_000_000 }), createMetrics());
    core.setSnapshot({ ...emptySnapshot(), running: 1 }, 0);
    // Each prompt ≈ 1,000 uncached tokens (4,000 characters).
    const req = (k: number) =>
      describeRequest(
        { model: 'm', messages: [{ role: 'user', content: `${k} `.padEnd(4_000, 'x') }], max_tokens: 10 },
        'chat',
      );
    const first = core.admit(req(1), 500);
    expect('reason' in first).toBe(false);
    // One prompt queued: a router that expected none (limit 500: less than one prompt) is refused; one that expected it is not.
    expect(core.admit(req(2), 500)).toEqual({ reason: 'stale' });
    const second = core.admit(req(3), 1_500);
    expect('reason' in second).toBe(false);
    // Without a limit (a request's last attempt, a client without a router) nothing changes.
    expect('reason' in core.admit(req(4))).toBe(false);
    // Once the first two have their first token, they no longer count.
    if (!('reason' in first) && !('reason' in second)) {
      core.firstByte(first.flight);
      core.firstByte(second.flight);
    }
    expect(core.pendingPrefillTokens).toBeGreaterThan(900);
    expect(core.pendingPrefillTokens).toBeLessThan(1_100);
    expect(core.admit(req(5), 500)).toEqual({ reason: 'stale' });
    expect('reason' in core.admit(req(6), 1_500)).toBe(false);
  });
  it("counts the lower bands' requests in flight and publishes them as lowerInflight (the shared reserve)", () => {
    const core = new AgentLedger(agentConfig({ kvCapacityTokens: 1_000_000 }), createMetrics());
    core.setSnapshot({ ...emptySnapshot(), running: 1 }, 0);
    const req = (k: number) =>
      describeRequest({ model: 'm', messages: [{ role: 'user', content: `request ${k}` }], max_tokens: 10 }, 'chat');
    const admitted = [undefined, 0, 1, 2].map((band, k) => core.admit(req(k), undefined, band));
    expect(admitted.every((a) => !('reason' in a))).toBe(true);
    expect(core.lowerInflight).toBe(2); // standard and batch; interactive and no band are not counted
    expect(core.load().lowerInflight).toBe(2);
    for (const a of admitted) if (!('reason' in a)) core.end(a.flight);
    expect(core.lowerInflight).toBe(0);
    expect(core.load().lowerInflight).toBeUndefined(); // absent when none: a state without bands is unchanged
  });
  it('a request whose whole prompt exceeds the cache is too_large even when mostly cached', () => {
    expect(admit({ ...base, need: 100, size: 1_001 }, limits)).toBe('too_large');
  });
});
