import { describe, expect, it } from 'vitest';
import { PROFILES, stepTimeMs } from '@warmpath/sim';
import type { PlanRequest } from '../src/references.ts';
import { decodeSeconds, workBoundOf } from '../src/work-bound.ts';

const p = PROFILES['h100-llama3-8b'];
const BS = p.blockSize;
/** A request of whole blocks named by block ids (+1 token), with `out` output tokens. */
const req = (at: number, out: number, ...blocks: number[]): PlanRequest => ({
  at,
  adapter: '',
  maxTokens: out,
  promptTokens: blocks.length * BS + 1,
  blockHashes: BigUint64Array.from(blocks.map(BigInt)),
});

describe('work bound', () => {
  it("a decode's least time is the KV part of the engine model's steps, one step a token", () => {
    const prompt = 4_000;
    const out = 50;
    // The step time's context term alone: a step of one sequence less its weights, overhead and prefill.
    const kvOnly = (ctx: number): number => stepTimeMs(p, ctx, 0, 0) - stepTimeMs(p, 0, 0, 0);
    let ms = 0;
    for (let j = 0; j < out; j++) ms += kvOnly(prompt + j);
    expect(decodeSeconds(p, prompt, out)).toBeCloseTo(ms / 1e3, 9);
  });

  it('a prefix is prefilled once in the fleet, and more GPUs raise the bound in proportion', () => {
    const blocks = Array.from({ length: 100 }, (_, i) => i + 1);
    const a = req(0, 10, ...blocks);
    const again = req(1, 10, ...blocks);
    const other = req(2, 10, ...blocks.map((b) => b + 1_000));
    const shared = workBoundOf([a, again], p, 1);
    const apart = workBoundOf([a, other], p, 1);
    // The repeat prefills its last token alone: the pair's prefill is about half that of two cold prompts.
    expect(shared.prefillS).toBeCloseTo(apart.prefillS / 2, 3);
    expect(shared.decodeS).toBeCloseTo(apart.decodeS, 9);
    expect(shared.rate).toBeGreaterThan(apart.rate);
    expect(workBoundOf([a, other], p, 10).rate).toBeCloseTo(10 * apart.rate, 6);
  });
});
