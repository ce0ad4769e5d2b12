/**
 * The router core without a transport: retries, the queue and relabelling,
 * driven by a manual clock and a scripted `send`.
 */
import { manualClock } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { routerConfig } from '../src/config.ts';
import { placementChannel, RouterCore } from '../src/core/router-core.ts';
import type { Dispatch, RouteError, SendResult } from '../src/core/types.ts';
import { formatRoute } from '../src/placement/route.ts';
import { SYSTEM, chat, makeState, type StateOverrides } from './helpers.ts';

type Ctx = { n: number };

function setup(
  replicas: string[],
  overrides: Record<string, unknown> = {},
  states: Record<string, StateOverrides> = {},
) {
  const clock = manualClock(1_000);
  const sent: Array<{ d: Dispatch<Ctx>; report: (r: SendResult) => void }> = [];
  const answers: Array<{ ctx: Ctx; e: RouteError }> = [];
  const counts = { retried: 0, branches: [] as string[], upstream: [] as string[], missed: [] as number[] };
  const core = new RouterCore<Ctx>({
    config: routerConfig({ fleet: 'test', ...overrides }),
    id: 'r',
    clock,
    send: (d, report) => sent.push({ d, report }),
    answer: (ctx, e) => answers.push({ ctx, e }),
    fetchSnapshot: () => Promise.reject(new Error('none')),
    metrics: {
      placed: (r) => counts.branches.push(formatRoute(r)),
      retried: () => counts.retried++,
      upstreamError: (k) => counts.upstream.push(k),
      missed: (t) => counts.missed.push(t),
    },
  });
  for (const id of replicas) core.receive(makeState(id, { sentAt: clock.now(), ...states[id] }));
  const route = (n: number, user = 'q', system?: string) => {
    const body = chat(user, {}, system);
    return core.route({ n }, core.describe(body, 'chat', {}), body);
  };
  return { clock, core, sent, answers, counts, route };
}

