/**
 * References from the physical limit, computed from the plan alone — no
 * router, no policy — so a policy's figures can be read as a fraction of
 * what any router could reach on this fleet.
 *
 * - Hit-rate ceiling: every request's prompt blocks (the engine's block size)
 *   looked up, in arrival order, in ONE cache as large as the whole fleet's
 *   KV capacity, with Belady's optimal eviction (evict the block whose next
 *   use is farthest away; never-used-again blocks first). A hit is the
 *   longest run of the prompt's leading blocks present, capped, as engines
 *   do, one token short of the whole prompt. Also with unlimited capacity.
 * - TTFT floor: each request alone on an idle replica whose cache already
 *   holds that request's ceiling hit (and its adapter): the engine model is
 *   run for real (warm-up request, then the request), so the floor uses the
 *   same step-time model as every simulated policy. Reported as p50/p99.
 * - TTFT bound: the same with every block that arrived before the request
 *   cached (the unlimited ceiling's hit). No placement gives a request more
 *   cached tokens than that, nor a faster start than alone on an idle
 *   replica, so every request's TTFT under any policy is at least its bound,
 *   and so are the p50 and p99 (the floor, with Belady's per-request hits,
 *   is not a bound request by request: a policy may hit more on one request
 *   and less on others). With adapters, one more fact: the engines start
 *   with none loaded, so each adapter's first load holds some request of
 *   it, and with at least k adapters the k-th slowest request is at least
 *   the k-th largest of those least first-load TTFTs. A goal whose target
 *   lies under the bound is beyond any router.
 *
 * Steps (ceiling): index every block's access times → walk requests in
 * arrival order: count the hit, then insert/refresh the request's blocks with
 * their next use as key in a max-heap (lazy deletion) and evict from the top
 * while over capacity.
 * Complexity: O(B log B) for B block accesses in the plan; the floor runs
 * two short engine-model simulations per request.
 * Trade-off: the ceiling ignores concurrency (blocks pinned by running
 * requests) and routing (one cache instead of N), so it is an upper bound no
 * router reaches; it answers "how much reuse is there to find", not "how
 * much is achievable".
 */
import { routerConfig } from '@warmpath/router';
import { EngineModel, hostReloadMs, PROFILES, type EngineProfile, type PromptIdentity } from '@warmpath/sim';
import { prepare } from './des/request.ts';
import { percentile, type PlannedRequest } from './loadgen.ts';
import type { Scenario } from './scenarios.ts';
import { hitCeiling, type HitCeiling } from './hit-ceiling.ts';

export { hitCeiling, type HitCeiling } from './hit-ceiling.ts';

export interface PlanRequest extends PromptIdentity {
  /** Arrival, ms. */
  readonly at: number;
  readonly adapter: string;
  readonly maxTokens: number;
}

export interface TtftFloor {
  readonly p50: number;
  readonly p99: number;
}

export interface References {
  readonly hitRateCeiling: {
    readonly belady: number;
    readonly unlimited: number;
    readonly capacityBlocks: number;
    /** With a host-memory tier: the fleet's GPU and host KV pooled as one cache (tiers.ts in bench). */
    readonly tiered?: { readonly belady: number; readonly capacityBlocks: number };
  };
  readonly ttftFloorMs: TtftFloor;
  /** No policy's TTFT p50 / p99 on this plan and fleet is below these. */
  readonly ttftBoundMs: TtftFloor;
  /** With a host-memory tier: each request alone holding its tiered ceiling hit, the part past the GPU's reloaded. */
  readonly ttftTieredMs?: TtftFloor;
}

/** TTFT p50 / p99 of each request alone on an idle engine that already holds `cachedTokens[i]` of its prompt. */
export function ttftFloor(
  reqs: readonly PlanRequest[],
  cachedTokens: Int32Array,
  profile: EngineProfile,
  adapters: readonly string[],
  maxLoras: number,
): TtftFloor {
  return tails(aloneTtfts(reqs, cachedTokens, profile, adapters, maxLoras));
}

/**
 * Per request, its TTFT alone on an idle engine holding `cachedTokens[i]` of its prompt (and its adapter);
 * with `known`, only the requests whose cached tokens differ from `known.cachedTokens` are run again.
 */
