/**
 * The engine's ITL tail: the histogram read from vLLM's and SGLang's
 * /metrics, its p99 over the sliding window, and the agent's state carrying
 * it as load.itlP99Ms.
 */
import { describe, expect, it } from 'vitest';
import { parsePrometheus } from '@warmpath/shared/runtime';
import { manualClock } from '@warmpath/testkit';
import type { ReplicaRole, ReplicaState } from '@warmpath/shared/wire';
import { agentConfig } from '../src/config.ts';
import { AgentCore } from '../src/core.ts';
import { parseSglangMetrics } from '../src/engines/sglang.ts';
import { emptySnapshot } from '../src/engines/types.ts';
import { parseVllmMetrics } from '../src/engines/vllm.ts';
import { ITL_MIN_GAPS, ITL_WINDOW_MS, ItlWindow } from '../src/itl.ts';
import { AgentLedger } from '../src/ledger.ts';
import { createMetrics } from '../src/metrics.ts';
import { testIdentity } from './identity.ts';

const BOUNDS = [0.025, 0.05, 0.075, 0.3, Number.POSITIVE_INFINITY];

/** Cumulative counts from per-bucket ones. */
const cum = (per: number[]): number[] => per.map((_, i) => per.slice(0, i + 1).reduce((a, b) => a + b, 0));

function histogramText(name: string, per: number[], labels = ''): string {
  const c = cum(per);
  return BOUNDS.map((b, i) => `${name}_bucket{${labels}le="${b === Infinity ? '+Inf' : b}"} ${c[i]}`).join('\n');
}

describe('engine ITL histogram', () => {
  it('vLLM: inter_token_latency_seconds summed over engines, else the older time_per_output_token_seconds; none is undefined', () => {
    const v1 = parsePrometheus(
      [
        histogramText('vllm:inter_token_latency_seconds', [0, 90, 5, 1, 0], 'engine="0",'),
        histogramText('vllm:inter_token_latency_seconds', [0, 10, 0, 0, 0], 'engine="1",'),
        histogramText('vllm:time_per_output_token_seconds', [5, 0, 0, 0, 0]),
      ].join('\n'),
    );
    expect(parseVllmMetrics(v1).itl).toEqual({ bounds: BOUNDS, cumulative: [0, 100, 105, 106, 106] });
    const old = parsePrometheus(histogramText('vllm:time_per_output_token_seconds', [5, 0, 0, 0, 1]));
    expect(parseVllmMetrics(old).itl?.cumulative).toEqual([5, 5, 5, 5, 6]);
    expect(parseVllmMetrics(parsePrometheus('vllm:num_requests_running 1')).itl).toBeUndefined();
  });

  it('SGLang: sglang:inter_token_latency_seconds', () => {
    const m = parsePrometheus(histogramText('sglang:inter_token_latency_seconds', [1, 2, 3, 4, 5], 'tp_rank="0",'));
    expect(parseSglangMetrics(m).itl).toEqual({ bounds: BOUNDS, cumulative: [1, 3, 6, 10, 15] });
  });
});

describe('ITL p99 over the window', () => {
  const at = (per: number[]) => ({ bounds: BOUNDS, cumulative: cum(per) });

  it('is the p99 of the increase over the window, interpolated within its bucket', () => {
    const w = new ItlWindow();
    // Before the window: slow gaps that must not count.
    w.observe(0, at([0, 0, 0, 500, 0]));
    expect(w.p99Ms()).toBeUndefined();
    // 1,000 gaps since: 995 in (25, 50] ms, 5 in (75, 300]: p99 (rank 990) is in the first bucket.
    w.observe(1_000, at([0, 995, 0, 505, 0]));
    expect(w.p99Ms()).toBeCloseTo(25 + (25 * 990) / 995, 1);
    // 20 more slow ones: rank 1,009.8 of 1,020 falls among the slow gaps: (75, 300] ms.
    w.observe(2_000, at([0, 995, 0, 525, 0]));
    expect(w.p99Ms()).toBeCloseTo(75 + (225 * (1009.8 - 995)) / 25, 1);
    // Past the last finite bound: that bound.
    w.observe(2_500, at([0, 995, 0, 525, 100]));
    expect(w.p99Ms()).toBe(300);
  });

  it('forgets what fell before the window, says nothing on too few gaps, and starts afresh after a restart', () => {
    const w = new ItlWindow();
    w.observe(0, at([0, 0, 0, 0, 0]));
    w.observe(1_000, at([0, 0, 0, 300, 0]));
    expect(w.p99Ms()).toBeGreaterThan(75);
    // Only fast gaps for a whole window after the slow ones.
    w.observe(1_000 + ITL_WINDOW_MS, at([0, 1_000, 0, 300, 0]));
    w.observe(2_000 + ITL_WINDOW_MS, at([0, 2_000, 0, 300, 0]));
    expect(w.p99Ms()).toBeLessThanOrEqual(50);
    // A restart (counts went back): the old base is dropped.
    w.observe(3_000 + ITL_WINDOW_MS, at([0, ITL_MIN_GAPS - 1, 0, 0, 0]));
    expect(w.p99Ms()).toBeUndefined();
    w.observe(3_100 + ITL_WINDOW_MS, at([0, 2 * ITL_MIN_GAPS, 0, 0, 0]));
    expect(w.p99Ms()).toBeLessThanOrEqual(50);
    // The engine stops exposing it: nothing.
    w.observe(3_200 + ITL_WINDOW_MS, undefined);
    expect(w.p99Ms()).toBeUndefined();
  });

  it("is published in the agent's load once the window holds enough gaps, absent before", () => {
    const ledger = new AgentLedger(agentConfig({ kvCapacityTokens: 100_000 }), createMetrics());
    const snap = (per: number[]) => ({ ...emptySnapshot(), itl: at(per) });
    ledger.setSnapshot(snap([0, 0, 0, 0, 0]), 0);
    expect('itlP99Ms' in ledger.load()).toBe(false);
    ledger.setSnapshot(snap([0, 500, 0, 0, 0]), 1_000);
    expect(ledger.load().itlP99Ms).toBeCloseTo(25 + (25 * 495) / 500, 1);
  });

  it('a decode replica publishes it in its state; an aggregated (or prefill) one does not: its messages stay as they were', () => {
    const published = (role: ReplicaRole | undefined): ReplicaState => {
      const clock = manualClock(0);
      let gaps = 0;
      const sent: ReplicaState[] = [];
      const core = new AgentCore({
        config: agentConfig({ gossip: false }),
        identity: testIdentity(),
        engine: {
          endpoints: ['chat'],
          // 1,000 more gaps of 25-50 ms at each scrape.
          scrape: (done) =>
            done(undefined, { ...emptySnapshot(), kvCapacityTokens: 100_000, itl: at([0, (gaps += 1_000), 0, 0, 0]) }),
          models: (done) => done(undefined, [{ id: 'm', parent: undefined }]),
        },
        clock,
        wallClock: clock.now,
        send: (_bytes, state) => void sent.push(state),
      });
      if (role !== undefined) core.setTopology(role, '', '');
      core.startMonitor();
      core.startPublishing();
      clock.advance(2_000);
      core.kick();
      core.publisher.publishNow();
      core.stop();
      return sent.at(-1)!;
    };
    expect(published('decode').load.itlP99Ms).toBeGreaterThan(25);
    expect(published('decode').load.itlP99Ms).toBeLessThanOrEqual(50);
    for (const role of [undefined, 'both', 'prefill'] as const) expect('itlP99Ms' in published(role).load).toBe(false);
  });
});