describe('router core', () => {
  it("tries another replica after an agent's refusal, an attempt of kind retry beside the policy's own branch", () => {
    const { sent, answers, counts, route } = setup(['a', 'b']);
    route(1);
    expect(sent).toHaveLength(1);
    const first = sent[0]!.d.replica.id;
    sent[0]!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    expect(sent).toHaveLength(2);
    expect(sent[1]!.d.replica.id).not.toBe(first);
    expect(sent[0]!.d.route).toMatchObject({ attempt: 'first', step: 'cold', branch: sent[0]!.d.branch });
    // One router: the retry is placed as a first attempt is (no retry-two-choices), and says it is a retry.
    expect(sent[1]!.d.route).toMatchObject({ attempt: 'retry', branch: sent[1]!.d.branch });
    expect(sent[1]!.d.branch).not.toBe('retry-two-choices');
    expect(sent[1]!.d.attempt).toBe(1);
    sent[1]!.report({ kind: 'done', outcome: 'ok' });
    expect(answers).toHaveLength(0);
    expect(counts.retried).toBe(1);
    expect(counts.upstream).toEqual(['rejected']);
  });

  it('a decode leg refused after its prefill is sent alone to another decode replica, with the same transfer, spending no attempt', () => {
    const roles = { p1: { role: 'prefill' }, d1: { role: 'decode' }, d2: { role: 'decode' } } as const;
    const { clock, core, sent, answers, route } = setup(['p1', 'd1', 'd2'], { maxAttempts: 2 }, roles);
    route(1, 'a long document', SYSTEM.repeat(3));
    const first = sent[0]!.d;
    expect(first.prefill?.id).toBe('p1');
    first.prefillDone?.(true);
    const transfer = { prefill: first.prefill!, params: { remote_engine_id: 'e' } };
    sent[0]!.report({ kind: 'rejected', status: 429, reason: 'kv', transfer });
    // It waits for a change here (as an engine queues), then goes to the other decode replica with no prefill leg.
    clock.advance(100);
    expect(sent).toHaveLength(2);
    const again = sent[1]!.d;
    expect(again.replica.id).not.toBe(first.replica.id);
    expect(again.prefill).toBeUndefined();
    expect(again.transfer).toBe(transfer);
    expect(again.route.pd).toMatchObject({ mode: 'transfer', by: 'redecode', prefill: 'p1' });
    // The decode pool is full, not the request failing: the attempt is not spent.
    expect(again.attempt).toBe(0);
    // A second refusal with maxAttempts 2 sheds nothing: the request waits for the first replica's next report.
    sent[1]!.report({ kind: 'rejected', status: 429, reason: 'kv', transfer });
    expect(answers).toHaveLength(0);
    clock.advance(10);
    core.receive(makeState(first.replica.id, { sentAt: clock.now(), seq: 2, ...roles.d1 }));
    clock.advance(1);
    expect(sent).toHaveLength(3);
    expect(sent[2]!.d).toMatchObject({ replica: { id: first.replica.id }, transfer, attempt: 0 });
    expect(sent[2]!.d.prefill).toBeUndefined();
    sent[2]!.report({ kind: 'done', outcome: 'ok' });
    expect(answers).toHaveLength(0);
  });

  it('a decode leg refused after its prefill waits for KV room until queueTimeoutMs, then fleet_saturated', () => {
    const full = { role: 'decode', load: { kvUsedTokens: 100_000 } } as const;
    const roles = { p1: { role: 'prefill' }, d1: { role: 'decode' }, d2: full } as const;
    const { clock, core, sent, answers, route } = setup(['p1', 'd1', 'd2'], { queueTimeoutMs: 1_000 }, roles);
    route(1, 'a long document', SYSTEM.repeat(3));
    const first = sent[0]!.d;
    expect(first.replica.id).toBe('d1');
    first.prefillDone?.(true);
    const transfer = { prefill: first.prefill!, params: { remote_engine_id: 'e' } };
    sent[0]!.report({ kind: 'rejected', status: 429, reason: 'kv', transfer });
    // d1's next report says it is full too: no decode replica has room, so nothing is sent and nothing prefilled again.
    core.receive(makeState('d1', { sentAt: clock.now(), seq: 2, ...full }));
    clock.advance(900);
    expect(sent).toHaveLength(1);
    expect(answers).toHaveLength(0);
    clock.advance(200);
    expect(sent).toHaveLength(1);
    expect(answers[0]?.e.code).toBe('fleet_saturated');
  });

  it("sends warmpath's queue limit on every attempt but the last, so an agent's stale refusal never loses a request", () => {
    const { sent, answers, route } = setup(['a', 'b', 'c'], { maxAttempts: 3 });
    route(1);
    for (let k = 0; k < 2; k++) {
      expect(sent[k]!.d.queueLimit).toBeGreaterThan(0);
      sent[k]!.report({ kind: 'rejected', status: 429, reason: 'stale' });
    }
    expect(sent).toHaveLength(3);
    expect(sent[2]!.d.attempt).toBe(2);
    expect(sent[2]!.d.queueLimit).toBeUndefined();
    sent[2]!.report({ kind: 'done', outcome: 'ok' });
    expect(answers).toHaveLength(0);
  });

  it("takes what a stale refusal says is queued into its view of that replica until the replica's next report", () => {
    const { clock, core, sent, route } = setup(['a', 'b']);
    const spread = (from: number): Set<string> => {
      for (let k = 0; k < 6; k++) route(100 + from + k, `prompt ${from + k}`);
      return new Set(sent.slice(-6).map((s) => s.d.replica.id));
    };
    route(1);
    const x = sent[0]!.d.replica.id;
    sent[0]!.report({ kind: 'rejected', status: 429, reason: 'stale', queued: 60_000 });
    // Other routers queued 60k tokens of prefill on x: this router's next prompts all go elsewhere.
    expect(spread(0)).toEqual(new Set([sent[1]!.d.replica.id]));
    expect(sent[1]!.d.replica.id).not.toBe(x);
    const seen = () => core.local.figures(core.view.replicas.get(x)!).queued;
    expect(seen()).toBe(60_000);
    // x's next report counts that work itself: the correction is dropped.
    clock.advance(100);
    core.receive(makeState(x, { seq: 2, sentAt: clock.now() }));
    expect(seen()).toBe(0);
  });

  it("tells the retry's placement how much more a stale refusal found queued than the attempt's limit allowed (missed)", () => {
    const { sent, counts, route } = setup(['a', 'b', 'c'], { maxAttempts: 3 });
    const seen: Array<number | undefined> = [];
    const listen = (m: unknown) => seen.push((m as { request: { missed?: number } }).request.missed);
    placementChannel.subscribe(listen);
    try {
      route(1);
      const limit = sent[0]!.d.queueLimit!;
      sent[0]!.report({ kind: 'rejected', status: 429, reason: 'stale', queued: limit + 5_000 });
      // A refusal that says nothing of the queue leaves the last figure.
      sent[1]!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    } finally {
      placementChannel.unsubscribe(listen);
    }
    expect(seen).toEqual([undefined, 5_000, 5_000]);
    // Counted for operators (warmpath_router_refusal_missed_tokens): how much the routers herd.
    expect(counts.missed).toEqual([5_000]);
  });

  it('after a refusal with no other replica, queues and places again when a completion wakes the queue', () => {
    const { clock, core, sent, answers, route } = setup(['a']);
    route(1);
    route(2, 'another prompt');
    sent[0]!.report({ kind: 'rejected', status: 429 });
    expect(core.waiting).toBe(1);
    expect(answers).toHaveLength(0);
    sent[1]!.report({ kind: 'done', outcome: 'ok' }); // our own completion: wake
    clock.advance(0);
    expect(core.waiting).toBe(0);
    expect(sent).toHaveLength(3);
    expect(sent[2]!.d.ctx.n).toBe(1);
    expect(sent[2]!.d.replica.id).toBe('a'); // the tried set is cleared after waiting
  });

  it('a saturated request waits until queueTimeoutMs, then 429 fleet_saturated; placed after waiting it is queued', () => {
    const { clock, core, sent, answers, counts, route } = setup([], { queueTimeoutMs: 200 });
    core.receive(makeState('full', { sentAt: clock.now(), capacity: { kvTokens: 100 }, load: { kvUsedTokens: 100 } }));
    route(1);
    expect(core.waiting).toBe(1);
    clock.advance(150);
    expect(answers).toHaveLength(0);
    clock.advance(100);
    expect(answers.map((a) => a.e.code)).toEqual(['fleet_saturated']);
    expect(answers[0]!.e.retryAfter).toBe(true);
    expect(counts.branches).toEqual(['saturated; step=saturated; attempt=first']);

    route(2);
    core.receive(makeState('roomy', { sentAt: clock.now(), seq: 2 }));
    clock.advance(0);
    expect(sent.map((s) => [s.d.replica.id, s.d.route.attempt, s.d.route.step])).toEqual([['roomy', 'queued', 'cold']]);
  });

  it('a cancelled request leaves the queue and is never placed', () => {
    const { clock, core, sent, answers, route } = setup([], { queueTimeoutMs: 1_000 });
    core.receive(makeState('full', { sentAt: clock.now(), capacity: { kvTokens: 100 }, load: { kvUsedTokens: 100 } }));
    const job = route(1);
    core.cancel(job);
    expect(core.waiting).toBe(0);
    core.receive(makeState('roomy', { sentAt: clock.now() }));
    clock.advance(2_000);
    expect(sent).toHaveLength(0);
    expect(answers).toHaveLength(0);
  });

  it('a connect failure ejects the replica at once; maxAttempts failures → upstream_error', () => {
    const { sent, answers, core, route } = setup(['a', 'b', 'c'], { maxAttempts: 2 });
    route(1);
    const first = sent[0]!.d.replica;
    sent[0]!.report({ kind: 'connect' });
    expect(core.local.isEjected(first.id, 1_000)).toBe(true);
    sent[1]!.report({ kind: 'reset' });
    expect(answers.map((a) => a.e.code)).toEqual(['upstream_error']);
  });
});
