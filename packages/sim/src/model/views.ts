/**
 * Read-only views of the engine model: the snapshot its /metrics and
 * /sim/v1/state report, and the probe — what would happen to a prompt if it
 * arrived now (the benchmark's oracle and the agent's cache-model reference).
 *
 * Probe steps: longest cached prefix (full blocks, at most prompt-1 tokens;
 * the GPU's, then its continuation in the host tier, which costs a reload);
 * prefill work ahead of it (FCFS: every running prompt token not yet
 * computed; for a waiting or arriving request, its prompt minus what the pool
 * would match for it now, since the scheduler will not recompute that part)
 * plus its own uncached part; TTFT = front end + one step per batch of that work at
 * the current context + the work at prefill speed + an adapter load if the
 * adapter is not on the GPU.
 * Complexity: O(in-flight sequences + prefix blocks) per probe or snapshot.
 * Trade-off: a closed-form estimate, not a simulation of the coming steps:
 * cheap enough to call per request, but blind to later arrivals and to how
 * decode tokens share each step's token budget.
 */
import { hostReloadMs, peerFetchMs, stepTimeMs } from './profiles.ts';
import type { LoraState } from './lora.ts';
import { frontendDelayMs } from './state.ts';
import type { EngineState } from './state.ts';

export interface EngineSnapshot {
  readonly profile: string;
  readonly running: number;
  readonly waiting: number;
  /** Waiting because their adapter has no slot (vLLM reason="deferred"). */
  readonly waitingDeferred: number;
  readonly kvUsedBlocks: number;
  readonly kvTotalBlocks: number;
  readonly kvCachedBlocks: number;
  /** 1 - free/total, as vLLM reports it (cached but unreferenced blocks count as free). */
  readonly kvUsage: number;
  readonly prefixQueriesTokens: number;
  readonly prefixHitsTokens: number;
  /** Host tier capacity, blocks (0 = off). */
  readonly hostKvTotalBlocks: number;
  readonly hostKvCachedBlocks: number;
  /** Prompt tokens looked up in the host tier, and of those loaded back (vLLM's external_prefix_cache_*). */
  readonly hostQueriesTokens: number;
  readonly hostHitsTokens: number;
  /** Tokens of KV loaded from host memory, counting reloads after preemption. */
  readonly hostLoadedTokens: number;
  readonly hostEvictedBlocks: number;
  readonly preemptions: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
  readonly finishedRequests: number;
  readonly abortedRequests: number;
  readonly evictedBlocks: number;
  /** Sum over evicted blocks of how long each had sat cached and unused, ms (÷ evictedBlocks: the cache's turnover time). */
  readonly evictedAgeMs: number;
  readonly steps: number;
  readonly lora: LoraState;
}

export interface ProbeResult {
  readonly promptTokens: number;
  /** Tokens the engine would count as cached: the GPU's prefix, its continuation in host memory, then on another replica (KV sharing). */
  readonly cachedTokens: number;
  /** Of those, tokens it would load back from host memory. */
  readonly hostCachedTokens: number;
  readonly running: number;
  readonly waiting: number;
  readonly kvUsedBlocks: number;
  readonly kvTotalBlocks: number;
  readonly adapterHot: boolean;
  readonly adapterSlotsFree: number;
  /** Prompt tokens of queued and running requests still to prefill, ahead of this one. */
  readonly pendingPrefillTokens: number;
  /** The model's own estimate of this prompt's TTFT if it arrived now (the benchmark's oracle). */
  readonly predictedTtftMs: number;
}

