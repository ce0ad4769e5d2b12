/**
 * Engines that schedule by the bands in the DES (a fleet shape's
 * schedulingPolicy 'priority': vLLM's --scheduling-policy priority, the
 * agents' --engine-priority): an interactive request that arrives behind a
 * crowd of batch requests waiting in the engine is served before them; with
 * fcfs engines it waits its turn.
 */
import { describe, expect, it } from 'vitest';
import { runDes } from '../../src/des/run.ts';
import type { PlannedRequest, RequestResult } from '../../src/loadgen.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';
import { SCENARIO_TENANTS, tenantsFile } from '../../src/tenants-plan.ts';

const file = JSON.stringify(tenantsFile({ rate: 16 }));

function request(at: number, tenant: 'batch' | 'chat-a', i: number): PlannedRequest {
  const t = SCENARIO_TENANTS[tenant];
  return {
    at,
    tag: tenant,
    headers: { authorization: `Bearer ${t.key}`, 'x-warmpath-priority': t.band },
    body: {
      model: DEFAULT_MODEL,
      messages: [{ role: 'user', content: `${tenant} ${i} `.repeat(tenant === 'batch' ? 1_500 : 100) }],
      max_tokens: 4,
    },
  };
}

/** The interactive request's TTFT and how many batch requests got their first token before it. */
async function run(schedulingPolicy: 'fcfs' | 'priority'): Promise<{ ttft: number; ahead: number }> {
  const crowd = Array.from({ length: 24 }, (_, i) => request(i, 'batch', i));
  const plan = [...crowd, request(40, 'chat-a', 0)];
  const base = SCENARIOS.tenants!;
  const scenario = { ...base, fleet: { ...base.fleet, schedulingPolicy } };
  const results: RequestResult[] = [];
  await runDes({
    scenario,
    plan,
    policy: 'warmpath',
    replicas: 1,
    routers: 1,
    durationS: 10,
    onResult: (r) => results.push(r),
    tenants: { file, shared: true },
  });
  expect(results.every((r) => r.ok)).toBe(true);
  const chat = results.find((r) => r.tag === 'chat-a')!;
  const firstAt = (r: RequestResult) => r.sentAt + r.ttftMs;
  return { ttft: chat.ttftMs, ahead: results.filter((r) => r.tag === 'batch' && firstAt(r) < firstAt(chat)).length };
}

describe('engines scheduling by the bands', () => {
  it('serve an interactive request before the batch requests waiting ahead of it', async () => {
    const fcfs = await run('fcfs');
    const byPriority = await run('priority');
    expect(fcfs.ahead).toBeGreaterThan(12);
    expect(byPriority.ahead).toBeLessThan(fcfs.ahead / 2);
    expect(byPriority.ttft).toBeLessThan(fcfs.ttft / 2);
  });
});
