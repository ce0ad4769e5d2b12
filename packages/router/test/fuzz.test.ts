/**
 * The router's HTTP end under generated input (fixed seed): bodies and
 * headers through real HTTP, and raw header lines through a socket. Every
 * answer is a 2xx or an OpenAI-shaped 4xx with a registry code; never a 5xx,
 * never a reset. The bulk of the fuzzing (10,000 cases) drives the parser
 * directly: packages/shared/test/request.fuzz.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isErrorCode } from '@warmpath/shared/wire';
import { fuzzHttp, fuzzRawHeaders } from '@warmpath/testkit/fuzz';
import { startRouter, type Router } from '../src/index.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';
import { keepHearing, makeState } from './helpers.ts';

describe('router HTTP fuzz', () => {
  let router: Router;
  let agent: FakeAgent;
  let hearing: ReturnType<typeof keepHearing>;
  beforeAll(async () => {
    agent = await startFakeAgent('fz');
    // The replica stays fresh and the view settled for the whole run: this test is about input, not staleness.
    router = await startRouter({ port: 0, gossip: false, stateTtlMs: 1_000, log: () => {} });
    hearing = keepHearing(router, (seq) =>
      makeState('fz', { fleet: 'default', url: agent.url, seq, capacity: { kvTokens: 1_000_000 } }),
    );
    await hearing.settled;
  });
  afterAll(async () => {
    hearing.stop();
    await router.close();
    await agent.close();
  });

  it('300 generated requests: 2xx or a registry 4xx, never a 5xx or a reset', async () => {
    const tally = await fuzzHttp(router.url, {
      runs: 300,
      model: 'm',
      endpoints: ['chat', 'completion', 'embedding', 'responses'],
      isCode: isErrorCode,
    });
    expect(tally.get(200) ?? 0).toBeGreaterThan(10);
    expect(tally.get(400) ?? 0).toBeGreaterThan(10);
  });

  it('100 requests with generated header lines: a status line below 500, then a clean close', async () => {
    const tally = await fuzzRawHeaders(Number(new URL(router.url).port), 100);
    expect(tally.get(400) ?? 0).toBeGreaterThan(0);
  });
});
