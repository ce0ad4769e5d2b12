/**
 * Emulation of the llm-d / Gateway API Inference Extension endpoint picker
 * (docs/PEERS.md), approximate and precise variants.
 *
 * Steps:
 *  1. Saturation detector: a pod with waiting queue ≥ 5 or KV usage ≥ 0.8 (or
 *     metrics older than the staleness bound) is saturated; if every candidate
 *     is, the request is queued/shed rather than sent to a colder pod.
 *  2. Scorers, weighted: prefix-cache 3, KV-cache utilization 2, queue 2 (and
 *     LoRA affinity 1 for adapter requests: 1.0 active, 0.8 free slot, 0 full).
 *     - approximate prefix: the prompt bytes (chat: the JSON of the messages)
 *       in 64-character blocks, chained xxhash64 seeded with the model name,
 *       at most 256 blocks; an LRU index per pod of 31,250 blocks, updated
 *       with the pod it picked (this router's own history only);
 *       score = longest consecutive matched blocks / total blocks.
 *     - precise prefix: the same score from the engines' true cache contents;
 *       here the replicas' published digests (Warmpath's stand-in for KV
 *       events): matched chunks / total chunks, a chunk only in host memory
 *       (an engine offloading to CPU) weighted 0.8, as the KV-cache
 *       manager's tier weights (GPU 1.0, CPU 0.8).
 *     - KV: 1 − KV usage. Queue: min-max normalized waiting (shortest → 1).
 *  3. Max total score; ties broken at random.
 * P/D (a disaggregated fleet, Policy.pd): the decode profile (the same
 * scorers over the decode pods) picks the decode pod; the prefix-based P/D
 * decider then splits the request when its uncached tokens on that pod —
 * the prompt (its characters / 4) less the prefix score's matched tokens —
 * reach nonCachedTokens (16, as llm-d's P/D guides configure it); the
 * prefill profile (the same scorers over the prefill pods) picks the prefill
 * pod. The approximate scorer matches at most 256 blocks (4,096 tokens), so
 * a longer prompt is always split.
 * Deviation: GIE scrapes every 50 ms and treats metrics older than 200 ms as
 * stale; Warmpath states arrive every 250 ms, so the bound here is 1 s.
 * Complexity: O(candidates + blocks).
 */
import { chainHashes, prefixSeed, stableJson } from '@warmpath/shared/wire';
import {
  SATURATED,
  type CandidateTable,
  type PdRule,
  type Placement,
  type PlacementRequest,
  type Policy,
  type RandomOptions,
  type Replica,
  type Warmth,
} from '@warmpath/router';

export const LLMD_DEFAULTS = {
  prefixWeight: 3,
  kvWeight: 2,
  queueWeight: 2,
  loraWeight: 1,
  /** The precise scorer's weight of a block only in host memory (a GPU block's is 1). */
  cpuWeight: 0.8,
  blockChars: 64,
  maxBlocks: 256,
  lruBlocksPerPod: 31_250,
  saturationQueue: 5,
  saturationKv: 0.8,
  staleMs: 1_000,
  /** The P/D decider's threshold: a request with at least this many uncached tokens on its decode pod is split. */
  pdNonCachedTokens: 16,
  /** The decider's characters per token (GIE's AverageCharactersPerToken). */
  charsPerToken: 4,
} as const;

/** The emulation's parameters: its ties' random source, and the fleet's prefix chunk (the precise decider's matched tokens). */
export interface LlmdOptions extends RandomOptions {
  readonly chunkChars?: number;
  readonly charsPerToken?: number;
}

