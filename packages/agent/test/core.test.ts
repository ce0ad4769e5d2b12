/**
 * The agent core without I/O: a scripted engine source, a manual clock and a
 * capturing send — the same wiring the live agent and the simulator use.
 */
import { manualClock } from '@warmpath/testkit';
import { ARRIVAL_TAU_MS, RECENT_TAU_MS, describeRequest, type ReplicaState } from '@warmpath/shared/wire';
import { describe, expect, it } from 'vitest';
import { agentConfig } from '../src/config.ts';
import { AgentCore } from '../src/core.ts';
import { emptySnapshot, type EngineSnapshot, type ModelEntry } from '../src/engines/types.ts';

function setup(config: Record<string, unknown> = {}) {
  const clock = manualClock(0);
  const engine = {
    snap: { ...emptySnapshot(), kvCapacityTokens: 100_000, kvUsedFraction: 0, counters: [10] } as
      EngineSnapshot | Error,
    models: [
      { id: 'm', parent: undefined },
      { id: 'fin', parent: 'm' },
    ] as ModelEntry[],
  };
  const sent: ReplicaState[] = [];
  const core = new AgentCore({
    config: agentConfig({ gossip: false, downAfterFailures: 2, ...config }),
    identity: {
      fleet: 'f',
      replica: 'r1',
      boot: 'b',
      bootAt: 1,
      url: 'http://r1',
      admin: 'http://r1-admin',
      engine: 'vllm',
    },
    engine: {
      endpoints: ['chat'],
      scrape: (done) => (engine.snap instanceof Error ? done(engine.snap) : done(undefined, engine.snap)),
      models: (done) => done(undefined, engine.models),
    },
    clock,
    wallClock: clock.now,
    send: (_bytes, state) => {
      sent.push(state);
    },
  });
  return { clock, engine, sent, core };
}

describe('agent core', () => {
  it('first scrape brings the engine up with its models; publishing starts ready and repeats every interval', () => {
    const { core, sent, clock } = setup();
    let first = false;
    core.startMonitor(() => (first = true));
    expect(first).toBe(true);
    core.startPublishing();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ status: 'ready', models: ['m'], adapters: ['fin'], endpoints: ['chat'], seq: 1 });
    clock.advance(core.config.publishIntervalMs);
    expect(sent.map((s) => s.seq)).toEqual([1, 2]);
  });

  it('failed scrapes mark the engine down and announce it at once; a restart resets the cache model', () => {
    const { core, sent, clock, engine } = setup();
    core.startMonitor();
    core.startPublishing();
    engine.snap = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
    clock.advance(2 * core.config.scrapeIntervalMs + core.config.minPublishGapMs);
    expect(core.status).toBe('down');
    expect(sent.at(-1)!.status).toBe('down');
    expect(core.admit(info())).toEqual({ reason: 'engine_down' });

    engine.snap = { ...emptySnapshot(), kvCapacityTokens: 100_000, counters: [0] }; // counters back at zero
    core.ledger.cache.record(info().hashes);
    clock.advance(core.config.scrapeIntervalMs);
    expect(core.status).toBe('ready');
    expect(core.ledger.cache.size).toBe(0);
  });

  it('an admission that moves the prefill queue by publishChangeTokens is published within the gap, not at the next period', () => {
    for (const changeTokens of [1024, 0]) {
      const { core, sent, clock } = setup({ publishChangeTokens: changeTokens });
      core.startMonitor();
      core.startPublishing();
      clock.advance(core.config.minPublishGapMs);
      const before = sent.length;
      const a = core.admit(info()); // ≈ 2,100 prompt tokens: under 10% of the 100k-token KV and one request in flight
      if ('reason' in a) throw new Error(`refused: ${a.reason}`);
      clock.advance(core.config.minPublishGapMs);
      expect(core.ledger.pendingPrefillTokens).toBeGreaterThan(1024);
      if (changeTokens > 0)
        expect(sent.slice(before).map((s) => s.load.prefillTokens)).toEqual([core.ledger.pendingPrefillTokens]);
      else expect(sent.length).toBe(before); // only the period (or a larger jump) publishes then
    }
  });

  it('an admitted request counts in flight until it finishes; its cached_tokens correct the cache model', () => {
    const { core } = setup();
    core.startMonitor();
    const a = core.admit(info());
    if ('reason' in a) throw new Error(`refused: ${a.reason}`);
    expect(core.ledger.inflight.size).toBe(1);
    core.firstByte(a);
    core.finish(info(), a, { cachedTokens: 0, promptTokens: 2_000 });
    expect(core.ledger.inflight.size).toBe(0);
    expect(core.ledger.feedbacks).toBe(1);
  });

  it('publishes the work admitted per second lately and over a longer time constant, both decaying when admissions stop', () => {
    const { core, clock } = setup();
    core.startMonitor();
    expect(core.ledger.load().arrivalTokensPerS).toBe(0);
    // One request's work every 10 ms for 2 s (ten time constants): about 100 × its work per second.
    let work = 0;
    for (let k = 0; k < 200; k++) {
      clock.advance(10);
      const a = core.admit(info());
      if ('reason' in a) throw new Error(`refused: ${a.reason}`);
      work = a.flight.work;
      core.firstByte(a);
      core.finish(info(), a);
    }
    const steady = core.ledger.load().arrivalTokensPerS!;
    expect(steady / (100 * work)).toBeGreaterThan(0.9);
    expect(steady / (100 * work)).toBeLessThan(1.1);
    // The recent rate's longer time constant has seen only part of those 2 s: 1 − e^(−2 s / τ) of the rate.
    const recent = core.ledger.load().recentTokensPerS!;
    expect(recent / (100 * work)).toBeCloseTo(1 - Math.exp(-2_000 / RECENT_TAU_MS), 1);
    clock.advance(ARRIVAL_TAU_MS);
    expect(core.ledger.load().arrivalTokensPerS! / steady).toBeCloseTo(Math.exp(-1), 2);
    clock.advance(RECENT_TAU_MS - ARRIVAL_TAU_MS);
    expect(core.ledger.load().recentTokensPerS! / recent).toBeCloseTo(Math.exp(-1), 2);
  });
});

function info() {
  return describeRequest(
    { model: 'm', messages: [{ role: 'user', content: 'a long shared prompt '.repeat(400) }], max_tokens: 16 },
    'chat',
  );
}
