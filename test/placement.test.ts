/**
 * End to end placement (issue 5) on a real fleet — simulators, agents and a
 * router over real gossip — started by the same launcher as the demo:
 *  (a) the key's home replica is full (its agent refuses more work), so the
 *      request overflows to the next replica on the key's ring;
 *  (b) an adapter request goes where the adapter is hot, not to its ring home.
 * Load is made by holding long streams open directly on one replica's agent.
 * Every wait polls an observable condition; nothing sleeps for a fixed time.
 */
import { HashRing, hashString } from '@warmpath/shared/wire';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import { launchFleet, type LocalFleet } from '@warmpath/launch';

const ADAPTER = 'sql-lora';
/** Each agent refuses a third concurrent request, so two held streams fill a replica. */
const MAX_INFLIGHT = 2;
/** Output tokens of a held stream: two fit the tiny profile's 4096-token KV; at speed 0.1 one lasts ~25 s. */
const HOLD_TOKENS = 1_700;

interface FleetReplica {
  id: string;
  status: string;
  hotAdapters: string[];
  capacity: { weight: number };
  load: { inflight: number };
}

let fleet: LocalFleet;
let router: string;
let model: string;
const proxyOf = new Map<string, string>();

async function replicas(): Promise<FleetReplica[]> {
  const res = await request(`${router}/warmpath/v1/fleet`);
  return ((await res.body.json()) as { replicas: FleetReplica[] }).replicas;
}

/** Replica ids in the ring order of `key`, as the router builds the ring. */
async function ringOrder(key: bigint): Promise<string[]> {
  const ring = new HashRing((await replicas()).map((r) => ({ id: r.id, weight: r.capacity.weight })));
  return [...ring.walk(key)].map((m) => m.id);
}

async function chat(base: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await request(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, max_tokens: 4, ...body }),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    text,
    replica: String(res.headers['x-warmpath-replica']),
    // x-warmpath-route: `<branch>; step=…; attempt=…; by=…` (docs/PLACEMENT.md): the branch, and the attempt's kind apart.
    route: String(res.headers['x-warmpath-route']).split(';')[0]!,
    header: String(res.headers['x-warmpath-route']),
  };
}

/**
 * Opens a long stream straight on a replica's agent and resolves once tokens
 * flow; abort() ends it. The agent's admission projects KV use from a scrape up
 * to one interval old, so a refusal (429) is retried until it admits.
 */
