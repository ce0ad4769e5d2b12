/**
 * `warmpath bench --tenants`: the tenants scenario's routers get its own
 * tenants file by default (the flood meets its token limit), none with
 * `--tenants none`, and a file given by path otherwise.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as bench } from '../../src/cli.ts';
import { SCENARIO_TENANTS } from '../../src/tenants-plan.ts';

interface Saved {
  config: { tenants?: string; requests: number };
  results: Array<{ detail?: { errorsByCode: Record<string, number> } }>;
}

describe('warmpath bench --tenants', () => {
  it("gives the routers the scenario's tenants file, none, or the file named", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warmpath-bench-tenants-'));
    try {
      const once = async (name: string, extra: string[]): Promise<Saved> => {
        const json = join(dir, `${name}.json`);
        const argv = ['--mode', 'des', '--scenario', 'tenants', '--duration', '20', '--policies', 'warmpath'];
        await bench([...argv, ...extra, '--json', json]);
        return JSON.parse(readFileSync(json, 'utf8')) as Saved;
      };
      const limited = (s: Saved) => s.results[0]!.detail!.errorsByCode['rate_limit_exceeded'] ?? 0;
      const own = await once('own', []);
      expect(own.config.tenants).toBe("the tenants scenario's");
      expect(limited(own)).toBeGreaterThan(0);
      const none = await once('none', ['--tenants', 'none']);
      expect(none.config.tenants).toBeUndefined();
      expect(limited(none)).toBe(0);
      // A file that lets each tenant 2 requests a minute: nearly everything is refused.
      const file = join(dir, 'tenants.json');
      const tenants = Object.values(SCENARIO_TENANTS).map((t) => ({
        name: t.name,
        keys: [t.key],
        priorities: [t.band],
        limits: { requestsPerMinute: 2 },
      }));
      writeFileSync(file, JSON.stringify({ tenants }));
      const named = await once('named', ['--tenants', file]);
      expect(named.config.tenants).toBe(file);
      expect(limited(named)).toBeGreaterThan(0.9 * named.config.requests);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
