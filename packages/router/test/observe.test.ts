/**
 * The router's observability over real HTTP: request ids (kept, made,
 * returned, passed on), trace context passed on and never invented, one
 * access-log line per request without the prompt unless asked, the request
 * metrics, and the series count at 100 replicas.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BRANCHES } from '../src/placement/types.ts';
import { ERRORS, HEADERS, RECEIPT_TAIL_BYTES, receiptOfComment } from '@warmpath/shared/wire';
import { accessLine } from '@warmpath/testkit';
import { startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';
import { chat, keepHearing, makeState } from './helpers.ts';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const SECRET = 'the-prompt-words-4417';

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

type Line = Record<string, unknown>;

/** A router over one fake agent, its log lines parsed. */
async function routerWithAgent(
  agent: FakeAgent,
  extra: Record<string, unknown> = {},
): Promise<{ router: Router; lines: Line[] }> {
  const lines: Line[] = [];
  const router = await startRouter({
    port: 0,
    gossip: false,
    id: 'r-obs',
    stateTtlMs: 1_000,
    log: (l) => lines.push(JSON.parse(l) as Line),
    ...extra,
  });
  // Heard for a whole stateTtlMs: an unknown model is then a 404 (model_not_found), not a retryable 503.
  const hearing = keepHearing(router, (seq) => makeState('a1', { fleet: 'default', url: agent.url, seq }));
  await hearing.settled;
  const close = router.close.bind(router);
  router.close = async () => {
    hearing.stop();
    await close();
  };
  return { router, lines };
}

