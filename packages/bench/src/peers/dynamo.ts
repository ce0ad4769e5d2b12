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
 * P/D (a disaggregated fleet, Policy.pd), Dynamo's conditional
 * disaggregation: the KV router above picks the decode worker; its
 * disaggregated router prefills remotely only when the prompt less the
 * decode worker's prefix hit exceeds max_local_prefill_length (1000 tokens)
 * and the prefill queue holds fewer than max_prefill_queue_size (2)
 * requests — else the decode worker prefills locally. Remote prefills wait
 * in one queue that the first free prefill worker pulls from; here the
 * queue is the prefill workers' published waiting requests, and the pull is
 * the prefill worker with the shortest prefill queue.
 * Complexity: O(candidates + matched depth).
 * Trade-off (of the peer): a pure cost minimum has no load bound, so a hot
 * prefix can keep attracting work until its cost of active blocks outweighs
 * the prefill it saves.
 */
import type { Candidate, CandidateTable, Placement, PdRule, Policy, RouterConfig, Warmth } from '@warmpath/router';

export const DYNAMO_DEFAULTS = {
  overlapScoreWeight: 1.0,
  /** The overlap credit of a block only in host memory (a GPU block's is 1). */
  hostCacheHitWeight: 0.75,
  blockTokens: 16, // the engine's KV block
  maxLocalPrefillLength: 1000,
  maxPrefillQueueSize: 2,
} as const;

/** The emulation's parameters: the fleet's prefix chunk, to turn matched chunks into blocks. */
export type DynamoOptions = Pick<RouterConfig, 'chunkChars' | 'charsPerToken'>;

/** The prefill worker that pulls a remote prefill from the queue: the shortest prefill queue (the first such). */
function pullingWorker(t: CandidateTable): Placement {
  let best: Candidate = t.rows[0]!;
  for (const c of t.rows) if (c.queue < best.queue) best = c;
  return { replica: best.replica, branch: 'dynamo-prefill-queue' };
}

/** Dynamo's conditional disaggregation (module header). */
function conditional(tokensPerChunk: number): PdRule {
  const d = DYNAMO_DEFAULTS;
  return {
    uncached(req, _t, i: number, warmth: Warmth): number {
      const hit = Math.floor(((warmth.digest[i] ?? 0) * tokensPerChunk) / d.blockTokens) * d.blockTokens;
      return Math.max(0, req.info.promptTokens - hit);
    },
    remote(_req, uncached, prefill): boolean {
      let queued = 0;
      for (const c of prefill.rows) queued += c.replica.state.load.waiting;
      return uncached > d.maxLocalPrefillLength && queued < d.maxPrefillQueueSize;
    },
    prefill: (_req, t) => pullingWorker(t),
  };
}

export function createDynamoKvPolicy(opts: DynamoOptions): Policy {
  const d = DYNAMO_DEFAULTS;
  const tokensPerChunk = opts.chunkChars / opts.charsPerToken;
  return {
    pd: conditional(tokensPerChunk),
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
