/**
 * The publish cadence (publisher.ts): a quiet agent publishes at the floor
 * (`publishIntervalMs`) and no more, a change that matters to placement
 * publishes at once, and a change-triggered message leaves the static
 * fields out while the periodic one carries them.
 */
import { manualClock } from '@warmpath/testkit';
import { decodeState, describeRequest, encodeState, expectedSince, type ReplicaState } from '@warmpath/shared/wire';
import { describe, expect, it } from 'vitest';
import { agentConfig } from '../src/config.ts';
import { AgentCore } from '../src/core.ts';
import { emptySnapshot, type EngineSnapshot } from '../src/engines/types.ts';
import { testIdentity } from './identity.ts';

function setup(config: Record<string, unknown> = {}) {
  const clock = manualClock(0);
  const engine = { snap: { ...emptySnapshot(), kvCapacityTokens: 100_000, kvUsedFraction: 0 } as EngineSnapshot };
  const sent: Array<{ bytes: Uint8Array; state: ReplicaState; at: number }> = [];
  const core = new AgentCore({
    config: agentConfig({ gossip: false, ...config }),
    identity: testIdentity(),
    engine: {
      endpoints: ['chat'],
      scrape: (done) => done(undefined, engine.snap),
      models: (done) => done(undefined, [{ id: 'm', parent: undefined }]),
    },
    clock,
    wallClock: clock.now,
    send: (bytes, state) => void sent.push({ bytes, state, at: clock.now() }),
  });
  core.startMonitor();
  core.startPublishing();
  return { clock, engine, sent, core };
}

const request = () =>
  describeRequest(
    { model: 'm', messages: [{ role: 'user', content: 'a long shared prompt '.repeat(400) }], max_tokens: 16 },
    'chat',
  );
/** A request no cache holds (`k` differs per request): its whole prompt is work. */
const fresh = (k: number) =>
  describeRequest(
    { model: 'm', messages: [{ role: 'user', content: `${k} a prompt of its own `.repeat(40) }], max_tokens: 16 },
    'chat',
  );

