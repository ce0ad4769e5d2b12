/**
 * The soak script (bench/soak.ts) run for a few seconds so it cannot rot: a
 * live fleet, a burst, mixed traffic, samples from every process, nothing
 * lost. The long run's figures are in docs/RELIABILITY.md.
 */
import { describe, expect, it } from 'vitest';
import { runSoak } from '../src/soak.ts';

describe('soak (smoke)', () => {
  it('runs a burst and mixed streaming traffic through a live fleet, sampling every process, losing nothing', async () => {
    const lines: string[] = [];
    const r = await runSoak(
      { seconds: 2, concurrency: 8, burst: 100, sampleEverySec: 0.5, replicas: 1, speed: 1, seed: 1 },
      (l) => lines.push(l),
    );
    // Nothing lost: every stream of the burst completes, or (on a machine busy with other tests) is
    // refused cleanly with the fleet's 429 after the router queue's timeout — never a reset or a cut stream.
    const refused = r.burst?.errors['429 fleet_saturated'] ?? 0;
    expect(r.burst?.sent, JSON.stringify(r.burst)).toBe(100);
    expect(
      Object.keys(r.burst?.errors ?? {}).filter((k) => k !== '429 fleet_saturated'),
      JSON.stringify(r.burst),
    ).toEqual([]);
    expect(r.burst!.ok + refused, JSON.stringify(r.burst)).toBe(100);
    expect(r.burst!.ok, JSON.stringify(r.burst)).toBeGreaterThan(50);
    expect(r.soak.errors).toEqual({});
    expect(r.soak.sent).toBeGreaterThan(20);
    expect(r.soak.ok + r.soak.abandoned).toBe(r.soak.sent);
    expect(r.soak.abandoned).toBeGreaterThan(0);
    expect(new Set(r.samples.map((s) => s.proc))).toEqual(new Set(['router-0', 'agent-0', 'sim-0']));
    for (const s of r.samples) expect(s.fds > 0 && s.handles > 0 && s.rss > 0).toBe(true);
    expect(r.drift.map((d) => d.proc).sort()).toEqual(['agent-0', 'router-0', 'sim-0']);
    expect(lines.some((l) => l.startsWith('t=') && l.includes('router-0 rss='))).toBe(true);
  }, 90_000);
});
