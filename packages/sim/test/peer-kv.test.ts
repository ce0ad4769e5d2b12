import { describe, expect, it } from 'vitest';
import { EngineModel, NET_KV_BYTES_PER_S, peerFetchMs, PROFILES, promptIdentity, stepTimeMs } from '../src/index.ts';
import type { PeerKv, SimRequest } from '../src/index.ts';

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
