/**
 * Receipts in the discrete-event fleet: the routers' misroutes reach the
 * run's result, and an agent that takes twice its engine's KV for its
 * capacity (what the simulator's kv-overstate fault makes it read; here
 * set on the agent, as `--kv-capacity-tokens` would) is seen as misroutes,
 * where the truth gives none.
 */
import { describe, expect, it } from 'vitest';
import { PROFILES } from '@warmpath/sim';
import { runDes } from '../../src/des/run.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

const seed = SCENARIOS.seed!;

describe('receipts in DES', () => {
  it('an agent announcing twice its KV predicts hits its engine evicted: misroutes, where the truth has none', async () => {
    // 30 distinct 20k-token prompts on one replica of about 430k tokens of KV, then the first ten again: evicted by then.
    const prompt = (i: number) => ({
      model: DEFAULT_MODEL,
      messages: [{ role: 'user', content: `${i} `.repeat(40_000 / String(i).length) }],
      max_tokens: 1,
    });
    const plan = [
      ...Array.from({ length: 30 }, (_, i) => ({ at: i * 1_000, body: prompt(i) })),
      ...Array.from({ length: 10 }, (_, i) => ({ at: 31_000 + i * 1_000, body: prompt(i) })),
    ];
    const profile = PROFILES[seed.fleet.profile as keyof typeof PROFILES];
    const real = profile.numGpuBlocks * profile.blockSize;
    const once = (kvCapacityTokens: number) =>
      runDes({
        scenario: seed,
        plan,
        policy: 'warmpath',
        replicas: 1,
        routers: 1,
        durationS: 45,
        agentOverrides: { kvCapacityTokens },
      });
    const truth = await once(real);
    const over = await once(2 * real);
    expect(truth.completed).toBe(40);
    expect(truth.receipts).toMatchObject({ judged: 40, misroutes: 0 });
    expect(over.receipts!.judged).toBe(40);
    expect(over.receipts!.expected_hits).toBeGreaterThanOrEqual(5);
    expect(over.receipts!.misroutes).toBeGreaterThanOrEqual(5);
    expect(over.receipts!.misroute_rate).toBeGreaterThan(0.5);
  });
});