async function hold(replica: string, reqModel: string): Promise<{ abort: () => void; ended: () => boolean }> {
  const ac = new AbortController();
  let refusals = '';
  // Until the agent admits: a refusal counts as "not yet" (its reason shows in a timeout's message).
  const res = await waitFor(
    async () => {
      const res = await request(`${proxyOf.get(replica)}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: reqModel,
          stream: true,
          max_tokens: HOLD_TOKENS,
          messages: [{ role: 'user', content: `hold ${replica}` }],
        }),
        signal: ac.signal,
      });
      if (res.statusCode !== 429) return res;
      refusals += ` ${String(res.headers['x-warmpath-reject-reason'])}`;
      await res.body.dump();
      throw new Error(`hold on ${replica} refused:${refusals}`);
    },
    { timeoutMs: 30_000, intervalMs: 100, message: `the agent of ${replica} to admit a held stream` },
  );
  expect(res.statusCode, `hold on ${replica} (refused:${refusals})`).toBe(200);
  const it = res.body[Symbol.asyncIterator]();
  let seen = '';
  while (!seen.includes('data: {')) {
    const next = await it.next();
    if (next.done === true) throw new Error(`hold on ${replica} ended before its first token`);
    seen += String(next.value);
  }
  let ended = false;
  res.body.on('error', () => {}); // the abort below surfaces here
  res.body.on('end', () => (ended = true));
  res.body.on('close', () => (ended = true));
  res.body.resume();
  return { abort: () => ac.abort(), ended: () => ended };
}

/** Until the router sees every replica idle again (held streams gone). */
async function waitIdle(): Promise<void> {
  await waitFor(async () => (await replicas()).every((r) => r.load.inflight === 0), {
    timeoutMs: 30_000,
    intervalMs: 100,
    message: 'every replica idle',
  });
}

beforeAll(async () => {
  fleet = await launchFleet({
    replicas: 3,
    routers: 1,
    profile: 'tiny',
    // Slow enough that a held stream outlasts the test; short requests still take well under 1 s.
    speed: 0.1,
    adapters: [ADAPTER, 'chat-lora'],
    maxLoras: 1,
    agentArgs: ['--max-inflight', String(MAX_INFLIGHT)],
  });
  await fleet.waitConverged(60_000);
  router = fleet.routerUrls[0]!;
  fleet.agents.forEach((a, i) => proxyOf.set(`replica-${i}`, a.info.proxy!));
  const models = (await (await request(`${router}/v1/models`)).body.json()) as {
    data: Array<{ id: string; parent: string | null }>;
  };
  model = models.data.find((m) => m.parent === null)!.id;
  expect(models.data.map((m) => m.id)).toContain(ADAPTER);
});

afterAll(async () => {
  await fleet?.stop();
});

describe('placement end to end', () => {
  it('a full home replica overflows to the next replica on the key ring, and the request succeeds', async () => {
    const key = 'tenant-7';
    const order = await ringOrder(hashString(`${model}\u0000${key}`));
    const [home, next] = order;
    // Idle fleet: the key's home.
    const first = await chat(router, { messages: [{ role: 'user', content: 'first' }] }, { 'x-warmpath-key': key });
    expect(first).toMatchObject({ status: 200, replica: home, route: 'ring' });

    const holds = [];
    for (let i = 0; i < MAX_INFLIGHT; i++) holds.push(await hold(home!, model));
    try {
      // The router either sees the home's load in gossip and spills (over the bound, or the
      // next member has less work ahead), or the home's agent refuses (429) and the router
      // retries before any byte reached the client.
      for (let k = 0; k < 2; k++) {
        // The other replicas idle in the router's view: the previous overflow request, finished, may
        // still be in next's last report, and a busier next rightly loses to an idle third replica.
        await waitFor(async () => (await replicas()).filter((r) => r.id !== home).every((r) => r.load.inflight === 0), {
          timeoutMs: 30_000,
          intervalMs: 50,
          message: 'the replicas other than the home idle in the router view',
        });
        const r = await chat(
          router,
          { messages: [{ role: 'user', content: `overflow ${k}` }] },
          { 'x-warmpath-key': key },
        );
        expect(r.status).toBe(200);
        expect(r.text).toContain('"choices"');
        expect(r.replica).toBe(next);
        // Either the router saw the home's load (a first attempt: the cold step walks past the home), or the
        // home refused (a retry: the home is no longer a candidate, so `next` is the ring's first among them).
        expect(r.header).toMatch(/; step=cold; attempt=(first|retry)(;|$)/);
        if (r.header.includes('attempt=retry')) expect(r.route).toBe('ring');
        else expect(['spill', 'spill-two-choices']).toContain(r.route);
      }
      expect(
        holds.every((h) => !h.ended()),
        'the home stayed full throughout',
      ).toBe(true);
    } finally {
      for (const h of holds) h.abort();
    }
    await waitIdle();
    const back = await chat(router, { messages: [{ role: 'user', content: 'after' }] }, { 'x-warmpath-key': key });
    expect(back).toMatchObject({ status: 200, replica: home, route: 'ring' });
  });

  it('an adapter request goes to the replica where the adapter is hot', async () => {
    // Make the adapter hot on the replica last in its own ring order, so neither the
    // adapter's ring home nor (for most keys) a key's ring home would pick it.
    const order = await ringOrder(hashString(`adapter\u0000${model}\u0000${ADAPTER}`));
    const hot = order[order.length - 1]!;
    const h = await hold(hot, ADAPTER);
    try {
      await waitFor(async () => (await replicas()).find((r) => r.id === hot)?.hotAdapters.includes(ADAPTER) === true, {
        timeoutMs: 30_000,
        intervalMs: 100,
        message: `${ADAPTER} hot on ${hot}`,
      });
      for (let k = 0; k < 4; k++) {
        const r = await chat(
          router,
          { model: ADAPTER, messages: [{ role: 'user', content: `query ${k}` }] },
          { 'x-warmpath-key': `user-${k}` },
        );
        expect(r.status).toBe(200);
        expect(r).toMatchObject({ replica: hot, route: 'adapter-spill' });
      }
      expect(h.ended(), 'the adapter stayed hot throughout').toBe(false);
    } finally {
      h.abort();
    }
  });
});
