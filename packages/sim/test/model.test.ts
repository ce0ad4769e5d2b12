import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EngineModel, PROFILES, promptIdentity, stepTimeMs } from '../src/index.ts';
import type { EngineProfile, Sequence, SimRequest } from '../src/index.ts';

const opts = { model: 'm', adapter: '', charsPerToken: 4, blockSize: 16 };

function req(id: string, text: string, maxTokens: number, adapter = ''): SimRequest {
  const p = promptIdentity(text, { ...opts, adapter });
  return { id, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens, adapter };
}

/** Runs the model in virtual time until idle; returns the final time. */
function drain(m: EngineModel, from: number, check = false): number {
  let now = from;
  for (let guard = 0; !m.idle; guard++) {
    if (guard > 1e6) throw new Error('model did not drain');
    now = Math.max(now, m.nextWakeMs(now));
    const r = m.step(now);
    now = r.durationMs > 0 ? r.endMs : now + 0.001;
    if (check) m.checkInvariants();
  }
  return now;
}

const words = (n: number, seed: string): string => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');

describe('EngineModel', () => {
  it('reuses a cached prefix: cached tokens up, TTFT down (H100 figures)', () => {
    const m = new EngineModel(PROFILES['h100-llama3-8b']);
    const text = 'a'.repeat(2048 * 4);
    const a = m.submit(req('a', text, 4), 0);
    let now = drain(m, 0);
    const b = m.submit(req('b', text, 4), now);
    now = drain(m, now);
    expect(a.cachedTokens).toBe(0);
    expect(b.cachedTokens).toBe(2032); // vLLM recomputes at least the last block
    const ttftA = a.firstTokenMs - a.arrivalMs;
    const ttftB = b.firstTokenMs - b.arrivalMs;
    expect(ttftA).toBeGreaterThan(70);
    expect(ttftA).toBeLessThan(110);
    expect(ttftB).toBeGreaterThan(15);
    expect(ttftB).toBeLessThan(30);
    const s = m.snapshot();
    expect(s.prefixQueriesTokens).toBe(4096);
    expect(s.prefixHitsTokens).toBe(2032);
    expect(s.kvUsedBlocks).toBe(0);
    expect(s.kvCachedBlocks).toBe(128);
  });

  it('says how long the cached blocks it evicts had sat unused', () => {
    const m = new EngineModel(PROFILES.tiny); // 256 blocks of 16 tokens
    m.submit(req('a', 'a'.repeat(3000 * 4), 1), 0); // 187 full blocks, cached when it finishes
    const aDone = drain(m, 0);
    expect(m.snapshot().evictedBlocks).toBe(0);
    // A minute later another 3,000-token prompt needs more than the 69 blocks never used: it evicts a's.
    m.submit(req('b', 'b'.repeat(3000 * 4), 1), 60_000);
    drain(m, 60_000);
    const s = m.snapshot();
    expect(s.evictedBlocks).toBeGreaterThan(100);
    // Each sat from a's end (freed then) until b's first step, a little after 60 s.
    const mean = s.evictedAgeMs / s.evictedBlocks;
    expect(mean).toBeGreaterThan(60_000 - aDone);
    expect(mean).toBeLessThan(60_100 - aDone);
  });

  it('decode step time grows with batch like the H100 roofline', () => {
    const itl = (batch: number): number => {
      const m = new EngineModel(PROFILES['h100-llama3-8b']);
      for (let i = 0; i < batch; i++)
        m.submit(
          req(
            `r${i}`,
            words(200, `u${i}-`)
              .padEnd(1024 * 4, 'x')
              .slice(0, 1024 * 4),
            64,
          ),
          0,
        );
      let now = 0;
      const durations: number[] = [];
      while (!m.idle) {
        now = Math.max(now, m.nextWakeMs(now));
        const r = m.step(now);
        if (r.scheduledTokens === r.scheduledSeqs && r.scheduledSeqs === batch) durations.push(r.durationMs);
        now = r.endMs;
      }
      return durations.reduce((x, y) => x + y, 0) / durations.length;
    };
    const b1 = itl(1);
    const b32 = itl(32);
    const b128 = itl(128);
    expect(b1).toBeGreaterThan(6);
    expect(b1).toBeLessThan(7.5);
    expect(b32).toBeGreaterThan(7.5);
    expect(b32).toBeLessThan(9);
    expect(b128).toBeGreaterThan(12);
    expect(b128).toBeLessThan(16);
  });

  it('queues and preempts instead of failing when KV runs out (tiny)', () => {
    const m = new EngineModel(PROFILES.tiny); // 256 blocks = 4096 tokens
    const seqs: Sequence[] = [];
    // 12 requests × (256 prompt + 300 output) tokens ≫ 4096 tokens of KV.
    for (let i = 0; i < 12; i++) seqs.push(m.submit(req(`r${i}`, words(200, `p${i}-`).slice(0, 1024), 300), 0));
    let now = 0;
    let sawWaiting = false;
    let maxUsage = 0;
    while (!m.idle) {
      now = Math.max(now, m.nextWakeMs(now));
      const r = m.step(now);
      now = r.durationMs > 0 ? r.endMs : now + 0.001;
      m.checkInvariants();
      const s = m.snapshot();
      if (s.waiting > 0 && s.running > 0) sawWaiting = true;
      maxUsage = Math.max(maxUsage, s.kvUsage);
    }
    const s = m.snapshot();
    expect(sawWaiting).toBe(true);
    expect(s.preemptions).toBeGreaterThan(0);
    expect(maxUsage).toBeGreaterThan(0.9);
    expect(s.finishedRequests).toBe(12);
    for (const q of seqs) expect(q.generated).toBe(300);
    expect(seqs.some((q) => q.preemptions > 0)).toBe(true);
    expect(s.kvUsedBlocks).toBe(0);
  });

  it('defers requests whose adapter has no slot, loads it, and charges the load time', () => {
    const m = new EngineModel(PROFILES.tiny, { maxLoras: 1, adapters: ['a', 'b'] });
    const a = m.submit(req('a', words(20, 'x'), 50, 'a'), 0);
    const b = m.submit(req('b', words(20, 'y'), 50, 'b'), 0);
    let now = Math.max(0, m.nextWakeMs(0));
    const first = m.step(now);
    expect(first.loraLoadMs).toBe(PROFILES.tiny.loraLoadMs);
    expect(a.status).toBe('running');
    expect(b.status).toBe('waiting');
    expect(m.snapshot().waitingDeferred).toBe(1);
    expect(m.snapshot().lora.running).toEqual(['a']);
    expect(m.snapshot().lora.waiting).toEqual(['b']);
    now = drain(m, first.endMs);
    expect(b.firstTokenMs).toBeGreaterThanOrEqual(a.finishedMs);
    expect(m.snapshot().lora.gpu).toEqual(['b']);
    expect(m.snapshot().lora.loads).toBe(2);
    // 'a' again: reloaded from the CPU cache (fast).
    const a2 = m.submit(req('a2', words(20, 'z'), 2, 'a'), now);
    let sawLoad = 0;
    while (!m.idle) {
      now = Math.max(now, m.nextWakeMs(now));
      const r = m.step(now);
      sawLoad += r.loraLoadMs;
      now = r.endMs;
    }
    expect(sawLoad).toBe(PROFILES.tiny.loraCpuLoadMs);
    expect(a2.generated).toBe(2);
    expect(m.probe(10, new BigUint64Array(0), 'a').adapterHot).toBe(true);
  });

  it('rejects unknown adapters and over-long requests', () => {
    const m = new EngineModel(PROFILES.tiny, { maxLoras: 1, adapters: ['a'] });
    expect(() => m.submit(req('x', 'hi', 4, 'nope'), 0)).toThrow(/not registered/);
    expect(() =>
      m.submit({ id: 'y', promptTokens: 4000, maxTokens: 200, blockHashes: new BigUint64Array(0) }, 0),
    ).toThrow(/maximum context length/);
  });

  it('abort frees blocks; the prefix stays cached and reusable', () => {
    const m = new EngineModel(PROFILES.tiny);
    const text = words(300, 'q');
    const s = m.submit(req('s', text, 1000), 0);
    let now = 0;
    while (s.generated < 5) {
      now = Math.max(now, m.nextWakeMs(now));
      now = m.step(now).endMs;
    }
    expect(m.snapshot().kvUsedBlocks).toBeGreaterThan(0);
    expect(m.abort('s')).toBe(true);
    expect(m.snapshot().kvUsedBlocks).toBe(0);
    expect(m.snapshot().running).toBe(0);
    m.checkInvariants();
    const p = promptIdentity(text, opts);
    expect(m.probe(p.promptTokens, p.blockHashes).cachedTokens).toBeGreaterThan(0);
    expect(m.resetPrefixCache()).toBeGreaterThan(0);
    expect(m.probe(p.promptTokens, p.blockHashes).cachedTokens).toBe(0);
  });

  it('probe predicts a longer TTFT behind queued prefill and a shorter one on a cached prefix (the oracle)', () => {
    const m = new EngineModel(PROFILES['h100-llama3-8b']);
    const text = words(2000, 'oracle');
    const p = promptIdentity(text, opts);
    const idle = m.probe(p.promptTokens, p.blockHashes);
    expect(idle.pendingPrefillTokens).toBe(0);
    // Warm the prefix, then compare a cached and a cold prompt of the same size.
    drain(m, m.submit(req('warm', text, 1), 0).arrivalMs);
    const cached = m.probe(p.promptTokens, p.blockHashes);
    expect(cached.predictedTtftMs).toBeLessThan(idle.predictedTtftMs);
    // Queue other prompts: the prediction grows with the work ahead.
    for (let i = 0; i < 4; i++) m.submit(req(`q${i}`, words(2000, `other${i}`), 1), 1e6);
    const queued = m.probe(p.promptTokens, p.blockHashes);
    expect(queued.pendingPrefillTokens).toBeGreaterThan(4 * 1000);
    expect(queued.predictedTtftMs).toBeGreaterThan(cached.predictedTtftMs);
  });

  it("probe counts a queued request's cached prefix as no work ahead (the scheduler will not recompute it)", () => {
    const m = new EngineModel(PROFILES['h100-llama3-8b']);
    const text = words(2000, 'shared');
    drain(m, m.submit(req('warm', text, 1), 0).arrivalMs);
    const p = promptIdentity(text, opts);
    // Two queued requests: one on the cached prefix, one cold, of the same size.
    m.submit(req('again', text, 1), 1e6);
    const withWarm = m.probe(p.promptTokens, p.blockHashes).pendingPrefillTokens;
    const cold = m.submit(req('cold', words(2000, 'cold'), 1), 1e6);
    const withBoth = m.probe(p.promptTokens, p.blockHashes).pendingPrefillTokens;
    expect(withWarm).toBeLessThan(p.promptTokens / 4);
    expect(withBoth - withWarm).toBe(cold.promptTokens);
  });

  it('keeps its block bookkeeping consistent under random load (property)', () => {
    const profile: EngineProfile = { ...PROFILES.tiny, numGpuBlocks: 64, maxNumBatchedTokens: 128, maxNumSeqs: 6 };
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            prefix: fc.integer({ min: 0, max: 3 }),
            len: fc.integer({ min: 1, max: 400 }),
            out: fc.integer({ min: 1, max: 200 }),
            adapter: fc.constantFrom('', 'a', 'b'),
            gap: fc.integer({ min: 0, max: 30 }),
            abortAfter: fc.option(fc.integer({ min: 0, max: 40 })),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        (reqs) => {
          const m = new EngineModel(profile, { maxLoras: 1, adapters: ['a', 'b'] });
          let now = 0;
          const aborts: { at: number; id: string }[] = [];
          let i = 0;
          for (const r of reqs) {
            const text = `${'shared'.repeat(10 * r.prefix)}${'z'.repeat(r.len)}`;
            m.submit(req(`r${i}`, text, r.out, r.adapter), now);
            if (r.abortAfter !== null) aborts.push({ at: now + r.abortAfter, id: `r${i}` });
            i++;
            for (let k = 0; k < r.gap && !m.idle; k++) {
              now = Math.max(now, m.nextWakeMs(now));
              const st = m.step(now);
              now = st.durationMs > 0 ? st.endMs : now + 0.01;
              for (const a of aborts) if (a.at <= now) m.abort(a.id);
              m.checkInvariants();
            }
          }
          drain(m, now, true);
          const s = m.snapshot();
          expect(s.kvUsedBlocks).toBe(0);
          expect(s.finishedRequests + s.abortedRequests).toBe(reqs.length);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('EngineModel, disaggregated', () => {
  const H100 = PROFILES['h100-llama3-8b'];
  const text = words(1500, 'd');

  it('received KV: schedulable after the delay, one decode step to the first token, the blocks then cached', () => {
    const m = new EngineModel(H100);
    const r = req('r', text, 2);
    const s = m.submit({ ...r, readyDelayMs: 50, kvReceived: true }, 0);
    const end = drain(m, 0, true);
    const first = s.firstTokenMs - s.arrivalMs;
    // frontend + delay + one step over the whole context with no prefill tokens (vs a local prefill of the prompt)
    const step = stepTimeMs(H100, r.promptTokens, 0, 0);
    expect(first).toBeCloseTo(m.frontendDelayMs(r.promptTokens) + 50 + step, 6);
    expect(s.cachedTokens).toBe(0);
    const again = m.submit(req('again', text, 1), end);
    drain(m, end, true);
    expect(again.cachedTokens).toBe(Math.floor((r.promptTokens - 1) / 16) * 16);
  });

  it('holdKv keeps a finished prefill’s blocks until releaseHeld', () => {
    const m = new EngineModel(PROFILES.tiny);
    const s = m.submit({ ...req('p', words(200, 'h'), 1), holdKv: true }, 0);
    drain(m, 0, true);
    expect(s.status).toBe('finished');
    expect(m.heldCount).toBe(1);
    expect(m.snapshot().kvUsedBlocks).toBeGreaterThan(0);
    expect(m.releaseHeld('p')).toBe(true);
    expect(m.releaseHeld('p')).toBe(false);
    m.checkInvariants();
    expect(m.snapshot().kvUsedBlocks).toBe(0);
  });
});
