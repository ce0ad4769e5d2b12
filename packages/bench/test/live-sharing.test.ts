/**
 * The live benchmark with KV sharing: a short run of real simulators told
 * each other's URLs, every request answered, and the setting recorded in
 * the JSON config as the DES records it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as bench } from '../src/cli.ts';

describe('live bench with --kv-sharing peer', () => {
  it('runs the fleet with KV sharing and records it in the JSON config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warmpath-live-sharing-'));
    try {
      const json = join(dir, 'live.json');
      await bench([
        ...['--mode', 'live', '--scenario', 'seed', '--duration', '3', '--rate', '2', '--replicas', '2'],
        ...['--routers', '1', '--policies', 'warmpath', '--time-scale', '5', '--cpu-kv-ratio', '4'],
        ...['--kv-sharing', 'peer', '--json', json],
      ]);
      const out = JSON.parse(readFileSync(json, 'utf8')) as {
        config: { kvSharing?: string; cpuKvRatio?: number };
        results: { requests: number; completed: number }[];
      };
      expect(out.config).toMatchObject({ kvSharing: 'peer', cpuKvRatio: 4 });
      expect(out.results[0]!.completed).toBe(out.results[0]!.requests);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