describe('publish cadence', () => {
  it('a quiet agent publishes once per floor period, however often it scrapes', () => {
    const { core, sent, clock } = setup();
    const floor = core.config.publishIntervalMs;
    expect(floor).toBeGreaterThanOrEqual(2 * core.config.scrapeIntervalMs);
    clock.advance(floor / 2); // settle: the first scrape's figures
    const start = sent.length;
    clock.advance(5 * floor);
    const quiet = sent.slice(start);
    expect(quiet).toHaveLength(5);
    for (let i = 1; i < quiet.length; i++) expect(quiet[i]!.at - quiet[i - 1]!.at).toBe(floor);
    for (const m of quiet) expect(m.state.staticSeq).toBeUndefined(); // the periodic message is whole
  });

  it('an admission that moves the prefill queue publishes at once, leaving the static fields out', () => {
    const { core, sent, clock } = setup();
    clock.advance(core.config.publishIntervalMs / 2);
    const before = sent.length;
    const a = core.admit(request());
    if ('reason' in a) throw new Error(`refused: ${a.reason}`);
    clock.advance(core.config.minPublishGapMs);
    expect(sent.length).toBe(before + 1);
    const m = sent.at(-1)!;
    expect(m.state.load.prefillTokens).toBe(core.ledger.pendingPrefillTokens);
    expect(m.state.staticSeq).toBe(1);
    expect(decodeState(m.bytes).ok).toBe(false); // without the state it builds on
    const held = sent[0]!.state;
    const d = decodeState(m.bytes, () => held);
    expect(d.ok && d.value.url).toBe('http://r1');
    const { staticSeq: _, ...whole } = m.state;
    expect(m.bytes.byteLength).toBeLessThan(encodeState(whole).byteLength - 20);
  });

  it('a busy agent, publishing on change only, still sends the static fields within two floor periods', () => {
    const { core, sent, clock } = setup({ admission: false });
    const floor = core.config.publishIntervalMs;
    const start = sent.length;
    const open: Array<{ a: Parameters<typeof core.finish>[1]; at: number }> = [];
    for (let t = 0; t < 6 * floor; t += 20) {
      clock.advance(20);
      const a = core.admit(fresh(t));
      if ('reason' in a) throw new Error(`refused: ${a.reason}`);
      open.push({ a, at: t });
      // Each ends 60 ms later: the drain no router predicts publishes.
      while (open.length > 0 && open[0]!.at <= t - 60) core.finish(fresh(open[0]!.at), open.shift()!.a);
    }
    const busy = sent.slice(start);
    const whole = busy.filter((m) => m.state.staticSeq === undefined);
    expect(busy.length).toBeGreaterThan(3 * whole.length); // most leave them out
    for (let i = 1; i < whole.length; i++)
      expect(whole[i]!.at - whole[i - 1]!.at).toBeLessThanOrEqual(2 * floor + core.config.minPublishGapMs);
    expect(whole.length).toBeGreaterThanOrEqual(3);
  });

  it('dead reckoning: a steady stream the arrival rate predicts publishes far less than once per request, the guess within changeTokens', () => {
    const { core, sent, clock } = setup({ admission: false });
    const floor = core.config.publishIntervalMs;
    clock.advance(floor / 2);
    const start = sent.length;
    let worst = 0;
    let admitted = 0;
    for (let t = 0; t < 6 * floor; t += 20) {
      clock.advance(20);
      const a = core.admit(fresh(admitted++)); // in flight, never finished
      if ('reason' in a) throw new Error(`refused: ${a.reason}`);
      // A router among many: the last report plus the arrival rate × its age (shared expectedSince).
      const last = sent.at(-1)!;
      const guess =
        last.state.load.inflightTokens + expectedSince(last.state.load.arrivalTokensPerS!, clock.now() - last.at);
      worst = Math.max(worst, Math.abs(core.ledger.inflightTokens - guess));
    }
    const work = core.ledger.inflightTokens / admitted;
    expect(work).toBeGreaterThan(100);
    expect(sent.length - start).toBeLessThan(admitted / 5);
    // Off by at most the margin and the one request that crossed it (published after minPublishGapMs).
    expect(worst).toBeLessThan(core.config.publishChangeTokens + 2 * work);
  });

  it('KV use moving by a tenth of capacity on a scrape publishes before the floor', () => {
    const { core, sent, clock, engine } = setup({ publishIntervalMs: 5_000 });
    clock.advance(core.config.publishIntervalMs / 2);
    const before = sent.length;
    engine.snap = { ...engine.snap, kvUsedFraction: 0.15 };
    clock.advance(core.config.scrapeIntervalMs + core.config.minPublishGapMs);
    expect(sent.length).toBe(before + 1);
    expect(sent.at(-1)!.state.load.kvUsedTokens).toBe(15_000);
  });

  it('the arrival rate decaying after a burst publishes before the floor, so routers stop expecting that work', () => {
    const { core, sent, clock } = setup();
    clock.advance(core.config.publishIntervalMs / 2);
    for (let k = 0; k < 20; k++) {
      clock.advance(5);
      const a = core.admit(request());
      if ('reason' in a) throw new Error(`refused: ${a.reason}`);
      core.firstByte(a);
      core.finish(request(), a);
    }
    const burst = sent.at(-1)!;
    const n = sent.length;
    clock.advance(core.config.publishIntervalMs / 2);
    expect(sent.length).toBeGreaterThan(n);
    const next = sent[n]!;
    expect(next.at - burst.at).toBeLessThan(core.config.publishIntervalMs);
    expect(next.state.load.arrivalTokensPerS!).toBeLessThan(burst.state.load.arrivalTokensPerS!);
  });

  it('a quiet spell after a stream: the many-router guess climbing past the margin is published at the next scrape, before the floor', () => {
    const { core, sent, clock } = setup({ admission: false, publishIntervalMs: 1_000, scrapeIntervalMs: 100 });
    clock.advance(5);
    for (let k = 0; k < 10; k++) {
      clock.advance(8);
      const a = core.admit(fresh(k));
      if ('reason' in a) throw new Error(`refused: ${a.reason}`);
    }
    clock.advance(core.config.minPublishGapMs);
    const last = sent.at(-1)!;
    const rate = last.state.load.arrivalTokensPerS!;
    const margin = core.config.publishChangeTokens;
    // Silence: the truth stays; the guess (report + rate × age) leaves it at rate tokens a second.
    const due = last.at + (1000 * (margin + core.ledger.inflightTokens - last.state.load.inflightTokens)) / rate;
    expect(due + core.config.scrapeIntervalMs).toBeLessThan(last.at + core.config.publishIntervalMs / 2);
    clock.advance(core.config.publishIntervalMs / 2);
    const next = sent.find((m) => m.at > last.at)!;
    expect(next).toBeDefined();
    expect(next.at).toBeGreaterThanOrEqual(Math.floor(due));
    expect(next.at).toBeLessThanOrEqual(due + core.config.scrapeIntervalMs + core.config.minPublishGapMs);
    expect(next.state.load.arrivalTokensPerS!).toBeLessThan(rate);
  });

  it("the engine's own queue starting, with nothing a placement reads moved, waits for the floor", () => {
    const { core, sent, clock, engine } = setup({ publishIntervalMs: 5_000 });
    clock.advance(core.config.publishIntervalMs / 2);
    const before = sent.length;
    engine.snap = { ...engine.snap, running: 4, waiting: 3 };
    clock.advance(4 * core.config.scrapeIntervalMs);
    expect(core.ledger.load().waiting).toBe(3);
    expect(sent.length).toBe(before);
  });

  it('publishOverTokens: a request ending (the guess above the truth by its work) waits until the guess is that far off', () => {
    const run = (over: number) => {
      const { core, sent, clock } = setup({ admission: false, publishOverTokens: over });
      const long = (k: number) =>
        describeRequest(
          {
            model: 'm',
            messages: [{ role: 'user', content: `${k} a prompt of its own `.repeat(300) }],
            max_tokens: 16,
          },
          'chat',
        );
      const open = [0, 1, 2].map((k) => {
        const a = core.admit(long(k));
        if ('reason' in a) throw new Error(`refused: ${a.reason}`);
        return a;
      });
      // Past a floor message: the arrival rate it carries has decayed, so the routers' guess stands still.
      clock.advance(2 * core.config.publishIntervalMs);
      // Just after a floor message: the next is a period away, past the window below.
      const seen = sent.length;
      while (sent.length === seen) clock.advance(1);
      const work = core.ledger.inflightTokens / 3;
      const before = sent.length;
      core.finish(long(0), open[0]!);
      clock.advance(core.config.scrapeIntervalMs + core.config.minPublishGapMs);
      return { work, change: core.config.publishChangeTokens, published: sent.length - before };
    };
    const tight = run(0);
    expect(tight.work).toBeGreaterThan(tight.change);
    expect(tight.work).toBeLessThan(10_000); // under the 10%-of-KV rule
    expect(tight.published).toBe(1);
    expect(run(4 * tight.work).published).toBe(0);
  });
});
