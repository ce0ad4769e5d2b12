/**
 * SLO admission (tenants/slo.ts): the bound per band (its own objective and
 * every higher band's), the predicted TTFT from a replica's prefill queue,
 * and end to end — a file's objectives hold requests in the fair queue, a
 * lower band behind a higher one's objective, until the queue drains (then
 * the higher band goes first) or their wait ends in 429 fleet_saturated.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { manualClock } from '@warmpath/testkit';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { routerConfig } from '../src/config.ts';
import { RouterCore } from '../src/core/router-core.ts';
import type { Dispatch, RouteError } from '../src/core/types.ts';
import { startRouter } from '../src/index.ts';
import { parseTenants } from '../src/tenants/file.ts';
import { guardsOf, sloBoundMs, predictedTtftMs } from '../src/tenants/slo.ts';
import { Tenancy } from '../src/tenants/tenancy.ts';
import { startFakeAgent } from './fake-agent.ts';
import { chat, makeState } from './helpers.ts';

const FILE = {
  tenants: [
    { name: 'chat', keys: ['sk-chat'], priorities: ['interactive'], slo: { interactive: { ttftMs: 100 } } },
    { name: 'search', keys: ['sk-search'], priorities: ['standard'], slo: { standard: { ttftMs: 400 } } },
    { name: 'evals', keys: ['sk-evals'], priorities: ['batch'] },
  ],
};

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

describe('SLO admission', () => {
  it('bounds a band by its own objective and the tightest of every band above it', () => {
    const set = parseTenants(JSON.stringify(FILE), 'test');
    const guards = guardsOf(set.tenants.values());
    expect(guards).toEqual([Infinity, 100, 100]);
    const t = (name: string) => set.tenants.get(name)!;
    expect(sloBoundMs(t('chat'), 'interactive', guards)).toBe(100);
    expect(sloBoundMs(t('search'), 'standard', guards)).toBe(100);
    expect(sloBoundMs(t('evals'), 'batch', guards)).toBe(100);
    // Without objectives nothing is bounded.
    const none = parseTenants(JSON.stringify({ tenants: [{ name: 'a', keys: ['k'] }] }), 'test');
    expect(sloBoundMs(none.tenants.get('a')!, 'standard', guardsOf(none.tenants.values()))).toBe(Infinity);
    expect(predictedTtftMs({ queue: 2_000, prefill: 1_000, rate: 30_000 })).toBeCloseTo(100);
  });

  it('holds requests while the pick predicts over the bound; when it drains, interactive goes first', () => {
    const clock = manualClock(10_000);
    const sent: Array<Dispatch<string>> = [];
    const answers: Array<{ ctx: string; e: RouteError }> = [];
    const held: string[] = [];
    const tenancy = new Tenancy(parseTenants(JSON.stringify(FILE), 'test'));
    const core = new RouterCore<string>({
      config: routerConfig({ fleet: 'test', prefillTokensPerS: 10_000, queueTimeoutMs: 5_000 }),
      id: 'r',
      clock,
      send: (d) => sent.push(d),
      answer: (ctx, e) => answers.push({ ctx, e }),
      fetchSnapshot: () => Promise.reject(new Error('none')),
      tenancy,
      metrics: { placed: () => {}, retried: () => {}, upstreamError: () => {}, sloHeld: (b) => held.push(b) },
    });
    cleanup.push(async () => core.stop());
    // 20,000 prefill tokens queued at 10,000 tokens/s: 2 s predicted, over every bound.
    core.receive(makeState('a', { sentAt: clock.now(), seq: 1, load: { prefillTokens: 20_000 } }));
    const route = (ctx: string, tenant: string) => {
      const body = chat(ctx);
      core.route(ctx, core.describe(body, 'chat', {}), body, tenancy.who(tenancy.tenants.get(tenant)!, undefined));
    };
    route('batch', 'evals');
    route('int', 'chat');
    expect(sent).toHaveLength(0);
    expect(core.waiting).toBe(2);
    expect(held).toEqual(['batch', 'interactive']);
    core.receive(makeState('a', { sentAt: clock.now(), seq: 2, load: { prefillTokens: 0 } }));
    clock.advance(1);
    expect(sent.map((d) => d.ctx)).toEqual(['int', 'batch']);
    expect(answers).toEqual([]);
  });

  it('over HTTP: a request held past its wait gets 429 fleet_saturated, one the queue drains for is served', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wp-slo-'));
    const file = join(dir, 'tenants.json');
    writeFileSync(file, JSON.stringify(FILE));
    const agent = await startFakeAgent('a0', 'ok');
    const router = await startRouter({
      port: 0,
      gossip: false,
      tenants: file,
      log: () => {},
      queueTimeoutMs: 300,
      prefillTokensPerS: 10_000,
    });
    cleanup.push(async () => {
      await router.close();
      await agent.close();
    });
    const state = (seq: number, prefillTokens: number) =>
      router.view.apply(
        makeState('a0', { fleet: 'default', url: agent.url, seq, sentAt: Date.now(), load: { prefillTokens } }),
      );
    const post = (key: string) =>
      request(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }], max_tokens: 20 }),
      });
    state(1, 100_000); // 10 s of prefill queued
    for (const key of ['sk-chat', 'sk-evals']) {
      const res = await post(key);
      const body = (await res.body.json()) as { error: { code: string } };
      expect({ key, status: res.statusCode, code: body.error.code }).toEqual({
        key,
        status: 429,
        code: 'fleet_saturated',
      });
      expect(res.headers['retry-after']).toBeDefined();
    }
    const metrics = await (
      await request(`${router.url}/metrics`, { headers: { authorization: 'Bearer sk-chat' } })
    ).body.text();
    expect(metrics).toMatch(/warmpath_router_slo_held_total\{band="interactive"\} [1-9]/);
    expect(metrics).toMatch(/warmpath_router_slo_held_total\{band="batch"\} [1-9]/);
    // Held, then the queue drains within its wait: served.
    const pending = post('sk-chat');
    setTimeout(() => state(2, 0), 100);
    const res = await pending;
    await res.body.dump();
    expect(res.statusCode).toBe(200);
  });
});
