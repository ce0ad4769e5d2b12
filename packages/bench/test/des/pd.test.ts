/**
 * A disaggregated fleet in the DES (des/pd.ts): the router core's pairs
 * carried out in virtual time. Long prompts prefill on the prefill replica
 * and decode on the decode replica (every answer comes from it); short
 * prompts, and a follow-up whose prefix the decode replica now holds, are
 * prefilled there; runs are deterministic; an aggregated run is unchanged.
 */
import { describe, expect, it } from 'vitest';
import type { RequestResult } from '../../src/loadgen.ts';
import { runDes } from '../../src/des/run.ts';
import { pdRolesOf } from '../../src/des/pd.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

const seed = SCENARIOS.seed!;
const ask = (content: string, maxTokens = 20) => ({
  model: DEFAULT_MODEL,
  messages: [{ role: 'user', content }],
  max_tokens: maxTokens,
});
const doc = (i: number) => `document ${i}: ${'a long body of text. '.repeat(900)}`;

describe('DES: prefill/decode disaggregation', () => {
  it('P:D parses into roles, prefill first', () => {
    expect(pdRolesOf('2:3')).toEqual(['prefill', 'prefill', 'decode', 'decode', 'decode']);
    expect(pdRolesOf('')).toBeUndefined();
    expect(() => pdRolesOf('0:2')).toThrow(/P:D/);
  });

  it('long prompts transfer, short ones and held prefixes are prefilled on the decode replica; deterministic', async () => {
    const plan = [
      ...Array.from({ length: 6 }, (_, i) => ({ at: i * 500, body: ask(doc(i)) })),
      ...Array.from({ length: 6 }, (_, i) => ({ at: 3_000 + i * 500, body: ask(`hi ${i}`) })),
      // The first document again, with a question: its prefix is on the decode replica by now.
      { at: 8_000, body: ask(`${doc(0)} and what does it say?`) },
    ];
    // The default (pdStallShare 0): the threshold alone (no prefill by load).
    const run = async (routerOverrides: Record<string, unknown> = {}) => {
      const results: RequestResult[] = [];
      const r = await runDes({
        scenario: seed,
        plan,
        policy: 'warmpath',
        replicas: 0,
        pd: '1:1',
        routers: 1,
        durationS: 10,
        routerOverrides,
        onResult: (x) => results.push(x),
      });
      return { r, results };
    };
    const { r, results } = await run();
    expect(r.completed).toBe(plan.length);
    expect(new Set(results.map((x) => x.replica))).toEqual(new Set(['replica-1']));
    expect(r.detail!.pd).toEqual({ transfer: 6, local: 7 });
    const byBody = (i: number) => results.find((x) => x.sentAt === plan[i]!.at);
    for (let i = 0; i < 6; i++) expect(byBody(i)?.pd).toBe('transfer');
    expect(byBody(12)?.pd).toBe('local');
    expect(JSON.stringify((await run()).r)).toBe(JSON.stringify(r));
    // By load (pdStallShare on): a document arriving while the prefill replica still computes the last one is prefilled on the decode replica, idle of streams (no stall), and answers sooner.
    const byLoad = await run({ pdStallShare: 0.008 });
    expect(byLoad.r.completed).toBe(plan.length);
    expect(byLoad.r.detail!.pd).toEqual({ transfer: 3, local: 10 });
    expect(byLoad.r.ttft_ms.mean).toBeLessThan(r.ttft_ms.mean);
  });
});