export function aloneTtfts(
  reqs: readonly PlanRequest[],
  cachedTokens: Int32Array,
  profile: EngineProfile,
  adapters: readonly string[],
  maxLoras: number,
  known?: { readonly ttfts: readonly number[]; readonly cachedTokens: Int32Array },
): number[] {
  return reqs.map((r, i) =>
    known !== undefined && known.cachedTokens[i] === cachedTokens[i]
      ? known.ttfts[i]!
      : aloneTtft(r, cachedTokens[i]!, profile, adapters, maxLoras, true),
  );
}

/** One request's TTFT alone on an idle engine holding `cached` tokens of its prompt, and its adapter when `adapterLoaded`. */
function aloneTtft(
  r: PlanRequest,
  cached: number,
  profile: EngineProfile,
  adapters: readonly string[],
  maxLoras: number,
  adapterLoaded: boolean,
): number {
  // Only this request and its warm-up ever hold blocks: a pool that fits both (and the whole request, as
  // the engine checks its context length against the pool) gives the same steps, and
  // building the profile's whole pool (27,000 blocks) for every request was most of the floor's time.
  const blocks = 2 * Math.ceil((r.promptTokens + Math.max(1, r.maxTokens) + 2) / profile.blockSize) + 16;
  const model = new EngineModel(blocks < profile.numGpuBlocks ? { ...profile, numGpuBlocks: blocks } : profile, {
    maxLoras,
    adapters: [...adapters],
  });
  let now = 0;
  const cachedBlocks = Math.floor(cached / profile.blockSize);
  const warmAdapter = adapterLoaded ? r.adapter : '';
  if (cachedBlocks > 0 || warmAdapter !== '') {
    // Warm-up: the cached prefix (one token past it, so its last block is full) and the adapter.
    const warm = Math.max(1, cachedBlocks * profile.blockSize + 1);
    now = runToFirstToken(
      model,
      {
        id: 'warm',
        promptTokens: warm,
        maxTokens: 1,
        blockHashes: r.blockHashes.subarray(0, cachedBlocks),
        adapter: warmAdapter,
      },
      now,
      true,
    );
  }
  const start = now;
  return (
    runToFirstToken(
      model,
      {
        id: 'req',
        promptTokens: r.promptTokens,
        maxTokens: Math.max(1, r.maxTokens),
        blockHashes: r.blockHashes,
        adapter: r.adapter,
      },
      now,
      false,
    ) - start
  );
}

/**
 * Per adapter the plan uses, the least TTFT any of its requests can have while the adapter loads (alone on
 * an idle replica, every earlier block cached, the adapter not loaded). The engines start with no adapter
 * loaded, so each adapter is loaded at least once, and the request that waits for that load takes at
 * least its adapter's figure here.
 */
export function firstLoadTtfts(
  reqs: readonly PlanRequest[],
  seenTokens: Int32Array,
  profile: EngineProfile,
  adapters: readonly string[],
  maxLoras: number,
): number[] {
  const least = new Map<string, number>();
  reqs.forEach((r, i) => {
    if (r.adapter === '') return;
    const t = aloneTtft(r, seenTokens[i]!, profile, adapters, maxLoras, false);
    least.set(r.adapter, Math.min(least.get(r.adapter) ?? Number.POSITIVE_INFINITY, t));
  });
  return [...least.values()];
}

/**
 * p50 / p99 that no policy goes under: each request takes at least its own figure in `ttfts`, and for each
 * figure in `firstLoads` a distinct request takes at least that. A percentile is the k-th largest of every
 * request's TTFT (nearest rank, as the reports count it), so it is at least the k-th largest of either set:
 * the first-load figures padded with zeros to one per request give theirs.
 */
export function boundTails(ttfts: readonly number[], firstLoads: readonly number[]): TtftFloor {
  const loads = [...firstLoads, ...new Array<number>(Math.max(0, ttfts.length - firstLoads.length)).fill(0)];
  const at = (p: number): number => round(Math.max(percentile(ttfts, p), percentile(loads, p)));
  return { p50: at(50), p99: at(99) };
}

const tails = (ttfts: readonly number[]): TtftFloor => ({
  p50: round(percentile(ttfts, 50)),
  p99: round(percentile(ttfts, 99)),
});

type Submit = Parameters<EngineModel['submit']>[0];

/** Runs the model until `req` emits its first token (or finishes, when `untilDone`); returns that time. */
function runToFirstToken(model: EngineModel, req: Submit, now: number, untilDone: boolean): number {
  model.submit(req, now);
  for (let guard = 0; guard < 1_000_000; guard++) {
    const wake = model.nextWakeMs(now);
    if (wake === Number.POSITIVE_INFINITY) break;
    const res = model.step(Math.max(now, wake));
    now = res.durationMs === 0 ? Math.max(now, wake) : res.endMs;
    if (untilDone ? res.finished.some((s) => s.id === req.id) : res.emitted.some((s) => s.id === req.id)) return now;
  }
  throw new Error(`reference run of ${req.id} did not finish`);
}

