/**
 * Emulation of SGLang model gateway's `cache_aware` policy (its default), per
 * docs/PEERS.md, for the benchmark. One instance per router: the tree is built
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
 * characters), which keeps the emulation O(text / 16) per request; the
 * chunks are held compactly (sglang-tree.ts) so the emulation's memory stays
 * bounded, as the gateway bounds its own.
 * P/D (a disaggregated fleet, Policy.pd): the gateway's PD mode pairs every
 * request, a prefill worker and a decode worker each by cache_aware (its
 * default for both pools), and never prefills on the decode worker.
 * Trade-off (of the peer): no knowledge of KV headroom or token-weighted load;
 * it learns only from its own decisions.
 */
import { canonicalText, chainHashes, prefixSeed } from '@warmpath/shared/wire';
import {
  rowOf,
  type Candidate,
  type CandidateTable,
  type Placement,
  type PlacementRequest,
  type Policy,
} from '@warmpath/router';
import { ChunkTree, WORKER_SPACE } from './sglang-tree.ts';

export const SGLANG_DEFAULTS = {
  cacheThreshold: 0.3,
  balanceAbsThreshold: 64,
  balanceRelThreshold: 1.5,
  evictionIntervalMs: 120_000, // 120 s
  maxTreeSizeChars: 2 ** 26, // the gateway's default max_tree_size
  chunkChars: 16,
} as const;

/** The longest prefix of `hashes` in the tree that a candidate holds: its depth (chunks) and those candidates. */
function longestMatch(
  tree: ChunkTree,
  workers: readonly string[],
  hashes: BigUint64Array,
  t: CandidateTable,
): { depth: number; holders: string[] } {
  let depth = 0;
  let holders: string[] = [];
  for (let i = 0; i < hashes.length; i++) {
    const live: string[] = [];
    const known = tree.workersOf(hashes[i]!, (w) => {
      if (rowOf(t, workers[w]!) >= 0) live.push(workers[w]!);
    });
    if (!known || live.length === 0) break;
    depth = i + 1;
    holders = live;
  }
  return { depth, holders };
}

/** The candidate with the fewest in-flight requests here (the first such), and the min and max of those counts. */
function leastInflight(t: CandidateTable): { least: Candidate; min: number; max: number } {
  let min = Infinity;
  let max = -Infinity;
  let least = t.rows[0]!;
  for (const c of t.rows) {
    if (c.inflight < min) {
      min = c.inflight;
      least = c;
    }
    if (c.inflight > max) max = c.inflight;
  }
  return { least, min, max };
}

export function createSglangCacheAwarePolicy(): Policy {
  const d = SGLANG_DEFAULTS;
  // One tree for every model: the chunk hashes are seeded with the model, so models never share an entry.
  let tree: ChunkTree | undefined;
  const workers: string[] = [];
  const workerIndex = new Map<string, number>();
  let lastEviction = 0;
  // A memo keyed by the request body: select and onDispatch hash the text once; it cannot change an answer.
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
    if (tree !== undefined && tree.pairs > limit) tree.evictOldest(tree.pairs - limit);
  }

  return {
    name: 'sglang-cache-aware',
    pd: { uncached: (req) => req.info.promptTokens, remote: () => true },
    select(req, t): Placement {
      const { least, min, max } = leastInflight(t);
      if (max - min > d.balanceAbsThreshold && max > d.balanceRelThreshold * min)
        return { replica: least.replica, branch: 'sglang-balance' };
      const hashes = chain(req);
      if (tree === undefined || hashes.length === 0) return { replica: least.replica, branch: 'sglang-least-load' };
      const { depth, holders } = longestMatch(tree, workers, hashes, t);
      const textChars = Math.max(1, req.info.promptChars);
      if ((depth * d.chunkChars) / textChars > d.cacheThreshold) {
        let pick: Candidate | undefined;
        for (const c of t.rows)
          if (holders.includes(c.replica.id) && (pick === undefined || c.inflight < pick.inflight)) pick = c;
        if (pick !== undefined) return { replica: pick.replica, branch: 'sglang-cache-hit' };
      }
      return { replica: least.replica, branch: 'sglang-least-load' };
    },
    onDispatch(req, replica) {
      const hashes = chain(req);
      tree ??= new ChunkTree(req.now);
      let w = workerIndex.get(replica.id);
      if (w === undefined) {
        if (workers.length >= WORKER_SPACE) throw new Error(`sglang-cache-aware: more than ${WORKER_SPACE} workers`);
        workerIndex.set(replica.id, (w = workers.length));
        workers.push(replica.id);
      }
      for (const h of hashes) tree.record(h, w, req.now);
      evict(req.now);
    },
  };
}
