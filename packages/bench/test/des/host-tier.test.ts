import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROFILES } from '@warmpath/sim';
import { run as bench } from '../../src/cli.ts';
import { runDes } from '../../src/des/run.ts';
import { cpuKvTokensOf, DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

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
