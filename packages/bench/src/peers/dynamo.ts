/**
 * Emulation of NVIDIA Dynamo's KV router (docs/PEERS.md).
 *
 * Steps: for each worker, cost = kv_overlap_score_weight (1.0) × blocks this
 * request would have to prefill there (prompt blocks − blocks already cached,
 * from the global cache view) + blocks active on it — every request routed
 * there and not finished, queued in the engine or running (the replica's
 * in-flight work as published, plus what this router sent since), as
 * Dynamo's router counts its own active sequences — plus this request's; pick
 * the minimum (temperature 0; ties → fewest active blocks, then id).
 * The cache view: Dynamo builds a global radix tree from the engines' KV
 * events; here it is the replicas' published digests, Warmpath's equivalent.
 * A block only in host memory (an engine offloading to CPU) is credited
 * host_cache_hit_weight (0.75) of a GPU block.
 * Complexity: O(candidates + matched depth).
 * Trade-off (of the peer): a pure cost minimum has no load bound, so a hot
 * prefix can keep attracting work until its cost of active blocks outweighs
 * the prefill it saves.
 */
import type { Candidate, Placement, Policy, RouterConfig } from '@warmpath/router';

export const DYNAMO_DEFAULTS = {
  overlapScoreWeight: 1.0,
  /** The overlap credit of a block only in host memory (a GPU block's is 1). */
  hostCacheHitWeight: 0.75,
  blockTokens: 16, // the engine's KV block
} as const;

/** The emulation's parameters: the fleet's prefix chunk, to turn matched chunks into blocks. */
export type DynamoOptions = Pick<RouterConfig, 'chunkChars' | 'charsPerToken'>;

export function createDynamoKvPolicy(opts: DynamoOptions): Policy {
  const d = DYNAMO_DEFAULTS;
  const tokensPerChunk = opts.chunkChars / opts.charsPerToken;
  return {
    name: 'dynamo-kv',
    select(req, t, warmth): Placement {
      const promptBlocks = Math.ceil(req.info.promptTokens / d.blockTokens);
      const requestBlocks = Math.ceil((req.info.promptTokens + req.info.maxTokens) / d.blockTokens);
      let best: Candidate | undefined;
      let bestCost = Infinity;
      let bestActive = Infinity;
      for (let i = 0; i < t.rows.length; i++) {
        const c = t.rows[i]!;
        // Overlap credit: a block on the GPU counts 1, one only in host memory hostCacheHitWeight.
        const gpu = warmth.gpu?.[i] ?? warmth.digest[i]!;
        const chunks = gpu + d.hostCacheHitWeight * (warmth.digest[i]! - gpu);
        const cached = Math.min(promptBlocks, Math.floor((chunks * tokensPerChunk) / d.blockTokens));
        const active = c.load / d.blockTokens + requestBlocks;
        const cost = d.overlapScoreWeight * (promptBlocks - cached) + active;
        if (cost < bestCost || (cost === bestCost && active < bestActive)) {
          best = c;
          bestCost = cost;
          bestActive = active;
        }
      }
      return { replica: best!.replica, branch: 'dynamo-cost' };
    },
  };
}
