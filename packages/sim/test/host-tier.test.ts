import { describe, expect, it } from 'vitest';
import {
  EngineModel,
  hostReloadMs,
  PROFILES,
  promptIdentity,
  RealTimeDriver,
  startSimServer,
  stepTimeMs,
} from '../src/index.ts';
import type { EngineOptions, SimRequest, StepResult } from '../src/index.ts';
import { metrics, postJson } from './helpers.ts';

const opts = { model: 'm', adapter: '', charsPerToken: 4, blockSize: 16 };

function req(id: string, text: string): SimRequest {
  const p = promptIdentity(text, opts);
  return { id, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens: 1 };
}

function drain(m: EngineModel, from: number): number {
  let now = from;
  while (!m.idle) {
    now = Math.max(now, m.nextWakeMs(now));
    const r = m.step(now);
    now = r.durationMs > 0 ? r.endMs : now + 0.001;
    m.checkInvariants();
  }
  return now;
}

/** Steps the model (as the DES does: to its next wake-up) until `done`, collecting the steps that ran; returns the time. */
function runUntil(m: EngineModel, from: number, done: () => boolean, steps: StepResult[] = []): number {
  let now = from;
  for (let guard = 0; guard < 10_000 && !done(); guard++) {
    now = Math.max(now, m.nextWakeMs(now));
    const r = m.step(now);
    if (r.durationMs > 0) steps.push(r);
    now = r.durationMs > 0 ? r.endMs : now;
    m.checkInvariants();
  }
  expect(done()).toBe(true);
  return now;
}

const A = 'a'.repeat(3000 * 4); // 3,000 tokens: 187 full blocks of the tiny profile's 256
const B = 'b'.repeat(3000 * 4);

/** a, then b, which evicts most of a's blocks from the GPU (into host memory with a host tier): the engine and the time after. */
function evictA(options: EngineOptions = { cpuKvTokens: 8192 }): { m: EngineModel; now: number } {
  const m = new EngineModel(PROFILES.tiny, options);
  m.submit(req('a', A), 0);
  let now = drain(m, 0);
  m.submit(req('b', B), now);
  now = drain(m, now);
  return { m, now };
}

/** evictA, then a again; returns the engine and a's second run. */
function replay(options: EngineOptions) {
  const { m, now } = evictA(options);
  const evicted = m.snapshot().evictedBlocks;
  const again = m.submit(req('a2', A), now);
  drain(m, now);
  return { m, again, evicted };
}

