/**
 * End to end prefill/decode disaggregation (issue 44) on a real fleet: two
 * prefill and two decode simulators (`warmpath sim --role`), each with its
 * agent (which learns the role from its simulator), behind a router, over
 * real gossip — the fleet `warmpath demo --pd 2:2` starts. The router speaks
 * vLLM's disaggregated protocol through the agents: a long prompt prefills on
 * a prefill replica and its KV crosses to a decode replica in the prefill
 * replica's zone; a short one is prefilled by the decode replica itself; a
 * prefill worker killed makes its leg fail and the request is retried on the
 * other prefill replica. Then both dialects straight against simulators
 * (a router fed their states, no agents): SGLang's bootstrap room, a failed
 * SGLang prefill retried, and a failed vLLM transfer recomputed by the decode
 * worker; and a vLLM decode leg its agent refused after the prefill sent
 * alone to the other decode replica with the same transfer (a redecode).
 * Every wait polls an observable condition.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import { launchFleet, type LocalFleet } from '@warmpath/launch';
import { parseRoute } from '@warmpath/router/route';
import { startRouter, type Router } from '@warmpath/router';
import { makeState } from '@warmpath/router/testing';
import { startSimServer, type SimServer } from '@warmpath/sim';

const ROLES = ['prefill', 'prefill', 'decode', 'decode'] as const;
const ZONES = ['a', 'b', 'a', 'b'];
const zoneOf = (id: string): string => ZONES[Number(id.slice('replica-'.length))]!;

let fleet: LocalFleet;
let router: string;
let model: string;

/** A prompt of about 2,000 tokens (over the router's 1,024-token threshold), unique from its first characters. */
const longPrompt = (tag: string): string =>
  `${tag}: ${Array.from({ length: 400 }, (_, i) => `line ${i} of a long document`).join('; ')}`;

