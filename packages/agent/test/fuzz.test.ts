/**
 * The agent's proxy under generated input (fixed seed), with the simulator
 * engine behind it: bodies and headers through real HTTP, raw header lines
 * through a socket. Every answer is a 2xx or an OpenAI-shaped 4xx with a
 * registry code; never a 5xx, never a reset. The bulk of the fuzzing drives
 * the parser directly: packages/shared/test/request.fuzz.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isErrorCode } from '@warmpath/shared/wire';
import { startSimServer, type SimServer } from '@warmpath/sim';
import { fuzzHttp, fuzzRawHeaders } from '@warmpath/testkit/fuzz';
import { startAgent, type Agent } from '../src/index.ts';

describe('agent HTTP fuzz', () => {
  let sim: SimServer;
  let agent: Agent;
  beforeAll(async () => {
    sim = await startSimServer({ port: 0, profile: 'tiny', speed: 100 });
    agent = await startAgent({ engineUrl: sim.url, gossip: false });
  });
  afterAll(async () => {
    await agent?.close();
    await sim?.close();
  });

  it('200 generated requests: 2xx or a registry 4xx, never a 5xx or a reset', async () => {
    const tally = await fuzzHttp(agent.url, {
      runs: 200,
      model: sim.modelName,
      endpoints: ['chat', 'completion'],
      isCode: isErrorCode,
    });
    expect(tally.get(200) ?? 0).toBeGreaterThan(10);
    expect(tally.get(400) ?? 0).toBeGreaterThan(10);
  });

  it('100 requests with generated header lines: a status line below 500, then a clean close', async () => {
    const tally = await fuzzRawHeaders(Number(new URL(agent.url).port), 100);
    expect(tally.get(400) ?? 0).toBeGreaterThan(0);
  });
});
