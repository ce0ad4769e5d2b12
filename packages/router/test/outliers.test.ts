/**
 * Outlier ejection, the retry budget and the crash limit, in the router core
 * with a manual clock and a scripted `send` (the discrete-event simulator
 * drives this same code).
 */
import { manualClock } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { routerConfig } from '../src/config.ts';
import { CRASH_LIMIT, RouterCore } from '../src/core/router-core.ts';
import type { Dispatch, RouteError, SendResult } from '../src/core/types.ts';
import { chat, makeState } from './helpers.ts';

type Ctx = { n: number };

function setup(replicas: string[], overrides: Record<string, unknown> = {}) {
  const clock = manualClock(1_000);
  const sent: Array<{ d: Dispatch<Ctx>; report: (r: SendResult) => void }> = [];
  const answers: Array<{ ctx: Ctx; e: RouteError }> = [];
  const counts = { ejected: [] as Array<[string, number]>, denied: [] as string[], retried: 0 };
  const core = new RouterCore<Ctx>({
    config: routerConfig({ fleet: 'test', ejectAfterFailures: 3, ejectBaseMs: 1_000, ejectMaxMs: 4_000, ...overrides }),
    id: 'r',
    clock,
    send: (d, report) => sent.push({ d, report }),
    answer: (ctx, e) => answers.push({ ctx, e }),
    fetchSnapshot: () => Promise.reject(new Error('none')),
    metrics: {
      placed: () => {},
      retried: () => counts.retried++,
      upstreamError: () => {},
      ejected: (id, ms) => counts.ejected.push([id, ms]),
      retryDenied: (reason) => counts.denied.push(reason),
    },
  });
  let seq = 1;
  const refresh = (): void => {
    seq++;
    for (const id of replicas) core.receive(makeState(id, { sentAt: clock.now(), seq }));
  };
  refresh();
  let n = 0;
  /** Routes one request (its own routing key, so requests spread over the ring) and returns its first dispatch and its handle. */
  const route = (user = `q${n}`) => {
    const body = chat(user, { prompt_cache_key: `key-${n}` }, '');
    const job = core.route({ n: n++ }, core.describe(body, 'chat', {}), body);
    return { ...sent[sent.length - 1]!, job };
  };
  /** Routes requests until one lands on `id`; every other one is answered ok. */
  const routeTo = (id: string) => {
    for (let i = 0; i < 200; i++) {
      const s = route();
      if (s.d.replica.id === id) return s;
      s.report({ kind: 'done', outcome: 'ok' });
    }
    throw new Error(`no request reached ${id}`);
  };
  return { clock, core, sent, answers, counts, route, routeTo, refresh };
}

/** Fails the attempt `s` with `r`; its retry (if any) is answered ok. */
function failThenOk(
  sent: Array<{ report: (r: SendResult) => void }>,
  s: { report: (r: SendResult) => void },
  r: SendResult,
): void {
  const before = sent.length;
  s.report(r);
  if (sent.length > before) sent[sent.length - 1]!.report({ kind: 'done', outcome: 'ok' });
}

describe('outlier ejection', () => {
  it('ejects a replica after ejectAfterFailures failures in a row, retried elsewhere; placement skips it until the ejection ends', () => {
    const { clock, core, sent, answers, counts, routeTo, route } = setup(['a', 'b', 'c', 'd']);
    for (let i = 0; i < 3; i++) failThenOk(sent, routeTo('a'), { kind: 'failed', status: 500 });
    expect(answers).toHaveLength(0); // every failure was retried elsewhere
    expect(counts.ejected).toEqual([['a', 1_000]]);
    expect(core.local.isEjected('a', clock.now())).toBe(true);
    expect(core.local.ejectedCount(clock.now())).toBe(1);
    for (let i = 0; i < 50; i++) {
      const s = route();
      expect(s.d.replica.id).not.toBe('a');
      s.report({ kind: 'done', outcome: 'ok' });
    }
    clock.advance(1_000);
    expect(core.local.isEjected('a', clock.now())).toBe(false);
  });

  it('a failure right after an ejection ends ejects again for twice as long, up to ejectMaxMs; an answer resets it', () => {
    const { clock, core, sent, counts, routeTo, refresh } = setup(['a', 'b', 'c']);
    for (let i = 0; i < 3; i++) failThenOk(sent, routeTo('a'), { kind: 'reset' });
    for (const ms of [2_000, 4_000, 4_000]) {
      clock.advance(counts.ejected[counts.ejected.length - 1]![1]);
      refresh();
      failThenOk(sent, routeTo('a'), { kind: 'timeout' });
      expect(counts.ejected[counts.ejected.length - 1]).toEqual(['a', ms]);
    }
    clock.advance(4_000);
    refresh();
    routeTo('a').report({ kind: 'done', outcome: 'ok' }); // it answers again: recovered
    for (let i = 0; i < 2; i++) failThenOk(sent, routeTo('a'), { kind: 'failed', status: 502 });
    expect(core.local.isEjected('a', clock.now())).toBe(false); // a fresh run: 2 < 3
    failThenOk(sent, routeTo('a'), { kind: 'failed', status: 502 });
    expect(counts.ejected[counts.ejected.length - 1]).toEqual(['a', 1_000]);
  });

  it("the agent's own refusals and client aborts never count; a refused connection ejects at once", () => {
    const { clock, core, sent, counts, routeTo, refresh } = setup(['a', 'b', 'c']);
    // Each refusal holds `a` full until its next report (core/refusals.ts): one report per refusal.
    for (let i = 0; i < 10; i++) {
      failThenOk(sent, routeTo('a'), { kind: 'rejected', status: 429, reason: 'kv' });
      refresh();
    }
    for (let i = 0; i < 10; i++) routeTo('a').report({ kind: 'done', outcome: 'aborted', error: 'aborted' });
    expect(counts.ejected).toEqual([]);
    failThenOk(sent, routeTo('b'), { kind: 'connect' });
    expect(counts.ejected).toEqual([['b', 1_000]]);
    expect(core.local.isEjected('b', clock.now())).toBe(true);
  });

  it('never ejects more than max(1, ejectMaxPercent) of a group at once', () => {
    const { clock, core, sent, counts, routeTo } = setup(['a', 'b', 'c', 'd']);
    failThenOk(sent, routeTo('a'), { kind: 'connect' });
    failThenOk(sent, routeTo('b'), { kind: 'connect' });
    expect(counts.ejected.map(([id]) => id)).toEqual(['a']); // 10% of 4 → at most 1
    expect(core.local.ejectedCount(clock.now())).toBe(1);

    const big = setup(Array.from({ length: 20 }, (_, i) => `r${String(i).padStart(2, '0')}`));
    for (const id of ['r00', 'r01', 'r02']) failThenOk(big.sent, big.routeTo(id), { kind: 'connect' });
    expect(big.counts.ejected.map(([id]) => id)).toEqual(['r00', 'r01']); // 10% of 20
  });
});

