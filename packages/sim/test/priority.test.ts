/** vLLM's priority scheduling in the engine model: the waiting queue by priority, then arrival; fcfs refuses a priority. */
import { describe, expect, it } from 'vitest';
import { EngineModel, PROFILES, promptIdentity } from '../src/index.ts';
import type { Sequence, SimRequest } from '../src/index.ts';

const opts = { model: 'm', adapter: '', charsPerToken: 4, blockSize: 16 };

function req(id: string, priority: number): SimRequest {
  const p = promptIdentity(`${id} `.repeat(600), opts);
  return { id, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens: 8, priority };
}

/** Submits a crowd of low-priority requests, then one high-priority one, and runs until idle. */
function run(priorityScheduling: boolean): { late: Sequence; crowd: Sequence[] } {
  const m = new EngineModel(PROFILES.tiny, { priorityScheduling });
  const crowd = Array.from({ length: 12 }, (_, i) => m.submit(req(`low${i}`, priorityScheduling ? 2 : 0), 0));
  const late = m.submit(req('high', 0), 1);
  let now = 0;
  for (let guard = 0; !m.idle; guard++) {
    if (guard > 1e6) throw new Error('did not drain');
    now = Math.max(now, m.nextWakeMs(now));
    const r = m.step(now);
    now = r.durationMs > 0 ? r.endMs : now + 0.001;
  }
  return { late, crowd };
}

describe('priority scheduling', () => {
  it('serves a higher priority that arrived later before the waiting crowd', () => {
    const fcfs = run(false);
    const byPriority = run(true);
    const before = (r: { late: Sequence; crowd: Sequence[] }): number =>
      r.crowd.filter((s) => s.firstTokenMs < r.late.firstTokenMs).length;
    expect(before(fcfs)).toBeGreaterThan(6); // it waits behind most of the crowd
    expect(before(byPriority)).toBeLessThan(before(fcfs));
    expect(byPriority.late.firstTokenMs).toBeLessThan(fcfs.late.firstTokenMs);
  });

  it('refuses a non-zero priority without the priority policy, as vLLM does', () => {
    const m = new EngineModel(PROFILES.tiny);
    expect(() => m.submit(req('x', 1), 0)).toThrow(/Priority scheduling is not enabled/);
    expect(() => m.submit(req('y', 0), 0)).not.toThrow();
  });
});