const round = (x: number): number => Math.round(x * 10) / 10;

/** The plan as the simulated engines see it: the DES's own description of each request (one source for both). */
export function planRequests(plan: readonly PlannedRequest[], adapters: ReadonlySet<string>): PlanRequest[] {
  const settings = routerConfig();
  return plan.map((p) => {
    const x = prepare(p, adapters, settings);
    return {
      at: p.at,
      adapter: x.info.adapter,
      maxTokens: x.info.maxTokens,
      promptTokens: x.promptTokens,
      blockHashes: x.blockHashes,
    };
  });
}

/** Every reference for one scenario's plan on `replicas` replicas of its profile. */
export function computeReferences(scenario: Scenario, plan: readonly PlannedRequest[], replicas: number): References {
  const profile = PROFILES[scenario.fleet.profile as keyof typeof PROFILES];
  const adapters = scenario.fleet.adapters ?? [];
  const reqs = planRequests(plan, new Set(adapters));
  const capacityBlocks = replicas * profile.numGpuBlocks;
  const ceiling = hitCeiling(reqs, profile.blockSize, capacityBlocks);
  const maxLoras = scenario.fleet.maxLoras ?? 0;
  const floor = aloneTtfts(reqs, ceiling.cachedTokens, profile, adapters, maxLoras);
  // Most requests hit as much under Belady as with unlimited capacity: only the others are run again.
  const bound = aloneTtfts(reqs, ceiling.seenTokens, profile, adapters, maxLoras, {
    ttfts: floor,
    cachedTokens: ceiling.cachedTokens,
  });
  const firstLoads = firstLoadTtfts(reqs, ceiling.seenTokens, profile, adapters, maxLoras);
  const tiered = tieredReferences(reqs, profile, replicas, scenario.fleet.cpuKvRatio ?? 0, {
    adapters,
    maxLoras,
    ceiling,
    floor,
  });
  return {
    hitRateCeiling: {
      belady: round4(ceiling.belady),
      unlimited: round4(ceiling.unlimited),
      capacityBlocks,
      ...(tiered !== undefined ? { tiered: tiered.ceiling } : {}),
    },
    ttftFloorMs: tails(floor),
    ttftBoundMs: boundTails(bound, firstLoads),
    ...(tiered !== undefined ? { ttftTieredMs: tiered.ttft } : {}),
  };
}

/**
 * With a host-memory tier of `ratio` × each GPU's KV: the ceiling with the
 * fleet's GPU and host KV pooled as one cache (Belady over replicas × (1 +
 * ratio) GPUs' blocks), and each request's TTFT alone on an idle replica
 * holding that hit, of which what the GPU-only ceiling hits is on its GPU
 * and the rest is reloaded over PCIe first (Belady's contents at a capacity
 * include those at any smaller one, so the rest is never negative). A peer's
 * blocks are in the pool too, priced as a reload (the modelled network is no
 * faster than PCIe). Like the floor, a reference per request (Belady's
 * hits), not a bound request by request.
 */
function tieredReferences(
  reqs: readonly PlanRequest[],
  profile: EngineProfile,
  replicas: number,
  ratio: number,
  gpu: { adapters: readonly string[]; maxLoras: number; ceiling: HitCeiling; floor: readonly number[] },
): { ceiling: { belady: number; capacityBlocks: number }; ttft: TtftFloor } | undefined {
  if (ratio <= 0) return undefined;
  const capacityBlocks = Math.round(replicas * profile.numGpuBlocks * (1 + ratio));
  const pooled = hitCeiling(reqs, profile.blockSize, capacityBlocks);
  const alone = aloneTtfts(reqs, pooled.cachedTokens, profile, gpu.adapters, gpu.maxLoras, {
    ttfts: gpu.floor,
    cachedTokens: gpu.ceiling.cachedTokens,
  });
  const ttfts = alone.map(
    (t, i) => t + hostReloadMs(profile, Math.max(0, pooled.cachedTokens[i]! - gpu.ceiling.cachedTokens[i]!)),
  );
  return { ceiling: { belady: round4(pooled.belady), capacityBlocks }, ttft: tails(ttfts) };
}

const round4 = (x: number): number => Math.round(x * 1e4) / 1e4;
