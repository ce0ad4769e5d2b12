import { describe, expect, it } from 'vitest';
import {
  EngineModel,
  NET_KV_BYTES_PER_S,
  peerFetchMs,
  PROFILES,
  promptIdentity,
  startSimServer,
  stepTimeMs,
} from '../src/index.ts';
import type { PeerKv, SimRequest } from '../src/index.ts';
import { postJson, state } from './helpers.ts';

const opts = { model: 'm', adapter: '', charsPerToken: 4, blockSize: 16 };
const A = 'a'.repeat(2000 * 4); // 2,000 tokens: 124 full blocks of 16, one token short of the whole prompt

function req(id: string, text: string): SimRequest {
  const p = promptIdentity(text, opts);
  return { id, promptTokens: p.promptTokens, blockHashes: p.blockHashes, maxTokens: 1 };
}

function drain(m: EngineModel, from: number): number {
  let now = from;
  while (!m.idle) {
    now = Math.max(now, m.nextWakeMs(now));
    const r = m.step(now);
    now = r.durationMs > 0 ? r.endMs : now + 0.001;
    m.checkInvariants();
  }
  return now;
}

describe('KV sharing between replicas', () => {
  it('fetches the prefix another replica holds at the network bandwidth, counted as cached', () => {
    const p = PROFILES.tiny;
    const holder = new EngineModel(p);
    drain(holder, 0);
    holder.submit(req('a', A), 0);
    const t = drain(holder, 0);
    const peers: PeerKv = { bytesPerS: NET_KV_BYTES_PER_S, held: (h, max) => holder.heldBlocks(h, max) };
    const alone = new EngineModel(p);
    const sharing = new EngineModel(p, { peers });
    const off = alone.submit(req('b', A), t);
    const on = sharing.submit(req('b', A), t);
    expect(sharing.probe(on.promptTokens, on.blockHashes).cachedTokens).toBe(124 * 16);
    drain(alone, t);
    drain(sharing, t);
    expect(off.cachedTokens).toBe(0);
    expect(on.cachedTokens).toBe(124 * 16);
    // One step: the fetch, then the 16 uncached tokens' prefill, at the whole prompt's context.
    const ttft = on.firstTokenMs - on.readyAtMs;
    expect(ttft).toBeCloseTo(stepTimeMs(p, 2000, 16, peerFetchMs(p, 124 * 16, NET_KV_BYTES_PER_S)), 9);
    expect(ttft).toBeLessThan(off.firstTokenMs - off.readyAtMs);
    expect(sharing.snapshot().prefixHitsTokens).toBe(0); // not the GPU's own hits
    // What the engine holds itself is not fetched again.
    const again = sharing.submit(req('c', A), ttft + t + 1);
    drain(sharing, ttft + t + 1);
    expect(again.firstTokenMs - again.readyAtMs).toBeLessThan(ttft);
  });
});

describe('KV sharing between live simulators', () => {
  const cached = async (url: string, prompt: string): Promise<number> => {
    const r = await postJson(`${url}/v1/completions`, { prompt, max_tokens: 1 });
    expect(r.status).toBe(200);
    return ((await r.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } }).usage
      .prompt_tokens_details.cached_tokens;
  };

  it('fetches a prefix another simulator holds over HTTP; an unreachable peer counts as holding nothing', async () => {
    const holder = await startSimServer({ port: 0, profile: 'tiny', speed: 50 });
    const dead = await startSimServer({ port: 0, profile: 'tiny', speed: 50 });
    const deadUrl = dead.url;
    await dead.close();
    const sharing = await startSimServer({ port: 0, profile: 'tiny', speed: 50, kvPeers: [deadUrl, holder.url] });
    const alone = await startSimServer({ port: 0, profile: 'tiny', speed: 50 });
    try {
      const text = 'k'.repeat(3000 * 4);
      expect(await cached(holder.url, text)).toBe(0);
      const blockSize = PROFILES.tiny.blockSize;
      // The holder's leading blocks of the prompt, less the last token (recomputed to sample, never cached).
      const full = Math.floor((3000 - 1) / blockSize) * blockSize;
      expect(await cached(sharing.url, text)).toBe(full);
      expect(await cached(alone.url, text)).toBe(0);
      const s = (await state(sharing.url)).peerKv as { peers: number; lookups: number; failed: number };
      expect(s).toMatchObject({ peers: 2, lookups: 1, failed: 1 });
      // Held whole here now: the next one asks nobody.
      expect(await cached(sharing.url, text)).toBe(full);
      expect(((await state(sharing.url)).peerKv as { lookups: number }).lookups).toBe(1);
      // Sharing turned on at runtime, as the launcher does once every simulator listens.
      const set = await postJson(`${alone.url}/sim/v1/kv-peers`, { peers: [holder.url] });
      expect(await set.json()).toEqual({ peers: [holder.url] });
      expect(await cached(alone.url, `${text}z`)).toBe(full);
    } finally {
      await Promise.all([holder.close(), sharing.close(), alone.close()]);
    }
  });

  it('answers a lookup with its leading held blocks and refuses malformed ones', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 50 });
    try {
      const text = 'q'.repeat(2000 * 4);
      await cached(sim.url, text);
      const id = promptIdentity(text, {
        model: sim.modelName,
        adapter: '',
        charsPerToken: 4,
        blockSize: PROFILES.tiny.blockSize,
      });
      const hex = [...id.blockHashes].map((h) => h.toString(16).padStart(16, '0'));
      const held = async (hashes: unknown) => (await postJson(`${sim.url}/sim/v1/held`, { hashes })).json();
      expect(await held(hex)).toEqual({ blocks: hex.length });
      expect(await held(['0'.repeat(16), ...hex])).toEqual({ blocks: 0 }); // leading blocks only
      expect((await postJson(`${sim.url}/sim/v1/held`, { hashes: ['not hex'] })).status).toBe(400);
      expect((await postJson(`${sim.url}/sim/v1/kv-peers`, { peers: ['ftp://x'] })).status).toBe(400);
    } finally {
      await sim.close();
    }
  });
});
