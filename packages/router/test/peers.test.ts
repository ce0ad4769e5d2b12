/** Behaviour of the peers' emulations, rule by rule as docs/PEERS.md states them. */
import { describe, expect, it } from 'vitest';
import { LocalState } from '../src/core/local.ts';
import { notifyDispatch, placeRequest } from '../src/placement/place.ts';
import { createDynamoKvPolicy } from '../src/placement/peers/dynamo.ts';
import { createKubeaiPrefixHashPolicy } from '../src/placement/peers/kubeai.ts';
import { createLlmdPolicy } from '../src/placement/peers/llmd.ts';
import { createSglangCacheAwarePolicy } from '../src/placement/peers/sglang.ts';
import { ChunkTree } from '../src/placement/peers/sglang-tree.ts';
import type { Policy, PlacementRequest } from '../src/placement/types.ts';
import type { FleetView } from '../src/fleet/view.ts';
import { CONFIG, chainOf, chat, makeState, makeView, preq } from './helpers.ts';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`);

/** Places and dispatches like the router does; returns the replica id. */
function route(p: Policy, req: PlacementRequest, view: FleetView, local: LocalState): string {
  const pl = placeRequest(p, req, view, local);
  if (pl.replica === undefined) return pl.branch;
  local.dispatch(pl.replica.id, 1, req.now);
  notifyDispatch(p, req, pl.replica, local);
  return pl.replica.id;
}

describe('sglang-cache-aware', () => {
  it('sends a repeated long prefix back to the worker it learned, from its own history only', () => {
    const view = makeView(ids(4).map((id) => makeState(id)));
    const p = createSglangCacheAwarePolicy();
    const local = new LocalState(CONFIG);
    const first = route(p, preq(chat('question one')), view, local);
    // Same system prompt (≈ 3.5k chars of a ≈ 3.5k-char text): match rate > 0.3 → same worker.
    expect(placeRequest(p, preq(chat('question two')), view, local)).toMatchObject({
      branch: 'sglang-cache-hit',
      replica: { id: first },
    });
    // A fresh instance (another router) has not seen it: no hit.
    expect(
      placeRequest(createSglangCacheAwarePolicy(), preq(chat('question two')), view, new LocalState(CONFIG)).branch,
    ).toBe('sglang-least-load');
  });

  it('falls back to the least-loaded worker when imbalanced (abs > 64 and rel > 1.5)', () => {
    const view = makeView(ids(2).map((id) => makeState(id)));
    const p = createSglangCacheAwarePolicy();
    const local = new LocalState(CONFIG);
    const first = route(p, preq(chat('q')), view, local);
    for (let i = 0; i < 70; i++) local.dispatch(first, 1, Date.now());
    const pl = placeRequest(p, preq(chat('q2')), view, local);
    expect(pl.branch).toBe('sglang-balance');
    expect(pl.replica!.id).not.toBe(first);
  });
});

describe('llm-d endpoint picker', () => {
  it('approx: scores the prefix it routed before, so a repeated prompt returns to its pod', () => {
    const view = makeView(ids(3).map((id) => makeState(id)));
    const p = createLlmdPolicy('approx', { random: () => 0.5 });
    const local = new LocalState(CONFIG);
    const first = route(p, preq(chat('hello')), view, local);
    for (let i = 0; i < 5; i++) expect(route(p, preq(chat('hello')), view, local)).toBe(first);
  });

  it('precise: prefers the pod whose true cache holds the prefix', () => {
    const body = chat('precise');
    const chain = chainOf(body);
    const view = makeView(
      ids(3).map((id) => makeState(id, id === 'r2' ? { digest: { from: -1, added: chain, size: chain.length } } : {})),
    );
    expect(placeRequest(createLlmdPolicy('precise'), preq(body), view, new LocalState(CONFIG)).replica?.id).toBe('r2');
  });

  it('KV and queue scorers pull away from a loaded pod', () => {
    const view = makeView([makeState('a', { load: { waiting: 3, kvUsedTokens: 70_000 } }), makeState('b')]);
    expect(placeRequest(createLlmdPolicy('approx'), preq(chat('x')), view, new LocalState(CONFIG)).replica?.id).toBe(
      'b',
    );
  });

  it('saturation detector: every pod saturated (queue ≥ 5 or KV ≥ 0.8) → saturated, not a colder pod', () => {
    const view = makeView([
      makeState('a', { load: { waiting: 5 } }),
      makeState('b', { load: { kvUsedTokens: 80_000 } }),
    ]);
    expect(placeRequest(createLlmdPolicy('approx'), preq(chat('x')), view, new LocalState(CONFIG)).branch).toBe(
      'saturated',
    );
  });
});

describe('dynamo-kv', () => {
  it('minimizes prefill blocks + active blocks', () => {
    const body = chat('dynamo '.repeat(300));
    const chain = chainOf(body);
    const warm = makeView([
      makeState('cold'),
      makeState('warm', { digest: { from: -1, added: chain, size: chain.length } }),
    ]);
    expect(
      placeRequest(
        createDynamoKvPolicy({ chunkChars: 256, charsPerToken: 4 }),
        preq(body),
        warm,
        new LocalState(CONFIG),
      ).replica?.id,
    ).toBe('warm');
    // Enough active work on the warm worker (requests routed there, queued or running) outweighs the prefill it would save.
    const busy = makeView([
      makeState('cold'),
      makeState('warm', { digest: { from: -1, added: chain, size: chain.length }, load: { inflightTokens: 60_000 } }),
    ]);
    expect(
      placeRequest(
        createDynamoKvPolicy({ chunkChars: 256, charsPerToken: 4 }),
        preq(body),
        busy,
        new LocalState(CONFIG),
      ).replica?.id,
    ).toBe('cold');
  });
});

describe('kubeai-prefix-hash', () => {
  it('keys on adapter + first 100 chars of the first user message, with (load+1) ≤ (total+1)/n × 1.25', () => {
    const view = makeView(ids(4).map((id) => makeState(id)));
    const p = createKubeaiPrefixHashPolicy();
    const local = new LocalState(CONFIG);
    const user = 'u'.repeat(100);
    const home = route(p, preq(chat(user + 'tail one')), view, local);
    // Same first 100 chars, different tail and system prompt: same key, same home.
    expect(placeRequest(p, preq(chat(user + 'tail two', {}, 'other system')), view, local).replica?.id).toBe(home);
    // Load the home until the bound refuses it: with total 4 on 4 endpoints, limit = (5/4) × 1.25 = 1.56.
    for (let i = 0; i < 3; i++) local.dispatch(home, 1, Date.now());
    const pl = placeRequest(p, preq(chat(user)), view, local);
    expect(pl.branch).toBe('kubeai-walk');
    expect(pl.replica!.id).not.toBe(home);
  });

  it("every endpoint over the bound → the key's home anyway (kubeai-home-over-bound); an idle fleet of 4 is: 0 + 1 > (0 + 1) / 4 × 1.25", () => {
    const view = makeView(ids(4).map((id) => makeState(id)));
    const p = createKubeaiPrefixHashPolicy();
    const first = placeRequest(p, preq(chat('idle')), view, new LocalState(CONFIG));
    expect(first.branch).toBe('kubeai-home-over-bound');
    expect(placeRequest(p, preq(chat('idle')), view, new LocalState(CONFIG)).replica?.id).toBe(first.replica!.id);
    // One endpoint alone: 1 ≤ 1 × 1.25, within the bound.
    expect(placeRequest(p, preq(chat('idle')), makeView([makeState('solo')]), new LocalState(CONFIG)).branch).toBe(
      'kubeai-home',
    );
  });
});

describe('sglang-cache-aware history (ChunkTree)', () => {
  it('keeps workers in first-sent order and evicts the least recently sent pairs', () => {
    const tree = new ChunkTree(1000);
    tree.record(1n, 0, 1000);
    tree.record(1n, 1, 1005);
    tree.record(2n, 0, 1001);
    tree.record(1n, 0, 1010); // refreshes (1, worker 0) in place
    tree.record(3n, 2, 1002);
    const of = (h: bigint): number[] => {
      const out: number[] = [];
      return tree.workersOf(h, (w) => out.push(w)) ? out : [-1];
    };
    expect(of(1n)).toEqual([0, 1]);
    expect(tree.pairs).toBe(4);
    // Oldest first: (2, w0) at 1001, then (3, w2) at 1002.
    expect(tree.evictOldest(2)).toBe(2);
    expect(of(2n)).toEqual([-1]);
    expect(of(3n)).toEqual([-1]);
    expect(of(1n)).toEqual([0, 1]);
    expect(tree.evictOldest(1)).toBe(1); // (1, w1) at 1005
    expect(of(1n)).toEqual([0]);
    expect(tree.pairs).toBe(1);
  });

  it('evicts a million pairs down to the count asked', () => {
    const tree = new ChunkTree(0);
    for (let i = 0; i < 1_000_000; i++) tree.record(BigInt(i) * 0x9e3779b97f4a7c15n, i % 10, i / 1000);
    expect(tree.pairs).toBe(1_000_000);
    expect(tree.evictOldest(600_000)).toBe(600_000);
    expect(tree.pairs).toBe(400_000);
  });
});
