/**
 * The work bound of a scenario on a fleet (docs/DISAGGREGATION.md, "The
 * work bound"): the highest arrival rate that any placement, on any split
 * of the same GPUs, could serve for as long as it lasts.
 *
 * Steps: per request of the plan, the least GPU time the engine model
 * (packages/sim, profiles.ts `stepTimeMs`) can spend on it:
 *  - prefill: the prompt tokens no earlier request brought (every prefix
 *    computed once in the whole fleet, as with an unlimited pooled cache:
 *    hit-ceiling.ts `seenTokens`) at `prefillTokensPerS`;
 *  - decode: each output token's step reads the sequence's whole context,
 *    Σ over its output of (prompt + tokens so far) × kvBytesPerToken at
 *    hbmBytesPerS × hbmEfficiency;
 *  - fixed: a step's fixed cost F (stepOverheadMs and the weights' read),
 *    which a batch shares, charged to each output token's step in
 *    proportion to the KV the sequence holds alone. A sequence's private
 *    tokens are its prompt less the full blocks some other request of the
 *    plan also has (block hashes: only a sequence whose prompt holds a hash
 *    can hold that block) plus its output so far; on one replica the
 *    sequences of a batch hold their private blocks apart, within the
 *    replica's C = numGpuBlocks × blockSize tokens, so Σ_batch u ≤ C and
 *    F ≥ Σ_batch F × u / C. Summed over a request's output steps:
 *    F / C × Σ_{j<output} (private prompt + j).
 * The three are separate terms of one step's time (stepTimeMs adds the
 * fixed cost, the context read and the prefill compute), each bounded
 * below on its own over all steps, so none is counted twice. A prefill
 * chunk's own context read, the fixed cost of steps without an output
 * token, preemptions' recomputation and transfers are left out: the time
 * is a lower bound, so the rate is an upper bound.
 * bound = GPUs / the mean of those times (req/s).
 * Complexity: O(block accesses) for the pooled cache and the private
 * blocks (one hash table), O(requests) after.
 * Trade-off: it says nothing of latency: a rate under it may still break an
 * SLO, and one over it can look served in a run shorter than the fleet takes
 * to fill (the work left queued when the arrivals stop is not judged). The
 * fixed cost's share is tight only for a batch whose private KV fills the
 * replica; a batch of short sequences bears more than it.
 */
import { halves, Hash64Table } from '@warmpath/shared/runtime';
import { PROFILES, stepTimeMs, type EngineProfile } from '@warmpath/sim';
import { hitCeiling, type CeilingRequest } from './hit-ceiling.ts';
import type { PlannedRequest } from './loadgen.ts';
import { planRequests, type PlanRequest } from './references.ts';
import type { Scenario } from './scenarios.ts';

export interface WorkBound {
  /** Requests per second the GPUs could serve at most. */
  readonly rate: number;
  /** Mean GPU seconds a request needs at least: prefill, decode's KV read, its share of the steps' fixed cost. */
  readonly prefillS: number;
  readonly decodeS: number;
  readonly fixedS: number;
}

/** The least decode time of `output` tokens after a `prompt`-token prompt, s. */
export function decodeSeconds(p: EngineProfile, prompt: number, output: number): number {
  // Σ_{j=0}^{output−1} (prompt + j): the context each step reads.
  const tokens = output * prompt + (output * (output - 1)) / 2;
  return (tokens * p.kvBytesPerToken) / (p.hbmBytesPerS * p.hbmEfficiency);
}

/** A step's fixed cost F, ms: a step of nothing (the overhead and the weights' read). */
export function fixedCostMs(p: EngineProfile): number {
  return stepTimeMs(p, 0, 0, 0);
}

/**
 * The least share of the steps' fixed cost `output` tokens bear when the
 * sequence holds `privatePrompt` tokens of its prompt alone, s: F / C ×
 * Σ_{j=0}^{output−1} (privatePrompt + j).
 */
export function fixedSeconds(p: EngineProfile, privatePrompt: number, output: number): number {
  const tokens = output * privatePrompt + (output * (output - 1)) / 2;
  return (tokens * fixedCostMs(p)) / 1e3 / (p.numGpuBlocks * p.blockSize);
}

/** A block hash's holder: one request's index, or SHARED when several requests' prompts have it. */
const SHARED = -1;

/**
 * Of a prompt's full blocks (its block hashes), how many some two requests
 * of the plan have: the rest of the prompt is its own (a prompt of the
 * plan, or a copy of one, such as a leg of it).
 */
export function sharedBlocksOf(reqs: readonly CeilingRequest[]): (hashes: BigUint64Array) => number {
  const holder = new Hash64Table(1 << 16);
  reqs.forEach((r, i) => {
    const h = halves(r.blockHashes);
    for (let k = 0; k < r.blockHashes.length; k++) {
      const at = holder.find(h[2 * k]!, h[2 * k + 1]!);
      if (at < 0) holder.set(h[2 * k]!, h[2 * k + 1]!, i);
      else if (holder.valueAt(at) !== i) holder.setValueAt(at, SHARED);
    }
  });
  return (hashes) => {
    const h = halves(hashes);
    let shared = 0;
    for (let k = 0; k < hashes.length; k++) {
      const at = holder.find(h[2 * k]!, h[2 * k + 1]!);
      if (at >= 0 && holder.valueAt(at) === SHARED) shared++;
    }
    return shared;
  };
}

/**
 * Per request (plan order), its prompt tokens no other request of the plan
 * has at block granularity: the prompt less its full blocks whose hash
 * another request's prompt also has.
 */
export function privatePromptTokens(reqs: readonly CeilingRequest[], blockSize: number): Int32Array {
  const shared = sharedBlocksOf(reqs);
  return Int32Array.from(reqs, (r) => Math.max(0, r.promptTokens - shared(r.blockHashes) * blockSize));
}

/** The work bound of `reqs` on `gpus` replicas of `profile` (module header). */
export function workBoundOf(reqs: readonly PlanRequest[], profile: EngineProfile, gpus: number): WorkBound {
  const { seenTokens } = hitCeiling(reqs, profile.blockSize, Infinity);
  const own = privatePromptTokens(reqs, profile.blockSize);
  let prefill = 0;
  let decode = 0;
  let fixed = 0;
  reqs.forEach((r, i) => {
    prefill += (r.promptTokens - seenTokens[i]!) / profile.prefillTokensPerS;
    decode += decodeSeconds(profile, r.promptTokens, r.maxTokens);
    fixed += fixedSeconds(profile, own[i]!, r.maxTokens);
  });
  const n = Math.max(1, reqs.length);
  const prefillS = prefill / n;
  const decodeS = decode / n;
  const fixedS = fixed / n;
  return { rate: gpus / (prefillS + decodeS + fixedS), prefillS, decodeS, fixedS };
}

/** The work bound of a scenario's `plan` on `gpus` replicas of its profile. */
export function workBound(scenario: Scenario, plan: readonly PlannedRequest[], gpus: number): WorkBound {
  const profile = PROFILES[scenario.fleet.profile as keyof typeof PROFILES];
  return workBoundOf(planRequests(plan, new Set(scenario.fleet.adapters ?? [])), profile, gpus);
}