describe('host-memory KV tier', () => {
  it('keeps the blocks the GPU evicts and reloads them at the PCIe bandwidth, counting them as cached', () => {
    const off = replay({});
    const on = replay({ cpuKvTokens: 8192 });
    expect(on.evicted).toBeGreaterThan(100);
    // Off: a's evicted blocks are recomputed; on: the whole prefix is served, GPU part plus host part.
    expect(off.again.cachedTokens).toBeLessThan(1500);
    expect(on.again.cachedTokens).toBe(187 * 16);
    const s = on.m.snapshot();
    const gpuHit = off.again.cachedTokens;
    expect(s.prefixHitsTokens).toBe(gpuHit); // vLLM's prefix_cache_hits: the GPU tier only
    expect(s.hostHitsTokens).toBe(187 * 16 - gpuHit); // external_prefix_cache_hits: the host tier
    expect(s.hostQueriesTokens).toBe(3 * 3000);
    expect(s.hostLoadedTokens).toBe(s.hostHitsTokens);
    expect(off.m.snapshot().hostQueriesTokens).toBe(0);
    // TTFT = the reload (beside the steps; drain polls every 0.001 ms), then one step prefilling the 8 uncached tokens at the whole prompt's context.
    const p = PROFILES.tiny;
    const ttft = on.again.firstTokenMs - on.again.readyAtMs;
    expect(ttft).toBeGreaterThanOrEqual(hostReloadMs(p, s.hostHitsTokens) + stepTimeMs(p, 3000, 8, 0));
    expect(ttft).toBeLessThan(hostReloadMs(p, s.hostHitsTokens) + stepTimeMs(p, 3000, 8, 0) + 0.002);
    expect(hostReloadMs(p, 1000)).toBeCloseTo((1000 * p.kvBytesPerToken) / p.h2dBytesPerS / 1e-3, 9);
    expect(ttft).toBeLessThan(off.again.firstTokenMs - off.again.readyAtMs);
  });

  it('reloads beside the steps: a long reload delays its own request, not the running ones', () => {
    const evicted = evictA();
    const m = evicted.m;
    let now = evicted.now;
    const d = m.submit({ ...req('d', 'd'.repeat(400)), maxTokens: 60 }, now);
    now = runUntil(m, now, () => d.generated > 0);
    const a2 = m.submit(req('a2', A), now);
    const steps: StepResult[] = [];
    runUntil(m, now, () => a2.generated > 0, steps);
    const reloadMs = hostReloadMs(PROFILES.tiny, m.snapshot().hostLoadedTokens);
    expect(reloadMs).toBeGreaterThan(10);
    // No step carries the reload: every one is a few ms, the reload many times that.
    for (const r of steps) expect(r.durationMs).toBeLessThan(reloadMs / 4);
    expect(Math.max(...steps.map((r) => r.kvLoadMs))).toBe(0);
    // d kept decoding while a2 waited for its blocks, and a2 paid its reload in its own TTFT.
    const during = steps.filter((r) => r.endMs <= a2.admittedMs + reloadMs && r.emitted.includes(d));
    expect(during.length).toBeGreaterThan(5);
    expect(a2.firstTokenMs - a2.admittedMs).toBeGreaterThanOrEqual(reloadMs);
    expect(a2.cachedTokens).toBe(187 * 16);
  });

  it('an idle engine waiting on a reload still takes a request submitted meanwhile (the real-time driver)', async () => {
    const m = new EngineModel(PROFILES.tiny, { cpuKvTokens: 8192 });
    // Sim time runs at 1/20 of wall time: the reload lasts hundreds of wall ms, far above timer jitter.
    const driver = new RealTimeDriver(m, 0.05, () => {});
    const until = async (done: () => boolean): Promise<void> => {
      for (let i = 0; i < 2_000 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
      expect(done()).toBe(true);
    };
    const submit = (r: SimRequest) => {
      const s = m.submit(r, driver.now());
      driver.kick();
      return s;
    };
    try {
      submit(req('a', A));
      await until(() => m.idle);
      submit(req('b', B));
      await until(() => m.idle);
      const a2 = submit(req('a2', A));
      await until(() => a2.admitted);
      const reloadMs = hostReloadMs(PROFILES.tiny, m.snapshot().hostLoadedTokens);
      expect(a2.generated).toBe(0);
      // The engine sleeps until the reload's end with nothing else to do; c arrives and must not wait for it.
      const c = submit(req('c', 'c'.repeat(200)));
      await until(() => c.generated > 0);
      expect(c.firstTokenMs).toBeLessThan(a2.admittedMs + reloadMs);
      await until(() => a2.generated > 0);
    } finally {
      driver.stop();
    }
  });

  it('a prompt whose host blocks are being loaded for another waits for that load', () => {
    const { m, now } = evictA();
    const first = m.submit(req('a2', A), now);
    const second = m.submit(req('a3', A), now);
    drain(m, now);
    const s = m.snapshot();
    // One reload: a3 found a2's blocks on the GPU once loaded (a GPU hit, not a second copy).
    expect(s.hostLoadedTokens).toBe(s.hostHitsTokens);
    expect(second.cachedTokens).toBe(187 * 16);
    expect(second.admittedMs).toBeGreaterThanOrEqual(
      first.admittedMs + hostReloadMs(PROFILES.tiny, s.hostLoadedTokens),
    );
  });

  it('an aborted reload gives its blocks back', () => {
    const evicted = evictA();
    const m = evicted.m;
    let now = evicted.now;
    const a2 = m.submit(req('a2', A), now);
    now = runUntil(m, now, () => a2.admitted);
    expect(a2.blocks.length).toBeGreaterThan(100);
    expect(m.snapshot().kvUsedBlocks).toBe(a2.blocks.length);
    expect(m.abort('a2')).toBe(true);
    m.checkInvariants();
    expect(m.snapshot().kvUsedBlocks).toBe(0);
    expect(m.idle).toBe(true);
    // The next prompt continuing into those blocks reloads them itself.
    const a3 = m.submit(req('a3', A), now);
    drain(m, now);
    expect(a3.cachedTokens).toBe(187 * 16);
  });

  it('is an LRU of its capacity, matched only as a continuation of the GPU prefix', () => {
    const { m, evicted, again } = replay({ cpuKvTokens: 64 * 16 });
    const s = m.snapshot();
    expect(s.hostKvTotalBlocks).toBe(64);
    expect(s.hostKvCachedBlocks).toBe(64);
    // a's evicted blocks and then b's (evicted for a2) passed through; everything past 64 was dropped.
    expect(s.evictedBlocks).toBeGreaterThan(evicted);
    expect(s.hostEvictedBlocks).toBe(s.evictedBlocks - 64);
    // The host kept a's most recently evicted blocks: those right after the GPU prefix, at most 64 of them.
    expect(s.hostHitsTokens).toBeGreaterThan(0);
    expect(s.hostHitsTokens).toBeLessThanOrEqual(64 * 16);
    expect(again.cachedTokens).toBe(s.prefixHitsTokens + s.hostHitsTokens);
  });

  it('probe predicts the reload; reset clears both tiers', () => {
    const { m } = evictA();
    const a = promptIdentity(A, opts);
    const pr = m.probe(a.promptTokens, a.blockHashes);
    expect(pr.cachedTokens).toBe(187 * 16);
    expect(pr.hostCachedTokens).toBeGreaterThan(100 * 16);
    const cold = new EngineModel(PROFILES.tiny).probe(a.promptTokens, a.blockHashes);
    expect(pr.predictedTtftMs).toBeLessThan(cold.predictedTtftMs);
    expect(m.snapshot().hostKvCachedBlocks).toBeGreaterThan(100);
    m.resetPrefixCache();
    expect(m.snapshot().hostKvCachedBlocks).toBe(0);
    expect(m.probe(a.promptTokens, a.blockHashes).cachedTokens).toBe(0);
  });
});

describe('sim server with a host tier', () => {
  it('reports both tiers on /metrics and both in usage.cached_tokens', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 50, cpuKvTokens: 8192 });
    try {
      const complete = async (prompt: string): Promise<number> => {
        const r = await postJson(`${sim.url}/v1/completions`, { prompt, max_tokens: 1 });
        expect(r.status).toBe(200);
        return ((await r.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } }).usage
          .prompt_tokens_details.cached_tokens;
      };
      expect(await complete(A)).toBe(0);
      await complete(B);
      const cached = await complete(A);
      const m = await metrics(sim.url);
      const gpu = m.get('vllm:prefix_cache_hits_total')!;
      const host = m.get('vllm:external_prefix_cache_hits_total')!;
      expect(host).toBeGreaterThan(1000);
      expect(cached).toBe(gpu + host);
      expect(m.get('vllm:external_prefix_cache_queries_total')).toBe(m.get('vllm:prefix_cache_queries_total'));
      expect(m.get('vllm:cpu_kv_cache_usage_perc')).toBeGreaterThan(0);
      expect(m.get('vllm:cpu_kv_loaded_tokens_total')).toBe(host);
    } finally {
      await sim.close();
    }
  });

  it('shows no host-tier metrics when the tier is off', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 50 });
    try {
      const m = await metrics(sim.url);
      expect(m.has('vllm:prefix_cache_hits_total')).toBe(true);
      expect(m.has('vllm:external_prefix_cache_hits_total')).toBe(false);
    } finally {
      await sim.close();
    }
  });
});
