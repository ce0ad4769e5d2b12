/**
 * Emulation of SGLang model gateway's `cache_aware` policy (its default), per
 * BASELINES.md, for the benchmark. One instance per router: the tree is built
 * only from this router's own routing history, exactly as the gateway does
 * without its mesh.
 *
 * Steps:
 *  1. load = this router's in-flight count per worker. If
 *     max − min > balance_abs_threshold (64) and max > balance_rel_threshold
 *     (1.5) × min, the system is imbalanced: pick the least-loaded worker (and
 *     still insert the text under it).
 *  2. Else longest prefix match of the request text in the tree; match rate =
 *     matched chars / text chars; > cache_threshold (0.3) → the matched worker
 *     (least-loaded among those holding the deepest match), else least-loaded.
 *  3. Insert the text under the chosen worker; LRU-evict the tree every 120 s
 *     down to max_tree_size characters.
 * The gateway's tree is a character radix tree; here it is approximated by
 * 16-character chunks with chained hashes (a match is exact to within 16
 * characters), which keeps the emulation O(text / 16) per request.
 * Trade-off (of the peer): no knowledge of KV headroom or token-weighted load;
 * it learns only from its own decisions.
 */
import { canonicalText, chainHashes, prefixSeed } from '@warmpath/shared/wire';
import type { Replica } from '../../fleet/view.ts';
import { candidates } from '../eligible.ts';
import { NO_REPLICA, type Placement, type PlacementRequest, type Policy } from '../types.ts';

export const SGLANG_DEFAULTS = {
  cacheThreshold: 0.3,
  balanceAbsThreshold: 64,
  balanceRelThreshold: 1.5,
  evictionIntervalMs: 120_000, // 120 s
  maxTreeSizeChars: 2 ** 26, // the gateway's default max_tree_size
  chunkChars: 16,
} as const;

interface Node {
  workers: Map<string, number>; // worker id → last access (ms)
}

export function createSglangCacheAwarePolicy(): Policy {
  const d = SGLANG_DEFAULTS;
  const trees = new Map<string, Map<bigint, Node>>(); // per model
  let lastEviction = 0;
  let entries = 0;
  const cands: Replica[] = [];
  const texts = new WeakMap<object, BigUint64Array>();

  const chain = (req: PlacementRequest): BigUint64Array => {
    const key = req.body ?? req.info;
    let h = texts.get(key);
    if (h === undefined) {
      const text = req.body !== undefined ? canonicalText(req.body as Record<string, unknown>, req.info.kind) : '';
      h = chainHashes(text, d.chunkChars, prefixSeed(req.info.requested), Number.MAX_SAFE_INTEGER);
      texts.set(key, h);
    }
    return h;
  };

  function evict(now: number): void {
    if (now - lastEviction < d.evictionIntervalMs) return;
    lastEviction = now;
    const limit = d.maxTreeSizeChars / d.chunkChars;
    if (entries <= limit) return;
    const all: Array<[Map<bigint, Node>, bigint, string, number]> = [];
    for (const tree of trees.values()) for (const [h, n] of tree) for (const [w, t] of n.workers) all.push([tree, h, w, t]);
    all.sort((a, b) => a[3] - b[3]);
    for (let i = 0; i < all.length && entries > limit; i++) {
      const [tree, h, w] = all[i]!;
      const n = tree.get(h)!;
      n.workers.delete(w);
      if (n.workers.size === 0) tree.delete(h);
      entries--;
    }
  }

  return {
    name: 'sglang-cache-aware',
    place(req, view, local): Placement {
      candidates(req, view, local, cands);
      if (cands.length === 0) return NO_REPLICA;
      let min = Infinity;
      let max = -Infinity;
      let least = cands[0]!;
      for (const r of cands) {
        const f = local.inflight(r.id);
        if (f < min) {
          min = f;
          least = r;
        }
        if (f > max) max = f;
      }
      if (max - min > d.balanceAbsThreshold && max > d.balanceRelThreshold * min) return { replica: least, branch: 'sglang-balance' };
      const hashes = chain(req);
      const tree = trees.get(req.info.requested);
      if (tree === undefined || hashes.length === 0) return { replica: least, branch: 'sglang-least-load' };
      const ids = new Set(cands.map((r) => r.id));
      let depth = 0;
      let holders: string[] = [];
      for (let i = 0; i < hashes.length; i++) {
        const n = tree.get(hashes[i]!);
        if (n === undefined) break;
        const live = [...n.workers.keys()].filter((w) => ids.has(w));
        if (live.length === 0) break;
        depth = i + 1;
        holders = live;
      }
      const textChars = Math.max(1, req.info.promptChars);
      if ((depth * d.chunkChars) / textChars > d.cacheThreshold) {
        let pick: Replica | undefined;
        let best = Infinity;
        for (const r of cands) {
          if (!holders.includes(r.id)) continue;
          const f = local.inflight(r.id);
          if (f < best) {
            best = f;
            pick = r;
          }
        }
        if (pick !== undefined) return { replica: pick, branch: 'sglang-cache-hit' };
      }
      return { replica: least, branch: 'sglang-least-load' };
    },
    onDispatch(req, replica) {
      const hashes = chain(req);
      let tree = trees.get(req.info.requested);
      if (tree === undefined) trees.set(req.info.requested, (tree = new Map()));
      for (const h of hashes) {
        let n = tree.get(h);
        if (n === undefined) tree.set(h, (n = { workers: new Map() }));
        if (!n.workers.has(replica.id)) entries++;
        n.workers.set(replica.id, req.now);
      }
      evict(req.now);
    },
  };
}
