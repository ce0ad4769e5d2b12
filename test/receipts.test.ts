/**
 * Receipts across real processes: each answer carries the router's predicted
 * cached tokens and the engine's, and a simulator that announces twice its
 * real KV (the kv-overstate fault) is flagged on the router's /metrics
 * within 60 s of traffic (docs/OPERATIONS.md, "Receipts").
 *
 * The fleet: two tiny simulators (4,096 tokens of KV each), their agents,
 * one router. Twenty distinct prompts of about 600 tokens, in a cycle: each
 * replica's share (about 6,000 tokens) overflows its real KV, so its engine
 * evicts every prompt before it comes back. The truthful replica's agent
 * models that and publishes it; the overstating one's believes it holds them
 * all, so the router predicts hits its engine does not have. One request
 * every 350 ms: the cycle outlasts the router's overlay (5 s), so only the
 * digests predict.
 */
import { launchFleet, type LocalFleet } from '@warmpath/launch';
import { HEADERS, RECEIPT_TAIL_BYTES, receiptOfComment } from '@warmpath/shared/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const figure = (name: string, value: unknown): void => console.log(`FIGURE ${name} ${JSON.stringify(value)}`);

let fleet: LocalFleet;
let router: string;
let model: string;

beforeAll(async () => {
  fleet = await launchFleet({ replicas: 2, routers: 1, profile: 'tiny', speed: 4 });
  router = fleet.routerUrls[0]!;
  await fleet.waitConverged(30_000);
  const models = (await (await fetch(`${router}/v1/models`)).json()) as { data: Array<{ id: string }> };
  model = models.data[0]!.id;
}, 90_000);

afterAll(async () => {
  await fleet?.stop();
});

/** The router's misroute counter per replica, from its /metrics. */
async function misroutes(): Promise<Record<string, number>> {
  const text = await (await fetch(`${router}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^warmpath_router_misroutes_total\{replica="([^"]+)"\} (\d+)/gm))
    out[m[1]!] = Number(m[2]);
  return out;
}

const prompt = (i: number): string => `Prompt ${i}: ${`reading number ${i} of the cycle `.repeat(80)}`;

function post(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${router}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 2, ...body }),
  });
}

describe('receipts (real processes)', () => {
  it("answers carry the prediction and the engine's cached tokens: a plain answer in headers, a stream in a comment before its [DONE]", async () => {
    const first = await post({ prompt: 'A question asked twice. '.repeat(60) });
    await first.text();
    expect(first.headers.get(HEADERS.expectedCached)).toBe('0');
    expect(first.headers.get(HEADERS.cached)).toBe('0');
    // The one receipt carries the whole usage: tenant accounting reads the same headers.
    expect(Number(first.headers.get(HEADERS.promptTokens))).toBeGreaterThan(200);
    expect(Number(first.headers.get(HEADERS.completionTokens))).toBeGreaterThan(0);
    const again = await post({ prompt: 'A question asked twice. '.repeat(60) });
    await again.text();
    const expected = Number(again.headers.get(HEADERS.expectedCached));
    const cached = Number(again.headers.get(HEADERS.cached));
    expect(expected).toBeGreaterThan(200);
    expect(cached).toBeGreaterThan(200);
    const stream = await post({ prompt: 'A question asked twice. '.repeat(60), stream: true });
    expect(Number(stream.headers.get(HEADERS.expectedCached))).toBeGreaterThan(200);
    const text = await stream.text();
    const receipt = receiptOfComment(text.slice(-RECEIPT_TAIL_BYTES));
    expect(receipt?.cachedTokens).toBeGreaterThan(200);
    expect(receipt?.completionTokens).toBeGreaterThan(0);
    // Before the closing [DONE], so the stream still ends as OpenAI's does.
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  }, 60_000);

  it('flags a replica announcing twice its real KV on /metrics within 60 s of traffic', async () => {
    const sim = fleet.sims[0]!.info.url!;
    const fault = await fetch(`${sim}/sim/v1/fault`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kvOverstate: 2 }),
    });
    expect(fault.status).toBe(200);
    // The agent publishes the doubled capacity after its next scrape.
    await new Promise((r) => setTimeout(r, 1_000));
    const base = await misroutes();
    const t0 = Date.now();
    let flaggedAt: number | undefined;
    for (let i = 0; Date.now() - t0 < 60_000; i++) {
      await (await post({ prompt: prompt(i % 20) })).text();
      const now = await misroutes();
      if ((now['replica-0'] ?? 0) - (base['replica-0'] ?? 0) >= 3) {
        flaggedAt = Date.now() - t0;
        break;
      }
      await new Promise((r) => setTimeout(r, 350));
    }
    const end = await misroutes();
    figure('kv_overstate_flagged_ms', flaggedAt ?? null);
    figure('kv_overstate_misroutes', end);
    expect(flaggedAt).toBeLessThan(60_000);
    expect((end['replica-1'] ?? 0) - (base['replica-1'] ?? 0)).toBeLessThan(
      (end['replica-0'] ?? 0) - (base['replica-0'] ?? 0),
    );
  }, 120_000);
});