export function probe(
  st: EngineState,
  promptTokens: number,
  blockHashes: BigUint64Array,
  adapter: string,
): ProbeResult {
  const maxHit = Math.floor((promptTokens - 1) / st.blockSize);
  const hit = st.enablePrefixCaching ? st.pool.match(blockHashes, maxHit) : 0;
  const hostHit = st.enablePrefixCaching ? st.host.match(blockHashes, hit, maxHit, false) : 0;
  const local = hit + hostHit;
  const peerHit =
    st.peers !== undefined && st.enablePrefixCaching ? Math.max(0, st.peers.held(blockHashes, maxHit) - local) : 0;
  // Work ahead: every prompt token not yet computed, FCFS; then this prompt's uncached part.
  let pending = 0;
  let context = 0;
  for (const s of st.running) {
    pending += Math.max(0, s.promptTokens - s.computed);
    context += s.computed;
  }
  for (const s of st.waiting) pending += Math.max(0, s.promptTokens - Math.max(s.computed, cachedNow(st, s)));
  for (const s of st.arriving) pending += s.promptTokens - cachedNow(st, s);
  const work = pending + promptTokens - (local + peerHit) * st.blockSize;
  const p = st.profile;
  const steps = Math.max(1, Math.ceil(work / p.maxNumBatchedTokens));
  const loraMs = adapter !== '' && !st.lora.isOnGpu(adapter) ? p.loraLoadMs : 0;
  const predictedTtftMs =
    frontendDelayMs(p, promptTokens) +
    steps * stepTimeMs(p, context, 0, 0) +
    (work / p.prefillTokensPerS) * 1e3 +
    loraMs +
    (hostHit > 0 ? hostReloadMs(p, hostHit * st.blockSize) : 0) +
    (peerHit > 0 ? peerFetchMs(p, peerHit * st.blockSize, st.peers!.bytesPerS) : 0);
  return {
    pendingPrefillTokens: pending,
    predictedTtftMs,
    promptTokens,
    cachedTokens: (local + peerHit) * st.blockSize,
    hostCachedTokens: hostHit * st.blockSize,
    running: st.running.length,
    waiting: st.waiting.length + st.arriving.length,
    kvUsedBlocks: st.pool.numUsed,
    kvTotalBlocks: st.pool.numBlocks,
    adapterHot: adapter !== '' && st.lora.isOnGpu(adapter),
    adapterSlotsFree: st.lora.slotsFree,
  };
}

/** Tokens of a not-yet-running request either tier would serve now (full blocks, at most prompt-1). */
function cachedNow(st: EngineState, s: { promptTokens: number; blockHashes: BigUint64Array }): number {
  if (!st.enablePrefixCaching) return 0;
  const maxHit = Math.floor((s.promptTokens - 1) / st.blockSize);
  const hit = st.pool.match(s.blockHashes, maxHit);
  return (hit + st.host.match(s.blockHashes, hit, maxHit, false)) * st.blockSize;
}

export function snapshot(st: EngineState): EngineSnapshot {
  const waitingLoras = new Set<string>();
  let deferred = 0;
  for (const s of st.waiting) {
    if (s.adapter === '') continue;
    waitingLoras.add(s.adapter);
    if (st.lora.deferred(s.adapter)) deferred++;
  }
  for (const s of st.arriving) if (s.adapter !== '') waitingLoras.add(s.adapter);
  const c = st.counters;
  return {
    profile: st.profile.name,
    running: st.running.length,
    waiting: st.waiting.length + st.arriving.length,
    waitingDeferred: deferred,
    kvUsedBlocks: st.pool.numUsed,
    kvTotalBlocks: st.pool.numBlocks,
    kvCachedBlocks: st.pool.numCached,
    kvUsage: st.pool.numUsed / st.pool.numBlocks,
    prefixQueriesTokens: c.prefixQueries,
    prefixHitsTokens: c.prefixHits,
    hostKvTotalBlocks: st.host.capacity,
    hostKvCachedBlocks: st.host.size,
    hostQueriesTokens: c.hostQueries,
    hostHitsTokens: c.hostHits,
    hostLoadedTokens: c.hostLoadedTokens,
    hostEvictedBlocks: st.host.evictions,
    preemptions: c.preemptions,
    promptTokens: c.promptTokens,
    generationTokens: c.generationTokens,
    finishedRequests: c.finished,
    abortedRequests: c.aborted,
    evictedBlocks: st.pool.evictions,
    evictedAgeMs: st.pool.evictedAgeMs,
    steps: c.steps,
    lora: st.lora.state([...waitingLoras]),
  };
}

/** Test hook: throws if the block pool's bookkeeping is inconsistent. */
export function checkInvariants(st: EngineState): void {
  st.pool.checkInvariants();
  const held = new Set<number>();
  for (const s of st.running) for (const b of s.blocks) held.add(b);
  for (const s of st.held.values()) for (const b of s.blocks) held.add(b);
  for (const s of st.waiting) for (const b of s.blocks) held.add(b);
  if (held.size !== st.pool.numUsed)
    throw new Error(
      `running, held and reloading sequences hold ${held.size} blocks, pool says ${st.pool.numUsed} used`,
    );
  // A waiting sequence holds blocks only for its host reload (in flight, or done and not yet running).
  for (const s of st.waiting)
    if (s.blocks.length !== 0 && Number.isNaN(s.loadEndMs)) throw new Error(`waiting sequence ${s.id} holds blocks`);
  for (const s of st.loads)
    if (s.status !== 'waiting' || s.blocks.length === 0)
      throw new Error(`reloading sequence ${s.id} is not waiting with blocks`);
}
