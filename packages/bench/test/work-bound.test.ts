import { describe, expect, it } from 'vitest';
import { EngineModel, PROFILES, stepTimeMs, type EngineProfile, type Sequence } from '@warmpath/sim';
import type { PlanRequest } from '../src/references.ts';
import {
  decodeSeconds,
  fixedCostMs,
  fixedSeconds,
  privatePromptTokens,
  workBoundOf,
  type WorkBound,
} from '../src/work-bound.ts';

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
/** Mean GPU seconds a request needs at least, by the bound. */
const perRequest = (b: WorkBound): number => b.prefillS + b.decodeS + b.fixedS;

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

  it('a small plan by hand: private tokens, each term, and the rate', () => {
    const a = req(0, 10, 1, 2, 3, 4); // 65 tokens; blocks 1–3 shared with b
    const b = req(1, 20, 1, 2, 3, 5);
    const c = req(2, 5, 6, 7); // 33 tokens, shared with no one
    expect([...privatePromptTokens([a, b, c], BS)]).toEqual([17, 17, 33]);
    // The same prompt twice: only the token past the last full block is each one's own.
    expect([...privatePromptTokens([a, a], BS)]).toEqual([1, 1]);
    const F = 1.0 + (15e9 / (3.35e12 * 0.78)) * 1e3; // h100-llama3-8b: stepOverheadMs + weights' read, ms
    expect(fixedCostMs(p)).toBeCloseTo(F, 12);
    const C = 27_000 * 16;
    const bound = workBoundOf([a, b, c], p, 2);
    // Σ_{j<out} (private + j): a 10 × 17 + 45, b 20 × 17 + 190, c 5 × 33 + 10.
    expect(bound.fixedS).toBeCloseTo(((215 + 530 + 175) / 3) * (F / 1e3 / C), 15);
    // Prefill: a cold (65), b its own block and last token (65 − 48), c cold (33).
    expect(bound.prefillS).toBeCloseTo((65 + 17 + 33) / 3 / 30_000, 15);
    // Decode: Σ_{j<out} (prompt + j) tokens' KV read: a 10 × 65 + 45, b 20 × 65 + 190, c 5 × 33 + 10.
    const kvS = 131_072 / (3.35e12 * 0.78);
    expect(bound.decodeS).toBeCloseTo(((695 + 1_490 + 175) / 3) * kvS, 15);
    expect(bound.rate).toBeCloseTo(2 / (bound.prefillS + bound.decodeS + bound.fixedS), 9);
  });

  it('without the fixed cost the bound is the prefill and KV read alone, as before the fixed term', () => {
    const reqs = [req(0, 300, 1, 2, 3, 4), req(5, 700, 1, 2, 3, 9), req(9, 50, 11, 12)];
    const free: EngineProfile = { ...p, stepOverheadMs: 0, weightsBytes: 0 };
    const without = workBoundOf(reqs, free, 4);
    const withF = workBoundOf(reqs, p, 4);
    expect(without.fixedS).toBe(0);
    expect(without.rate).toBeCloseTo(4 / (without.prefillS + without.decodeS), 9);
    // The other terms do not read the fixed cost.
    expect(withF.prefillS).toBe(without.prefillS);
    expect(withF.decodeS).toBe(without.decodeS);
    expect(withF.fixedS).toBeGreaterThan(0);
    expect(withF.rate).toBeLessThan(without.rate);
  });

  it('the fixed share grows with output and private prompt, and falls with sharing and with KV capacity', () => {
    expect(fixedSeconds(p, 1_000, 200)).toBeGreaterThan(fixedSeconds(p, 1_000, 100));
    expect(fixedSeconds(p, 2_000, 100)).toBeGreaterThan(fixedSeconds(p, 1_000, 100));
    expect(fixedSeconds(p, 1_000, 0)).toBe(0);
    const doc = Array.from({ length: 500 }, (_, i) => i + 1);
    const own = [req(0, 400, ...doc), req(1, 400, ...doc.map((x) => x + 1_000))];
    const onShared = [req(0, 400, ...doc), req(1, 400, ...doc)];
    expect(workBoundOf(onShared, p, 1).fixedS).toBeLessThan(workBoundOf(own, p, 1).fixedS);
    const twice: EngineProfile = { ...p, numGpuBlocks: 2 * p.numGpuBlocks };
    expect(workBoundOf(own, twice, 1).fixedS).toBeCloseTo(workBoundOf(own, p, 1).fixedS / 2, 12);
    expect(workBoundOf(own, twice, 1).rate).toBeGreaterThan(workBoundOf(own, p, 1).rate);
  });

  it("the engine model's steps on a KV-limited long-decode batch cost at least the bound", () => {
    // Little KV (4,096 tokens), prompts of 37 blocks, 3 of them shared by all, outputs of 300–500 tokens:
    // about four sequences fit at once, and the steps' fixed cost is most of their time.
    const tiny: EngineProfile = PROFILES.tiny;
    const C = tiny.numGpuBlocks * tiny.blockSize;
    const reqs = Array.from({ length: 12 }, (_, i) =>
      req(i, 300 + 20 * i, 1, 2, 3, ...Array.from({ length: 34 }, (_, k) => 100 * (i + 1) + k)),
    );
    const own = privatePromptTokens(reqs, BS);
    const engine = new EngineModel(tiny, { maxLoras: 0 });
    const index = new Map<Sequence, number>();
    reqs.forEach((r, i) => index.set(engine.submit({ ...r, id: `r${i}` }, 0), i));
    let now = 0;
    let busyMs = 0;
    let mostPrivate = 0;
    let decodeSteps = 0;
    while (!engine.idle) {
      const res = engine.step(now);
      if (res.durationMs === 0) {
        now = engine.nextWakeMs(now + 1e-6);
        continue;
      }
      // The tokens each emitting sequence holds alone: its private prompt and its output before this step's token.
      const privateTokens = res.emitted.reduce((a, s) => a + own[index.get(s)!]! + s.generated - 1, 0);
      mostPrivate = Math.max(mostPrivate, privateTokens);
      if (res.scheduledTokens === res.emitted.length) {
        // A decode-only step: its time is the roofline of its batch's context (each sequence's computed tokens).
        decodeSteps++;
        const context = res.emitted.reduce((a, s) => a + s.computed, 0);
        expect(res.durationMs).toBeCloseTo(stepTimeMs(tiny, context, 0, 0), 9);
      }
      busyMs += res.durationMs;
      now = res.endMs;
    }
    expect(decodeSteps).toBeGreaterThan(1_000);
    expect(mostPrivate).toBeLessThanOrEqual(C);
    // The batch is KV-limited: its private tokens come near the capacity.
    expect(mostPrivate).toBeGreaterThan(0.7 * C);
    const bound = workBoundOf(reqs, tiny, 1);
    const least = reqs.length * perRequest(bound) * 1e3;
    expect(busyMs).toBeGreaterThanOrEqual(least);
    // The fixed term is most of what the bound adds: without it the bound would be far looser.
    expect(bound.fixedS).toBeGreaterThan(bound.decodeS);
    expect(busyMs).toBeLessThan(1.5 * least);
  });
});
