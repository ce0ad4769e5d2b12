/**
 * The GPU tier of an engine with a host-memory KV tier (vLLM's CPU
 * offloading, LMCache): which of the cache model's chunks are on the GPU and
 * which only in host memory (docs/DESIGN-RATIONALE.md, "Tiers").
 *
 * The cache model (cache-model.ts) then models both tiers as one LRU of the
 * pooled capacity: the engine offloads what its GPU evicts, LRU first, so
 * the newest GPU-capacity chunks are on the GPU and the older ones in host
 * memory. This class keeps a second LRU of the GPU capacity that every
 * request touches the same way; a chunk it evicts while the pooled model
 * still holds it went to host memory (`host` in the digest delta), and a
 * chunk it takes back that the pooled model already held was reloaded
 * (`added` again: on the GPU).
 *
 * Steps per publish: take the GPU LRU's delta; its removals the pooled model
 * still holds are the demoted; its additions the pooled delta does not add
 * are the promoted. The GPU capacity follows the pooled model's correction
 * (effective ÷ nominal): the engine's per-request cached_tokens counts both
 * tiers' hits, so only the pooled model learns from it.
 * Complexity: O(chain) per request, O(delta) per publish, O(digest) per
 * snapshot. Trade-off: a chunk offloaded within one publish interval of its
 * first use reaches routers as a GPU chunk until its next move; the
 * alternative, a tier flag on every chunk, costs a byte per digest entry on
 * every message.
 */
import { CacheModel } from './cache-model.ts';

export interface TierDelta {
  /** Held chunks back on the GPU (not already among the pooled delta's additions). */
  readonly promoted: BigUint64Array;
  /** Held chunks now only in host memory. */
  readonly host: BigUint64Array;
}

export class GpuTier {
  readonly #gpu: CacheModel;
  #nominal: number;

  constructor(gpuChunks: number) {
    this.#nominal = Math.max(1, Math.floor(gpuChunks));
    this.#gpu = new CacheModel({ capacity: this.#nominal });
  }

  /** Chunks the GPU tier holds (tests, metrics). */
  get size(): number {
    return this.#gpu.size;
  }

  /** The engine's GPU KV capacity changed, in chunks. */
  resize(gpuChunks: number): void {
    this.#nominal = Math.max(1, Math.floor(gpuChunks));
  }

  /** A request's chain was recorded in the pooled model: the same touches here. */
  record(hashes: BigUint64Array): void {
    this.#gpu.record(hashes);
  }

  /** Is this chunk on the GPU, as modelled? */
  onGpu(h: bigint): boolean {
    return this.#gpu.has(h);
  }

  /** The tier moves since the last take, against the pooled model and its delta's additions. */
  take(pooled: CacheModel, pooledAdded: BigUint64Array): TierDelta {
    this.#gpu.resize(Math.max(1, Math.round((this.#nominal * pooled.capacity) / pooled.nominalCapacity)));
    const d = this.#gpu.takeDelta(Number.MAX_SAFE_INTEGER);
    const added = new Set(pooledAdded);
    const promoted = d.added.filter((h) => !added.has(h) && pooled.has(h));
    const host = d.removed.filter((h) => pooled.has(h));
    return { promoted, host };
  }

  /** Of a published digest, the chunks only in host memory (for a snapshot). */
  hostOf(hashes: BigUint64Array): BigUint64Array {
    return hashes.filter((h) => !this.#gpu.has(h));
  }

  /** The engine restarted or cleared its caches (vLLM's reset also empties the offloaded tier). */
  reset(): void {
    this.#gpu.reset();
  }
}
