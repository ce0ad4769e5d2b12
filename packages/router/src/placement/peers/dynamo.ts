/**
 * Emulation of NVIDIA Dynamo's KV router (BASELINES.md).
 *
 * Steps: for each worker, cost = kv_overlap_score_weight (1.0) × blocks this
 * request would have to prefill there (prompt blocks − blocks already cached,
 * from the global cache view) + decode blocks already active on it (published
 * KV in use plus what this router sent since, plus this request's own); pick
 * the minimum (temperature 0; ties → fewest active blocks, then id).
 * The cache view: Dynamo builds a global radix tree from the engines' KV
 * events; here it is the replicas' published digests, Warmpath's equivalent.
 * Complexity: O(candidates + matched depth).
 * Trade-off (of the peer): a pure cost minimum has no load bound, so a hot
 * prefix can keep attracting work until its cost of active blocks outweighs
 * the prefill it saves.
 */
import type { Replica } from '../../fleet/view.ts';
import { candidates } from '../eligible.ts';
import { NO_REPLICA, type Placement, type Policy, type PolicyOptions } from '../types.ts';

export const DYNAMO_DEFAULTS = {
  overlapScoreWeight: 1.0,
  blockTokens: 16, // the engine's KV block
} as const;

export function createDynamoKvPolicy(opts: Pick<PolicyOptions, 'chunkChars' | 'charsPerToken'>): Policy {
  const d = DYNAMO_DEFAULTS;
  const tokensPerChunk = opts.chunkChars / opts.charsPerToken;
  const cands: Replica[] = [];
  return {
    name: 'dynamo-kv',
    place(req, view, local): Placement {
      candidates(req, view, local, cands);
      if (cands.length === 0) return NO_REPLICA;
      view.scanWarmth(req.info.hashes);
      const promptBlocks = Math.ceil(req.info.promptTokens / d.blockTokens);
      const requestBlocks = Math.ceil((req.info.promptTokens + req.info.maxTokens) / d.blockTokens);
      let best: Replica | undefined;
      let bestCost = Infinity;
      let bestActive = Infinity;
      for (const r of cands) {
        const cached = Math.min(promptBlocks, Math.floor((view.depthOf(r.slot) * tokensPerChunk) / d.blockTokens));
        const active = (r.state.load.kvUsedTokens + local.addedTokens(r)) / d.blockTokens + requestBlocks;
        const cost = d.overlapScoreWeight * (promptBlocks - cached) + active;
        if (cost < bestCost || (cost === bestCost && active < bestActive)) {
          best = r;
          bestCost = cost;
          bestActive = active;
        }
      }
      return { replica: best!, branch: 'dynamo-cost' };
    },
  };
}