async function chat(content: string, extra: Record<string, unknown> = {}) {
  const res = await request(`${router}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content }], ...extra }),
  });
  const text = await res.body.text();
  const header = String(res.headers['x-warmpath-route']);
  return {
    status: res.statusCode,
    text,
    header,
    route: parseRoute(header),
    replica: res.headers['x-warmpath-replica'],
  };
}

/** The simulator's own disaggregation counters. */
async function kvStats(i: number): Promise<{ produced: number; received: number }> {
  const res = await request(`${fleet.sims[i]!.info.url}/sim/v1/state`);
  return ((await res.body.json()) as { kv: { produced: number; received: number } }).kv;
}

beforeAll(async () => {
  fleet = await launchFleet({ replicas: 4, routers: 1, roles: ROLES, zones: ZONES, profile: 'h100-llama3-8b' });
  await fleet.waitConverged(60_000);
  router = fleet.routerUrls[0]!;
  await waitFor(
    async () => {
      const res = await request(`${router}/warmpath/v1/fleet`);
      const body = (await res.body.json()) as { replicas: Array<{ id: string; role: string; zone?: string }> };
      return body.replicas.every((r) => r.role === ROLES[Number(r.id.slice(8))] && r.zone === zoneOf(r.id));
    },
    { timeoutMs: 30_000, message: 'the router to see every replica with its role and zone' },
  );
  model = ((await (await request(`${router}/v1/models`)).body.json()) as { data: Array<{ id: string }> }).data[0]!.id;
}, 110_000);

afterAll(async () => {
  await fleet?.stop();
});

describe('prefill/decode disaggregation', () => {
  it('a long prompt, not streamed: prefilled on a prefill replica, decoded in its zone, the header names both', async () => {
    const before = await Promise.all([0, 1, 2, 3].map(kvStats));
    const r = await chat(longPrompt('non-streamed'));
    expect(r.status).toBe(200);
    const pd = r.route?.pd;
    expect(pd).toMatchObject({ mode: 'transfer', by: 'split' });
    expect(['replica-0', 'replica-1']).toContain(pd!.prefill);
    expect(['replica-2', 'replica-3']).toContain(pd!.decode);
    expect(r.replica).toBe(pd!.decode);
    expect(zoneOf(pd!.decode)).toBe(zoneOf(pd!.prefill!));
    const body = JSON.parse(r.text) as {
      choices: Array<{ message: { content: string } }>;
      usage: { completion_tokens: number };
    };
    expect(body.usage.completion_tokens).toBe(8);
    const after = await Promise.all([0, 1, 2, 3].map(kvStats));
    const p = Number(pd!.prefill!.slice(8));
    const d = Number(pd!.decode.slice(8));
    expect(after[p]!.produced - before[p]!.produced).toBe(1);
    expect(after[d]!.received - before[d]!.received).toBe(1);
    const metrics = await (await request(`${router}/metrics`)).body.text();
    expect(metrics).toMatch(/warmpath_router_pd_placements_total\{mode="transfer",by="split"\} [1-9]/);
  });

  it('a long prompt, streamed: the whole stream comes from the decode replica', async () => {
    const r = await chat(longPrompt('streamed'), { stream: true });
    expect(r.status).toBe(200);
    expect(r.route?.pd?.mode).toBe('transfer');
    expect(r.text).toContain('data: [DONE]');
    expect([...r.text.matchAll(/"delta":\{"content":"[^"]+"/g)]).toHaveLength(8);
  });

  it('a short prompt, and a long one the decode replica now holds: prefilled there, no transfer', async () => {
    const short = await chat('hello there');
    expect(short.status).toBe(200);
    expect(short.route?.pd).toMatchObject({ mode: 'local', by: 'short' });
    expect(short.route?.pd?.prefill).toBeUndefined();
    const first = await chat(longPrompt('twice'));
    expect(first.route?.pd?.mode).toBe('transfer');
    // The decode agent's cache model learned what the transfer brought; the router hears it with the next state.
    await waitFor(async () => (await chat(`${longPrompt('twice')} and a follow-up`)).route?.pd?.by === 'cached', {
      timeoutMs: 10_000,
      message: 'a follow-up of the same document to be prefilled on the decode replica holding it',
    });
  });

  it('the decode worker dying mid-stream: the stream ends with the SSE error event, no retry', async () => {
    const fault = (i: number, f: Record<string, unknown>) =>
      request(`${fleet.sims[i]!.info.url}/sim/v1/fault`, { method: 'POST', body: JSON.stringify(f) }).then((x) =>
        x.body.dump(),
      );
    await Promise.all([fault(2, { dieAfterTokens: 3 }), fault(3, { dieAfterTokens: 3 })]);
    const r = await chat(longPrompt('cut short'), { stream: true, max_tokens: 50 });
    await Promise.all([fault(2, { clear: true }), fault(3, { clear: true })]);
    expect(r.status).toBe(200);
    expect(r.route).toMatchObject({ attempt: 'first', pd: { mode: 'transfer' } });
    expect(r.text).toMatch(/data: \{"error":\{.*"code":"stream_interrupted"/);
    expect(r.text).not.toContain('[DONE]');
  });

  it('a prefill worker killed: its leg fails and the request is retried on the other prefill replica or prefilled on its decode replica (or, told first, the router sends none there)', async () => {
    fleet.sims[0]!.child.kill('SIGKILL');
    const out = await Promise.all(Array.from({ length: 6 }, (_, i) => chat(longPrompt(`after the kill ${i}`))));
    for (const r of out) {
      expect(r.status, r.text).toBe(200);
      expect(r.route?.pd?.prefill ?? 'none').not.toBe('replica-0');
    }
    const retried = out.filter((r) => r.route?.attempt === 'retry');
    // The other prefill replica, or none left as a candidate (full): the decode replica prefills.
    for (const r of retried) expect(r.route?.pd?.prefill ?? r.route?.pd?.by).toMatch(/^(replica-1|load|one-pool)$/);
    if (retried.length === 0) {
      // None was sent to the dead replica: the router had already heard from its agent that it is not ready.
      const res = await request(`${router}/warmpath/v1/fleet`);
      const body = (await res.body.json()) as { replicas: Array<{ id: string; status: string }> };
      expect(body.replicas.find((x) => x.id === 'replica-0')?.status ?? 'gone').not.toBe('ready');
    }
  });
});

describe.each(['sglang', 'vllm'] as const)('the %s dialect against simulators', (engine) => {
  let p: SimServer;
  let d: SimServer;
  let r: Router;
  let timer: NodeJS.Timeout;
  const kv = async (s: SimServer) =>
    ((await (await request(`${s.url}/sim/v1/state`)).body.json()) as { kv: Record<string, number> }).kv;
  const fault = (s: SimServer, f: Record<string, unknown>) =>
    request(`${s.url}/sim/v1/fault`, { method: 'POST', body: JSON.stringify(f) }).then((x) => x.body.dump());

  beforeAll(async () => {
    [p, d] = await Promise.all([
      startSimServer({ port: 0, role: 'prefill', model: 'm', seed: 1 }),
      startSimServer({ port: 0, role: 'decode', model: 'm', seed: 2 }),
    ]);
    r = await startRouter({ port: 0, gossip: false, id: 'r-pd', log: () => {} });
    let seq = 1;
    const announce = (): void => {
      seq++;
      r.view.apply(
        makeState('p', {
          fleet: 'default',
          seq,
          url: p.url,
          engine,
          role: 'prefill',
          kvBootstrap: `127.0.0.1:${p.port}`,
        }),
      );
      r.view.apply(makeState('d', { fleet: 'default', seq, url: d.url, engine, role: 'decode' }));
    };
    announce();
    timer = setInterval(announce, 100);
  });
  afterAll(async () => {
    clearInterval(timer);
    await r.close();
    await Promise.all([p.close(), d.close()]);
  });

  const send = async (content: string, stream = false) => {
    const res = await request(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 6, stream, messages: [{ role: 'user', content }] }),
    });
    return {
      status: res.statusCode,
      text: await res.body.text(),
      route: parseRoute(String(res.headers['x-warmpath-route'])),
    };
  };

  it('a transfer: the prefill worker produces the KV, the decode worker receives it and answers', async () => {
    const [p0, d0] = await Promise.all([kv(p), kv(d)]);
    const a = await send(longPrompt(`${engine} transfer`), true);
    expect(a.status).toBe(200);
    expect(a.route?.pd).toMatchObject({ mode: 'transfer', prefill: 'p', decode: 'd' });
    expect(a.text).toContain('data: [DONE]');
    const [p1, d1] = await Promise.all([kv(p), kv(d)]);
    expect(p1.produced! - p0.produced!).toBe(1);
    expect(d1.received! - d0.received!).toBe(1);
  });

  it('a failed transfer: the decode worker recomputes (its kv_load_failure_policy), the client is answered', async () => {
    await fault(d, { kvFail: 1 });
    const d0 = await kv(d);
    const a = await send(longPrompt(`${engine} transfer fails`));
    await fault(d, { clear: true });
    expect(a.status).toBe(200);
    expect(a.route?.pd?.mode).toBe('transfer');
    const d1 = await kv(d);
    expect(d1.recomputed! - d0.recomputed!).toBe(1);
  });

  it('the prefill worker failing: the request is retried without it, and the decode worker prefills', async () => {
    await fault(p, { errorRate: 1 });
    const a = await send(longPrompt(`${engine} prefill fails`));
    await fault(p, { clear: true });
    expect(a.status, a.text).toBe(200);
    expect(a.route).toMatchObject({ attempt: 'retry', pd: { mode: 'local', by: 'one-pool', decode: 'd' } });
  });
});

describe("vLLM's decode leg refused after its prefill", () => {
  let p: SimServer;
  let d: SimServer;
  let r: Router;
  let full: Server;
  let timer: NodeJS.Timeout;
  let refused = 0;

  beforeAll(async () => {
    [p, d] = await Promise.all([
      startSimServer({ port: 0, role: 'prefill', model: 'm', seed: 3 }),
      startSimServer({ port: 0, role: 'decode', model: 'm', seed: 4 }),
    ]);
    // A decode replica whose agent refuses every leg for want of KV room.
    full = createServer((req, res) => {
      req.resume();
      refused++;
      res.writeHead(429, { 'content-type': 'application/json', 'x-warmpath-reject-reason': 'kv' });
      res.end('{"error":{"message":"no KV room","type":"fleet_saturated","code":"fleet_saturated"}}');
    });
    await new Promise<void>((ok) => full.listen(0, '127.0.0.1', ok));
    const fullUrl = `http://127.0.0.1:${(full.address() as AddressInfo).port}`;
    r = await startRouter({ port: 0, gossip: false, id: 'r-redecode', log: () => {} });
    let seq = 1;
    const announce = (): void => {
      seq++;
      // Until it refused, the full replica looks the less loaded of the two decode replicas.
      const busy = { inflightTokens: 1_000_000 };
      const base = { fleet: 'default', seq, engine: 'vllm', role: 'decode' } as const;
      r.view.apply(makeState('p', { fleet: 'default', seq, url: p.url, engine: 'vllm', role: 'prefill' }));
      r.view.apply(makeState('full', { ...base, url: fullUrl, ...(refused > 0 ? { load: busy } : {}) }));
      r.view.apply(makeState('d', { ...base, url: d.url, ...(refused > 0 ? {} : { load: busy }) }));
    };
    announce();
    timer = setInterval(announce, 100);
  });
  afterAll(async () => {
    clearInterval(timer);
    await r.close();
    await new Promise((ok) => full.close(ok));
    await Promise.all([p.close(), d.close()]);
  });

  it('goes alone to the other decode replica with the prefill answer’s kv_transfer_params: no second prefill', async () => {
    const kv = async (s: SimServer) =>
      ((await (await request(`${s.url}/sim/v1/state`)).body.json()) as { kv: Record<string, number> }).kv;
    const [p0, d0] = await Promise.all([kv(p), kv(d)]);
    const res = await request(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 6,
        messages: [{ role: 'user', content: longPrompt('redecode') }],
      }),
    });
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(200);
    expect(refused).toBe(1);
    expect(parseRoute(String(res.headers['x-warmpath-route']))?.pd).toMatchObject({
      mode: 'transfer',
      by: 'redecode',
      prefill: 'p',
      decode: 'd',
    });
    const [p1, d1] = await Promise.all([kv(p), kv(d)]);
    expect(p1.produced! - p0.produced!).toBe(1);
    expect(d1.received! - d0.received!).toBe(1);
  });
});
