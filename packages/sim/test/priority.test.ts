/**
 * vLLM's priority scheduling in the engine model: the waiting queue by
 * priority, then arrival; when KV runs out, the running sequence of the
 * highest priority value (then latest arrival) is preempted; fcfs refuses a
 * priority.
 */
import { describe, expect, it } from 'vitest';
import { EngineModel, PROFILES, promptIdentity } from '../src/index.ts';
import type { Sequence, SimRequest } from '../src/index.ts';

const opts = { model: 'm', adapter: '', charsPerToken: 4, blockSize: 16 };

function req(id: string, priority: number, maxTokens = 8): SimRequest {
  const p = promptIdentity(`${id} `.repeat(600), opts);
  return { id, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens, priority };
}

/** Submits a crowd of low-priority requests, then one high-priority one, and runs until idle. */
function run(priorityScheduling: boolean, crowdSize = 12, maxTokens = 8): { late: Sequence; crowd: Sequence[] } {
  const m = new EngineModel(PROFILES.tiny, { priorityScheduling });
  const crowd = Array.from({ length: crowdSize }, (_, i) =>
    m.submit(req(`low${i}`, priorityScheduling ? 2 : 0, maxTokens), 0),
  );
  const late = m.submit(req('high', 0, maxTokens), 1);
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

  it('preempts the lowest priority, not the newest, when KV runs out', () => {
    // Four sequences growing to about twice the tiny profile's KV: preemption is certain.
    const fcfs = run(false, 3, 1200);
    const byPriority = run(true, 3, 1200);
    expect(fcfs.late.preemptions).toBeGreaterThan(0); // the newest goes first
    expect(byPriority.late.preemptions).toBe(0);
    expect(byPriority.crowd.reduce((n, s) => n + s.preemptions, 0)).toBeGreaterThan(0);
    // Every sequence still ends with all its tokens: a victim scheduled earlier in the step gave its tokens back.
    for (const s of [byPriority.late, ...byPriority.crowd]) expect(s.generated).toBe(1200);
    expect(byPriority.late.finishedMs).toBeLessThan(Math.min(...byPriority.crowd.map((s) => s.finishedMs)));
  });

  it('refuses a non-zero priority without the priority policy, as vLLM does', () => {
    const m = new EngineModel(PROFILES.tiny);
    expect(() => m.submit(req('x', 1), 0)).toThrow(/Priority scheduling is not enabled/);
    expect(() => m.submit(req('y', 0), 0)).not.toThrow();
  });
});