describe('retry budget and crash limit', () => {
  it(`a request that crashed engines on ${CRASH_LIMIT} replicas is not sent to a third`, () => {
    const { sent, answers, counts, route } = setup(['a', 'b', 'c', 'd'], { maxAttempts: 4 });
    route().report({ kind: 'reset' });
    expect(sent).toHaveLength(2);
    sent[1]!.report({ kind: 'failed', status: 500 });
    expect(sent).toHaveLength(2);
    expect(answers.map((a) => a.e.code)).toEqual(['upstream_error']);
    expect(answers[0]!.e.message).toMatch(/failed on 2 replicas/);
    expect(counts.denied).toEqual(['crashes']);
  });

  it('a connect failure is not a crash: a third replica is tried', () => {
    const { sent, answers, route } = setup(['a', 'b', 'c'], { maxAttempts: 3 });
    route().report({ kind: 'connect' });
    sent[1]!.report({ kind: 'reset' });
    expect(sent).toHaveLength(3);
    sent[2]!.report({ kind: 'done', outcome: 'ok' });
    expect(answers).toHaveLength(0);
  });

  it('retries after failures stay within max(retryBudgetMin, retryBudgetPercent × active); the rest wait for a slot until queueTimeoutMs; refusals are not budgeted', () => {
    const { clock, core, sent, answers, counts, route, refresh } = setup(['a', 'b', 'c'], {
      retryBudgetMin: 3,
      retryBudgetPercent: 20,
      queueTimeoutMs: 500,
    });
    const first = Array.from({ length: 10 }, () => route());
    expect(core.active).toBe(10);
    for (const s of first) s.report({ kind: 'failed', status: 500 }); // a fleet-wide fault
    expect(core.retrying).toBe(3); // 20% of 10 = 2 < the floor of 3
    expect(core.waiting).toBe(7);
    expect(sent).toHaveLength(13);
    sent[10]!.report({ kind: 'done', outcome: 'ok' }); // one retry ends: its slot goes to a waiting request
    clock.advance(0);
    expect(sent).toHaveLength(14);
    expect(sent[13]!.d.route.attempt).toBe('retry');
    expect([core.retrying, core.waiting]).toEqual([3, 6]);
    const more = Array.from({ length: 5 }, () => route()); // refusals spill without a slot
    for (const s of more) {
      s.report({ kind: 'rejected', status: 429 });
      refresh(); // a report after each: the refusal rule holds a replica full only until its next one
    }
    expect(sent).toHaveLength(24);
    expect(answers).toHaveLength(0);
    clock.advance(500); // nothing else ends: the waiting ones give up
    expect(answers.map((a) => a.e.code)).toEqual(Array(6).fill('upstream_error'));
    expect(answers[0]!.e.message).toMatch(/retry budget/);
    expect(counts.denied).toEqual(Array(6).fill('budget'));
    for (const s of [...sent.slice(11, 14), ...sent.slice(-5)]) s.report({ kind: 'done', outcome: 'ok' });
    expect(core.active).toBe(0);
    expect(core.retrying).toBe(0);
  });

  it('a cancelled request leaves the active count whether it was queued or in flight', () => {
    const { clock, core, sent, route } = setup([], { queueTimeoutMs: 1_000 });
    core.receive(makeState('full', { sentAt: clock.now(), capacity: { kvTokens: 100 }, load: { kvUsedTokens: 100 } }));
    const body = chat('q', {}, '');
    const queued = core.route({ n: -1 }, core.describe(body, 'chat', {}), body);
    expect(core.waiting).toBe(1);
    core.cancel(queued);
    expect(core.active).toBe(0);
    core.receive(makeState('roomy', { sentAt: clock.now() }));
    const s = route();
    core.cancel(s.job);
    expect(core.active).toBe(1); // its attempt is still the transport's
    s.report({ kind: 'connect' }); // the transport reports; the core places no more
    expect(sent).toHaveLength(1);
    expect(core.active).toBe(0);
  });
});
