/**
 * Tiers and peers at the router: a digest's chunks only in host memory
 * (DigestDelta.host, .gpu, a snapshot's host list) and what placement makes
 * of them (docs/PLACEMENT.md, "Tiers and peers").
 */
import { describe, expect, it } from 'vitest';
import { LocalState } from '../src/core/local.ts';
import { routerConfig } from '../src/config.ts';
import { placeRequest } from '../src/placement/place.ts';
import { warmpathOptions } from '../src/placement/registry.ts';
import { createWarmpathPolicy } from '../src/placement/warmpath/index.ts';
import { CONFIG, chainOf, chat, makeState, makeView, preq } from './helpers.ts';

const H = (...xs: number[]) =>
  BigUint64Array.from(xs.map((x) => (BigInt(x) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn));
const none = new BigUint64Array(0);

describe('digest tiers', () => {
  it('marks held chunks host-only, back on the GPU, and counts the GPU depth up to the first host chunk', () => {
    const view = makeView();
    const chain = H(1, 2, 3, 4, 5);
    view.apply(makeState('a', { seq: 1, digest: { from: -1, added: chain.slice(0, 4), size: 4 } }));
    const a = view.replicas.get('a')!;
    view.scanWarmth(chain);
    expect([view.depthOf(a.slot), view.depthOf(a.slot, chain)]).toEqual([4, 4]);
    // Chunks 2 and 3 go to host memory; chunk 5's hash is not held: ignored, the size stays 4.
    const host = BigUint64Array.from([chain[2]!, chain[3]!, chain[4]!]);
    view.apply(makeState('a', { seq: 2, digest: { from: 1, added: none, removed: none, host, size: 4 } }));
    view.scanWarmth(chain);
    expect([view.depthOf(a.slot), view.depthOf(a.slot, chain)]).toEqual([4, 2]);
    expect(a.digestSize).toBe(4);
    // Chunk 2 is reloaded (gpu); chunk 3 stays in host memory.
    view.apply(
      makeState('a', { seq: 3, digest: { from: 2, added: none, removed: none, gpu: chain.slice(2, 3), size: 4 } }),
    );
    view.scanWarmth(chain);
    expect(view.depthOf(a.slot, chain)).toBe(3);
    // Removed and added again: an added chunk is on the GPU.
    view.apply(makeState('a', { seq: 4, digest: { from: 3, added: none, removed: chain.slice(3, 4), size: 3 } }));
    view.apply(makeState('a', { seq: 5, digest: { from: 4, added: chain.slice(3, 4), removed: none, size: 4 } }));
    view.scanWarmth(chain);
    expect(view.depthOf(a.slot, chain)).toBe(4);
  });

  it('takes the tiers from a self-contained digest, and a later one without tiers clears them', () => {
    const view = makeView();
    const chain = H(1, 2, 3);
    view.apply(makeState('a', { seq: 1, digest: { from: -1, added: chain, host: chain.slice(1), size: 3 } }));
    const a = view.replicas.get('a')!;
    view.scanWarmth(chain);
    expect(view.depthOf(a.slot, chain)).toBe(1);
    view.apply(makeState('a', { boot: 'a-boot-2', bootAt: 2, seq: 1, digest: { from: -1, added: chain, size: 3 } }));
    view.scanWarmth(chain);
    expect(view.depthOf(a.slot, chain)).toBe(3);
  });
});

describe('placement by tier', () => {
  const body = chat('a long user turn '.repeat(60));
  const chain = chainOf(body);
  const n = chain.length;
  /** r0 holds the whole chain, its last `hostChunks` only in host memory; r1 holds all but its last 2 chunks on the GPU. */
  const fleet = (hostChunks: number) =>
    makeView([
      makeState('r0', { digest: { from: -1, added: chain, host: chain.slice(n - hostChunks), size: n } }),
      makeState('r1', { digest: { from: -1, added: chain.slice(0, n - 2), size: n - 2 } }),
    ]);
  const place = (view: ReturnType<typeof makeView>, set: Record<string, unknown> = {}) =>
    placeRequest(
      createWarmpathPolicy(warmpathOptions(routerConfig({ ...set }))),
      preq(body),
      view,
      new LocalState(CONFIG),
    );

  it('a host chunk is worth its prefill less its reload: a short reload beats a GPU replica two chunks shorter', () => {
    expect(n).toBeGreaterThan(8);
    expect(place(fleet(4))).toMatchObject({ branch: 'warm', replica: { id: 'r0' } });
  });

  it('a host chunk whose reload costs its prefill is worth nothing, and many of them lose to the GPU', () => {
    expect(place(fleet(4), { hostReloadCost: 1 }).replica?.id).toBe('r1');
    // Reload at half a prefill: eight host chunks are worth four, less than r1's two-chunk shortfall makes up.
    expect(place(fleet(8), { hostReloadCost: 0.5 }).replica?.id).toBe('r1');
  });

  it('without host chunks, the tier settings change nothing', () => {
    const view = makeView([
      makeState('r0', { digest: { from: -1, added: chain, size: n } }),
      makeState('r1', { digest: { from: -1, added: chain.slice(0, n - 2), size: n - 2 } }),
    ]);
    for (const hostReloadCost of [0, 0.15, 1]) expect(place(view, { hostReloadCost }).replica?.id).toBe('r0');
  });

  it('with KV sharing, a replica holding nothing is credited the deepest match at its transfer cost', () => {
    // r0 is busy past every bound; r2 holds nothing. Without sharing r2 is cold; with it, warm at 0.8 of r0's depth.
    const busy = { inflightTokens: 1_000_000, prefillTokens: 1_000_000 };
    const view = makeView([
      makeState('r0', { load: busy, digest: { from: -1, added: chain, size: n } }),
      makeState('r2', {}),
    ]);
    const off = place(view);
    const on = place(view, { peerFetchCost: 0.2 });
    expect(on.replica?.id).toBe('r2');
    expect(on.branch).not.toBe(off.branch);
    expect(on.branch).toMatch(/^warm/);
  });

  it('with KV sharing, a busy holder within the bound loses a long prompt to an idle replica by the shared cost', () => {
    // Both within the bound (no in-flight work counted); r0 holds the prompt, reports a prefill queue and 30 running.
    const at = (running: number, prefillTokens: number) =>
      makeView([
        makeState('r0', { load: { running, prefillTokens }, digest: { from: -1, added: chain, size: n } }),
        makeState('r2', {}),
      ]);
    const moved = place(at(30, 3_000), { peerFetchCost: 0.2 });
    expect(moved).toMatchObject({ branch: 'warm', by: 'cost', replica: { id: 'r2' } });
    // The same busy holder keeps it without sharing, and an idle holder keeps it with sharing.
    expect(place(at(30, 3_000)).replica?.id).toBe('r0');
    expect(place(at(0, 0), { peerFetchCost: 0.2 }).replica?.id).toBe('r0');
  });

  it("a cold prompt leaves the ring's choices only for a queue shorter by more than a repeat's miss: its prefill, with KV sharing its fetch", () => {
    const cold = chat('a long document nobody sent before '.repeat(300));
    const ids = ['r0', 'r1', 'r2', 'r3', 'r4', 'r5'];
    const placeCold = (view: ReturnType<typeof makeView>, set: Record<string, unknown> = {}) =>
      placeRequest(createWarmpathPolicy(warmpathOptions(routerConfig(set))), preq(cold), view, new LocalState(CONFIG));
    const queued = (busy: string[], tokens: number) =>
      makeView(ids.map((id) => makeState(id, { load: { prefillTokens: busy.includes(id) ? tokens : 0 } })));
    const home = placeCold(queued([], 0)).replica!.id;
    const second = placeCold(queued([home], 6_000)).replica!.id;
    // The two choices each queue a little less than the prompt's own prefill: a repeat's miss there would cost more.
    const view = queued([home, second], 2_000);
    expect(placeCold(view)).toMatchObject({ branch: 'ring', replica: { id: home } });
    // With KV sharing a repeat fetches the prompt at a fifth of its prefill: the queue is worth leaving.
    const shared = placeCold(view, { peerFetchCost: 0.2 });
    expect(shared.branch).toBe('spill-least-queued');
    expect([home, second]).not.toContain(shared.replica!.id);
  });

  it('with KV sharing, a holder whose prefix is in host memory keeps it: the reload costs the request alone, not the running sequences', () => {
    const long = chat('a long user turn '.repeat(600));
    const all = chainOf(long);
    const m = all.length;
    // r0 holds the whole prefix in host memory only, runs 10 sequences; r2 holds nothing and could fetch it from r0.
    const view = makeView([
      makeState('r0', {
        load: { running: 10, prefillTokens: 500 },
        digest: { from: -1, added: all, host: all, size: m },
      }),
      makeState('r2', {}),
    ]);
    const placeLong = (set: Record<string, unknown>) =>
      placeRequest(createWarmpathPolicy(warmpathOptions(routerConfig(set))), preq(long), view, new LocalState(CONFIG));
    expect(placeLong({ peerFetchCost: 0.2 }).replica?.id).toBe('r0');
    // A fetch is charged to the receiver's steps: the same prefix on a peer only moves it to r2 (r0 holds nothing then).
    const fetched = makeView([
      makeState('r0', { load: { running: 10, prefillTokens: 500 } }),
      makeState('r1', { load: { running: 10, prefillTokens: 500 }, digest: { from: -1, added: all, size: m } }),
      makeState('r2', {}),
    ]);
    const p = placeRequest(
      createWarmpathPolicy(warmpathOptions(routerConfig({ peerFetchCost: 0.2 }))),
      preq(long),
      fetched,
      new LocalState(CONFIG),
    );
    expect(p.replica?.id).not.toBe('r0');
  });
});