describe('router observability', () => {
  let agent: FakeAgent;
  let router: Router;
  let lines: Line[];
  beforeAll(async () => {
    agent = await startFakeAgent('a1');
    ({ router, lines } = await routerWithAgent(agent));
  });
  afterAll(async () => {
    await router.close();
    await agent.close();
  });

  it("keeps the client's x-request-id, returns it and passes it to the agent with traceparent and tracestate", async () => {
    const r = await post(router.url, chat(SECRET), {
      'x-request-id': 'client-id-1',
      traceparent: TRACEPARENT,
      tracestate: 'vendor=abc',
    });
    expect(r.status).toBe(200);
    expect(r.headers['x-request-id']).toBe('client-id-1');
    expect(agent.lastHeaders).toMatchObject({
      'x-request-id': 'client-id-1',
      traceparent: TRACEPARENT,
      tracestate: 'vendor=abc',
    });
  });

  it('makes a request id when there is none or it is unusable, and never invents a trace', async () => {
    const made = await post(router.url, chat('x'));
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(agent.lastHeaders!['x-request-id']).toBe(made.headers['x-request-id']);
    expect(agent.lastHeaders!.traceparent).toBeUndefined();
    const long = await post(router.url, chat('x'), {
      'x-request-id': 'x'.repeat(200),
      traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
    });
    expect(long.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(agent.lastHeaders!.traceparent).toBeUndefined();
    // Errors the router answers itself carry the id too.
    const bad = await post(
      router.url,
      { model: 'ghost', messages: [{ role: 'user', content: 'x' }] },
      { 'x-request-id': 'bad-1' },
    );
    expect(bad.status).toBe(404);
    expect(bad.headers['x-request-id']).toBe('bad-1');
  });

  it('logs one access-log line per request, with where and why, and without the prompt', async () => {
    await post(router.url, chat(SECRET, { stream: true }), { 'x-request-id': 'line-1', traceparent: TRACEPARENT });
    const line = await accessLine(lines, 'line-1');
    expect(line).toMatchObject({
      level: 'info',
      name: 'router',
      router: 'r-obs',
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      model: 'm',
      stream: true,
      replica: 'a1',
      attempts: 1,
      maxTokens: 16,
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
    expect(BRANCHES).toContain(line.branch);
    expect(line.ttftMs).toBeGreaterThan(0);
    expect(line.durationMs).toBeGreaterThanOrEqual(line.ttftMs as number);
    expect(line.promptTokensEst).toBeGreaterThan(100);
    await post(
      router.url,
      { model: 'ghost', messages: [{ role: 'user', content: SECRET }] },
      { 'x-request-id': 'line-2' },
    );
    expect(await accessLine(lines, 'line-2')).toMatchObject({ status: 404, error: 'model_not_found' });
    expect(lines.filter((l) => l.requestId === 'line-1')).toHaveLength(1);
  });

  it("puts each answer's receipt in the response and the access line: predicted and reported cached tokens, misroute", async () => {
    agent.cached = 3;
    try {
      // A system prompt this router has not sent before: cold, predicted nothing.
      const system = 'A system prompt no other test sends. '.repeat(20);
      const plain = await post(router.url, chat('receipt', {}, system), { 'x-request-id': 'receipt-1' });
      expect(plain.headers[HEADERS.expectedCached]).toBe('0');
      expect(plain.headers[HEADERS.cached]).toBe('3');
      expect(await accessLine(lines, 'receipt-1')).toMatchObject({
        expectedCachedTokens: 0,
        cachedTokens: 3,
        misroute: false,
      });
      // The same prompt again, now warm in this router's overlay: predicted whole, the engine found 3 tokens.
      const stream = await post(router.url, chat('receipt', { stream: true }, system), {
        'x-request-id': 'receipt-2',
      });
      const expected = Number(stream.headers[HEADERS.expectedCached]);
      expect(expected).toBeGreaterThan(10);
      expect(receiptOfComment(stream.text.slice(-RECEIPT_TAIL_BYTES))).toEqual({
        cachedTokens: 3,
        promptTokens: 7,
        completionTokens: 4,
      });
      expect(await accessLine(lines, 'receipt-2')).toMatchObject({
        expectedCachedTokens: expected,
        cachedTokens: 3,
        misroute: true,
      });
      expect(router.receipts.byReplica.get('a1')).toMatchObject({ judged: 2, expectedHits: 1, misroutes: 1 });
      const metrics = await (await request(`${router.url}/metrics`)).body.text();
      expect(metrics).toContain('warmpath_router_misroutes_total{replica="a1"} 1');
    } finally {
      agent.cached = undefined;
    }
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it('counts requests by route and status, TTFT and duration, and attempts by result; process metrics too', async () => {
    await post(router.url, chat('x'));
    await request(`${router.url}/healthz`).then((r) => r.body.text());
    const text = await (await request(`${router.url}/metrics`)).body.text();
    expect(text).toMatch(/^warmpath_router_requests_total\{route="\/v1\/chat\/completions",status="200"\} [1-9]/m);
    expect(text).toMatch(/^warmpath_router_requests_total\{route="\/v1\/chat\/completions",status="404"\} [1-9]/m);
    expect(text).toMatch(/^warmpath_router_requests_total\{route="\/healthz",status="200"\} [1-9]/m);
    expect(text).toMatch(/^warmpath_router_ttft_seconds_count\{route="\/v1\/chat\/completions"\} [1-9]/m);
    expect(text).toMatch(/^warmpath_router_request_duration_seconds_count\{route="\/v1\/chat\/completions"\} [1-9]/m);
    expect(text).toMatch(/^warmpath_router_upstream_attempts_total\{result="ok"\} [1-9]/m);
    expect(text).toMatch(/^# TYPE warmpath_router_gossip_applied_total counter$/m);
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    // A path no route serves counts as "other": clients cannot grow the series.
    await request(`${router.url}/no/such/path/zq-unseen`).then((r) => r.body.text());
    const after = await (await request(`${router.url}/metrics`)).body.text();
    expect(after).toMatch(/^warmpath_router_requests_total\{route="other",status="404"\} [1-9]/m);
    expect(after).not.toContain('zq-unseen');
  });

  it('counts each attempt: a refusal and the retry that follows', async () => {
    const refusing = await startFakeAgent('a2', 'reject');
    const { router: r2 } = await routerWithAgent(agent, { log: () => {} });
    try {
      r2.view.apply(makeState('a2', { fleet: 'default', url: refusing.url, load: { inflight: 0 } }));
      // Enough distinct prompts (no shared system prompt) that the ring puts some on the refusing replica.
      for (let i = 0; i < 8; i++)
        expect((await post(r2.url, chat('q', {}, `distinct ${i} `.repeat(100)))).status).toBe(200);
      const text = await (await request(`${r2.url}/metrics`)).body.text();
      expect(text).toMatch(/^warmpath_router_upstream_attempts_total\{result="rejected"\} [1-9]/m);
      expect(text).toMatch(/^warmpath_router_upstream_attempts_total\{result="ok"\} 8$/m);
    } finally {
      await r2.close();
      await refusing.close();
    }
  });
});

describe('router access log with logPrompts', () => {
  it('puts the prompt in the line when asked', async () => {
    const agent = await startFakeAgent('a1');
    const { router, lines } = await routerWithAgent(agent, { logPrompts: true });
    try {
      await post(router.url, chat(SECRET), { 'x-request-id': 'p-1' });
      expect(JSON.stringify((await accessLine(lines, 'p-1')).prompt)).toContain(SECRET);
    } finally {
      await router.close();
      await agent.close();
    }
  });
});

/** The receipts' counters (metrics.ts, receiptCounters): one series per replica each. */
const RECEIPT_FAMILIES = [
  'warmpath_router_receipts_total',
  'warmpath_router_expected_hits_total',
  'warmpath_router_misroutes_total',
  'warmpath_router_prediction_error_tokens_total',
];

describe('router series budget', () => {
  /** Series in one /metrics answer after every label value the router can produce has been produced: all, and Warmpath's own. */
  async function seriesAt(replicas: number): Promise<{ all: number; own: number; receipts: number }> {
    const agent = await startFakeAgent('a');
    const router = await startRouter({ port: 0, gossip: false, log: () => {} });
    try {
      for (let i = 0; i < replicas; i++)
        router.view.apply(
          makeState(`r${i}`, { fleet: 'default', url: agent.url, status: i % 10 === 9 ? 'draining' : 'ready' }),
        );
      for (let i = 0; i < 20; i++) await post(router.url, chat(`request ${i} `.repeat(50), { stream: i % 2 === 0 }));
      // Every label value the registries allow, as a worst case.
      const m = router.metrics;
      for (const branch of BRANCHES) m.branches.inc({ policy: router.policy.name, branch });
      for (const code of Object.keys(ERRORS)) m.responses.inc({ code });
      for (const kind of ['connect', 'reset', 'rejected', 'timeout', 'aborted', 'interrupted'])
        m.upstreamErrors.inc({ kind });
      for (const result of ['ok', 'rejected', 'connect', 'reset', 'timeout', 'aborted', 'error'])
        m.attempts.inc({ result });
      const routes = [
        '/v1/chat/completions',
        '/v1/completions',
        '/v1/responses',
        '/v1/embeddings',
        '/v1/models',
        '/healthz',
        '/readyz',
        '/metrics',
        '/warmpath/v1/fleet',
        '/warmpath/v1/status',
        '/warmpath/v1/status.json',
        'other',
      ];
      const statuses = [200, 499, ...Object.values(ERRORS).map((e) => e.status), 301, 418, 501];
      for (const route of routes)
        for (const status of statuses)
          (await request(`${router.url}${route === 'other' ? '/x' : route}`).then((r) => r.body.text()),
            m.requests.inc({ route, status: String(status) }));
      for (const route of routes.slice(0, 4))
        (m.ttftSeconds.observe({ route }, 0.1), m.durationSeconds.observe({ route }, 1));
      // The receipts are the one family per replica: every replica with one.
      for (let i = 0; i < replicas; i++)
        router.receipts.add(`r${i}`, { expected: 100, cached: 0, expectedHit: true, misroute: true });
      const text = await (await request(`${router.url}/metrics`)).body.text();
      const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
      const receipts = series.filter((l) => RECEIPT_FAMILIES.some((f) => l.startsWith(`${f}{`))).length;
      return { all: series.length, own: series.filter((l) => l.startsWith('warmpath_')).length - receipts, receipts };
    } finally {
      await router.close();
      await agent.close();
    }
  }

  it('stays under 5,000 series at 100 replicas, and only the receipts are per replica', async () => {
    const [one, hundred] = [await seriesAt(1), await seriesAt(100)];
    expect(hundred.all).toBeLessThanOrEqual(5_000);
    expect(hundred.receipts).toBe(100 * RECEIPT_FAMILIES.length);
    // The process metrics vary on their own (a GC kind appears once it has run); Warmpath's must not grow with the fleet.
    expect(hundred.own).toBe(one.own);
  });
});
