import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROFILES } from '@warmpath/sim';
import { run as bench } from '../../src/cli.ts';
import { runDes } from '../../src/des/run.ts';
import { cpuKvTokensOf, DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';
import { tierRouterSettings } from '../../src/tiers.ts';

const seed = SCENARIOS.seed!;

describe('host-memory KV tier in DES and on the bench', () => {
  it('serves prefixes the GPU evicted: the hit rate counts both tiers', async () => {
    // 30 distinct 20k-token prompts on one replica of about 460k tokens of GPU KV, then the first ten again: evicted by then.
    const prompt = (i: number) => ({
      model: DEFAULT_MODEL,
      messages: [{ role: 'user', content: `${i} `.repeat(40_000 / String(i).length) }],
      max_tokens: 1,
    });
    const plan = [
      ...Array.from({ length: 30 }, (_, i) => ({ at: i * 1_000, body: prompt(i) })),
      ...Array.from({ length: 10 }, (_, i) => ({ at: 31_000 + i * 1_000, body: prompt(i) })),
    ];
    const once = (cpuKvRatio: number) =>
      runDes({
        scenario: { ...seed, fleet: { ...seed.fleet, cpuKvRatio } },
        plan,
        policy: 'round-robin',
        replicas: 1,
        routers: 1,
        durationS: 45,
      });
    const off = await once(0);
    const on = await once(2);
    expect(off.completed).toBe(40);
    expect(on.completed).toBe(40);
    expect(off.cache_hit_rate).toBeLessThan(0.05);
    expect(on.cache_hit_rate).toBeGreaterThan(0.2);
    expect(on.ttft_ms.p99).toBeLessThanOrEqual(off.ttft_ms.p99);
    const gpu = PROFILES[seed.fleet.profile as keyof typeof PROFILES];
    expect(cpuKvTokensOf({ ...seed.fleet, cpuKvRatio: 2 })).toBe(2 * gpu.numGpuBlocks * gpu.blockSize);
    expect(cpuKvTokensOf(seed.fleet)).toBe(0);
  });

  it('parses --cpu-kv-ratio and records it in the JSON config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warmpath-tiers-'));
    try {
      const json = join(dir, 'out.json');
      const argv = ['--mode', 'des', '--scenario', 'seed', '--duration', '2', '--rate', '2', '--replicas', '2'];
      await bench([...argv, '--routers', '1', '--policies', 'round-robin', '--cpu-kv-ratio', '4', '--json', json]);
      const report = JSON.parse(readFileSync(json, 'utf8')) as { config: { cpuKvRatio: number }; results: unknown[] };
      expect(report.config.cpuKvRatio).toBe(4);
      expect(report.results).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('KV sharing in DES and on the bench', () => {
  it('an engine fetches what another replica holds instead of prefilling it', async () => {
    // One 20k-token prompt sent four times, round-robin over two replicas: without sharing the second replica
    // prefills it once; with sharing it fetches it from the first.
    const body = {
      model: DEFAULT_MODEL,
      messages: [{ role: 'user', content: 'x '.repeat(20_000) }],
      max_tokens: 1,
    };
    const plan = Array.from({ length: 4 }, (_, i) => ({ at: i * 1_000, body }));
    const once = (kvSharing: 'off' | 'peer') =>
      runDes({
        scenario: { ...seed, fleet: { ...seed.fleet, kvSharing } },
        plan,
        policy: 'round-robin',
        replicas: 2,
        routers: 1,
        durationS: 6,
      });
    const off = await once('off');
    const on = await once('peer');
    expect(on.completed).toBe(4);
    // The second replica's first request fetches instead of prefilling: the mean TTFT drops by about a quarter
    // of a 20k-token prefill. The hit rate counts each engine's own tiers (GPU and host), not what it fetched.
    expect(on.ttft_ms.mean).toBeLessThan(0.7 * off.ttft_ms.mean);
    expect(on.cache_hit_rate).toBe(off.cache_hit_rate);
  });

  it('prices a reload and a transfer from the profile, and nothing without either', () => {
    const p = PROFILES[seed.fleet.profile as keyof typeof PROFILES];
    const s = tierRouterSettings({ ...seed.fleet, cpuKvRatio: 4, kvSharing: 'peer' });
    expect(s.hostReloadCost).toBeCloseTo((p.kvBytesPerToken / p.h2dBytesPerS) * p.prefillTokensPerS, 9);
    expect(s.peerFetchCost).toBeGreaterThan(s.hostReloadCost!);
    expect(s.peerFetchCost).toBeLessThan(1);
    expect(tierRouterSettings(seed.fleet)).toEqual({});
  });

  it('records --kv-sharing in the JSON config, only when on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warmpath-tiers-'));
    try {
      const argv = ['--mode', 'des', '--scenario', 'seed', '--duration', '2', '--rate', '2', '--replicas', '2'];
      const base = [...argv, '--routers', '1', '--policies', 'round-robin'];
      const read = (f: string) => JSON.parse(readFileSync(f, 'utf8')) as { config: { kvSharing?: string } };
      await bench([...base, '--kv-sharing', 'peer', '--json', join(dir, 'on.json')]);
      await bench([...base, '--json', join(dir, 'off.json')]);
      expect(read(join(dir, 'on.json')).config.kvSharing).toBe('peer');
      expect('kvSharing' in read(join(dir, 'off.json')).config).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