class Lru {
  readonly #m = new Map<bigint, true>();
  readonly #cap: number;
  constructor(cap: number) {
    this.#cap = cap;
  }
  has(h: bigint): boolean {
    return this.#m.has(h);
  }
  add(h: bigint): void {
    this.#m.delete(h);
    this.#m.set(h, true);
    if (this.#m.size > this.#cap) this.#m.delete(this.#m.keys().next().value!);
  }
}

function promptBytes(req: PlacementRequest): string {
  const b = req.body;
  if (b === undefined) return '';
  if (Array.isArray(b.messages)) return stableJson(b.messages);
  if (typeof b.prompt === 'string') return b.prompt;
  return stableJson(b.input ?? b.prompt ?? '');
}

/**
 * The P/D decider's uncached tokens on a decode pod: the prompt's tokens
 * less the prefix scorer's matched ones — `approxBlocks` blocks matched in
 * the approximate index, or (precise, undefined) `depth` chunks of the pod's
 * published digest.
 */
function uncachedTokens(
  req: PlacementRequest,
  opts: LlmdOptions,
  approxBlocks: number | undefined,
  depth: number,
): number {
  const d = LLMD_DEFAULTS;
  const input = promptBytes(req).length / d.charsPerToken;
  if (approxBlocks !== undefined) return Math.max(0, input - (approxBlocks * d.blockChars) / d.charsPerToken);
  // The precise index knows the cache to its chunk: a whole chain matched leaves less than a chunk, taken as none.
  if (depth > 0 && depth >= req.info.hashes.length) return 0;
  return Math.max(0, input - (depth * (opts.chunkChars ?? 0)) / (opts.charsPerToken ?? 1));
}

/** The P/D rule (module header): split at nonCachedTokens uncached tokens; `approx` reads the approximate index (undefined: precise). */
function pdDecider(opts: LlmdOptions, approx: ((req: PlacementRequest, id: string) => number) | undefined): PdRule {
  return {
    uncached: (req, t, i, warmth) =>
      uncachedTokens(req, opts, approx?.(req, t.rows[i]!.replica.id), warmth.digest[i] ?? 0),
    remote: (_req, tokens) => tokens >= LLMD_DEFAULTS.pdNonCachedTokens,
  };
}

export function createLlmdPolicy(variant: 'approx' | 'precise', opts: LlmdOptions = {}): Policy {
  const d = LLMD_DEFAULTS;
  const random = opts.random ?? Math.random;
  const index = new Map<string, Lru>(); // pod id → blocks it was sent
  // A memo keyed by the request body: select and onDispatch hash the prompt once; it cannot change an answer.
  const blocksOf = new WeakMap<object, BigUint64Array>();
  const blocks = (req: PlacementRequest): BigUint64Array => {
    const key = req.body ?? req.info;
    let h = blocksOf.get(key);
    if (h === undefined)
      blocksOf.set(key, (h = chainHashes(promptBytes(req), d.blockChars, prefixSeed(req.info.requested), d.maxBlocks)));
    return h;
  };
  /** Leading blocks of the request this router sent to the pod `id` (the approximate index). */
  const approxMatched = (req: PlacementRequest, id: string): number => {
    const lru = index.get(id);
    const h = blocks(req);
    let i = 0;
    while (lru !== undefined && i < h.length && lru.has(h[i]!)) i++;
    return i;
  };
  const kvUsage = (r: Readonly<Replica>): number =>
    r.state.capacity.kvTokens > 0 ? r.state.load.kvUsedTokens / r.state.capacity.kvTokens : 0;

  /** Prefix score per row in [0, 1]: from this router's LRU (approx) or the published digests (precise). */
  function prefixScores(req: PlacementRequest, t: CandidateTable, warmth: Warmth): number[] {
    if (variant === 'precise') {
      const total = req.info.hashes.length;
      // Each matched block at its tier's weight: on the GPU 1, only in host memory cpuWeight.
      const gpu = warmth.gpu ?? warmth.digest;
      return warmth.digest.map((depth, i) => (total === 0 ? 0 : (gpu[i]! + d.cpuWeight * (depth - gpu[i]!)) / total));
    }
    const total = blocks(req).length;
    return t.rows.map((c) => (total === 0 ? 0 : approxMatched(req, c.replica.id) / total));
  }

  return {
    name: variant === 'approx' ? 'llm-d-approx' : 'llm-d-precise',
    select(req, t, warmth): Placement {
      const saturated = (r: Readonly<Replica>): boolean =>
        r.state.load.waiting >= d.saturationQueue || kvUsage(r) >= d.saturationKv || req.now - r.receivedAt > d.staleMs;
      if (t.rows.every((c) => saturated(c.replica))) return SATURATED;
      const prefix = prefixScores(req, t, warmth);
      let qMin = Infinity;
      let qMax = -Infinity;
      for (const c of t.rows) {
        qMin = Math.min(qMin, c.replica.state.load.waiting);
        qMax = Math.max(qMax, c.replica.state.load.waiting);
      }
      const adapter = req.info.adapter;
      let best = -Infinity;
      let picks: Array<Readonly<Replica>> = [];
      t.rows.forEach(({ replica: r }, i) => {
        const s = r.state;
        const queue = qMax === qMin ? 1 : (qMax - s.load.waiting) / (qMax - qMin);
        let score = d.prefixWeight * prefix[i]! + d.kvWeight * (1 - kvUsage(r)) + d.queueWeight * queue;
        if (adapter !== '')
          score +=
            d.loraWeight *
            (s.hotAdapters.includes(adapter) ? 1 : s.hotAdapters.length < s.capacity.adapterSlots ? 0.8 : 0);
        if (score > best + 1e-12) {
          best = score;
          picks = [r];
        } else if (Math.abs(score - best) <= 1e-12) picks.push(r);
      });
      return { replica: picks[Math.floor(random() * picks.length)]!, branch: 'llm-d-score' };
    },
    pd: pdDecider(opts, variant === 'approx' ? approxMatched : undefined),
    onDispatch(req, replica) {
      if (variant !== 'approx') return;
      let lru = index.get(replica.id);
      if (lru === undefined) index.set(replica.id, (lru = new Lru(d.lruBlocksPerPod)));
      for (const h of blocks(req)) lru.add(h);
    },
  };
}
