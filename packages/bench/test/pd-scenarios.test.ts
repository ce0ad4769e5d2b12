/**
 * The disaggregation scenarios (pd-scenarios.ts): longdoc's prompts and
 * outputs are both long; mixed is mostly short chats with a few long
 * documents; both are deterministic given the seed.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, SCENARIOS } from '../src/scenarios.ts';

const plan = (name: string, seed = 1) => SCENARIOS[name]!.build({ seed, rate: 20, duration: 60, model: DEFAULT_MODEL });
/** A request's prompt, in characters (the text generator's ≈ 4 per token). */
const chars = (r: { body: Record<string, unknown> }) =>
  (r.body['messages'] as Array<{ content: string }>).reduce((n, m) => n + m.content.length, 0);

describe('disaggregation scenarios', () => {
  it('longdoc: every prompt 6k tokens or more, every output 300 to 1,200 tokens', () => {
    const p = plan('longdoc');
    expect(p.length).toBeGreaterThan(1000);
    for (const r of p) {
      expect(chars(r)).toBeGreaterThan(4 * 6_000 * 0.9);
      expect(r.body['max_tokens']).toBeGreaterThanOrEqual(300);
      expect(r.body['max_tokens']).toBeLessThanOrEqual(1_200);
    }
  });

  it('mixed: about 15% long documents among short chats', () => {
    const p = plan('mixed');
    const long = p.filter((r) => chars(r) > 4 * 8_000 * 0.9);
    expect(p.filter((r) => r.tag === 'document').length).toBe(long.length);
    expect(long.length / p.length).toBeGreaterThan(0.12);
    expect(long.length / p.length).toBeLessThan(0.18);
    expect(p.filter((r) => r.tag === 'chat').every((r) => chars(r) < 4 * 800)).toBe(true);
  });

  it('deterministic given the seed, different across seeds', () => {
    for (const name of ['longdoc', 'mixed']) {
      expect(JSON.stringify(plan(name))).toBe(JSON.stringify(plan(name)));
      expect(JSON.stringify(plan(name, 2))).not.toBe(JSON.stringify(plan(name)));
    }
  });
});
