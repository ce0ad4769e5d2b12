/**
 * Tenants in the router core, as the simulator drives it (no HTTP): limits
 * answered through `answer`, the claim released however a request ends, the
 * fair queue's band order and shedding.
 */
import { manualClock } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { routerConfig } from '../src/config.ts';
import { RouterCore } from '../src/core/router-core.ts';
import type { Dispatch, RouteError, SendResult } from '../src/core/types.ts';
import { parseTenants } from '../src/tenants/file.ts';
import { Tenancy } from '../src/tenants/tenancy.ts';
import { chat, makeState } from './helpers.ts';

const FILE = JSON.stringify({
  tenants: [
    { name: 'chat', keys: ['k1'], priorities: ['interactive'], limits: { requestsPerMinute: 100, concurrent: 2 } },
    { name: 'evals', keys: ['k2'], priorities: ['batch'] },
  ],
});

function setup(overrides: Record<string, unknown> = {}) {
  const clock = manualClock(1_000);
  const sent: Array<{ d: Dispatch<string>; report: (r: SendResult) => void }> = [];
  const answers: Array<{ ctx: string; e: RouteError }> = [];
  const tenancy = new Tenancy(parseTenants(FILE, 'test'));
  const shed: string[] = [];
  const core = new RouterCore<string>({
    config: routerConfig({ fleet: 'test', ...overrides }),
    id: 'r',
    clock,
    send: (d, report) => sent.push({ d, report }),
    answer: (ctx, e) => answers.push({ ctx, e }),
    fetchSnapshot: () => Promise.reject(new Error('none')),
    tenancy,
    metrics: { placed: () => {}, retried: () => {}, upstreamError: () => {}, shed: (b) => shed.push(b) },
  });
  let seq = 1;
  // A fresh state: an agent's refusal holds its replica full to this router until the next one (core/refusals.ts).
  const refresh = (): void => core.receive(makeState('a', { sentAt: clock.now(), seq: seq++ }));
  refresh();
  const route = (ctx: string, tenant: string) => {
    const body = chat(ctx);
    return core.route(ctx, core.describe(body, 'chat', {}), body, tenancy.who(tenancy.tenants.get(tenant)!, undefined));
  };
  return { clock, core, sent, answers, tenancy, route, shed, refresh };
}

describe('tenants in the router core', () => {
  it('refuses past the concurrent limit and gives the slot back on success, error and cancel', () => {
    const { sent, answers, tenancy, route, core } = setup();
    route('a', 'chat');
    const b = route('b', 'chat');
    route('c', 'chat');
    expect(answers.map((x) => [x.ctx, x.e.code])).toEqual([['c', 'rate_limit_exceeded']]);
    expect(answers[0]!.e.headers?.['x-ratelimit-limit-requests']).toBe('100');
    expect(sent.map((s) => s.d.band)).toEqual(['interactive', 'interactive']);
    expect(sent[0]!.d.headers?.['x-ratelimit-remaining-requests']).toBe('99');
    sent[0]!.report({
      kind: 'done',
      outcome: 'ok',
      usage: { promptTokens: 10, cachedTokens: 4, completionTokens: 6 },
    });
    expect(tenancy.limiter.inFlight('chat')).toBe(1);
    sent[1]!.report({ kind: 'done', outcome: 'error', error: 'interrupted' });
    core.cancel(b); // after the end: nothing more to give back
    expect(tenancy.limiter.inFlight('chat')).toBe(0);
    expect(tenancy.usage.snapshot(1_000)[0]).toMatchObject({
      tenant: 'chat',
      total: { requests: 2, promptTokens: 10, cachedTokens: 4, completionTokens: 6 },
    });
  });

  it('a queued request cancelled by its client, or timed out, frees its slot', () => {
    const { sent, answers, tenancy, route, core, clock, refresh } = setup({ queueTimeoutMs: 500 });
    const a = route('a', 'chat');
    sent[0]!.report({ kind: 'rejected', status: 429, reason: 'kv' }); // the only replica refused: it waits
    expect(core.waiting).toBe(1);
    core.cancel(a);
    expect(core.waiting).toBe(0);
    expect(tenancy.limiter.inFlight('chat')).toBe(0);
    refresh();
    route('b', 'chat');
    sent[1]!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    clock.advance(30);
    for (const s of sent.slice(2)) s.report({ kind: 'rejected', status: 429, reason: 'kv' });
    clock.advance(1_000);
    for (const s of sent.slice(2)) s.report({ kind: 'rejected', status: 429, reason: 'kv' });
    clock.advance(1_000);
    expect(answers.some((x) => x.ctx === 'b' && x.e.code === 'fleet_saturated')).toBe(true);
    expect(tenancy.limiter.inFlight('chat')).toBe(0);
  });

  it('when the queue is full, sheds the batch request for the interactive one, and serves interactive first', () => {
    const { sent, answers, route, clock, shed, refresh } = setup({ queueMax: 2 });
    route('batch1', 'evals');
    route('batch2', 'evals');
    sent[0]!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    sent[1]!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    refresh();
    route('int1', 'chat');
    sent[2]!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    expect(answers.map((x) => [x.ctx, x.e.code, x.e.retryAfter])).toEqual([['batch2', 'fleet_saturated', true]]);
    expect(shed).toEqual(['batch']);
    refresh();
    clock.advance(50); // the queue's poll: both placed again, interactive first
    expect(sent.slice(3).map((s) => s.d.ctx)).toEqual(['int1', 'batch1']);
  });
});
