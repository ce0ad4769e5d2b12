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
 *    hbmBytesPerS × hbmEfficiency.
 * The weights' read and the step overhead, which a batch shares, and a
 * prefill chunk's own context read are left out, and no transfer is
 * counted: the time is a lower bound, so the rate is an upper bound.
 * bound = GPUs / the mean of those times (req/s).
 * Complexity: O(block accesses) for the pooled cache, O(requests) after.
 * Trade-off: it says nothing of latency: a rate under it may still break an
 * SLO, and one over it can look served in a run shorter than the fleet takes
 * to fill (the work left queued when the arrivals stop is not judged).
 */
import { PROFILES, type EngineProfile } from '@warmpath/sim';
import { hitCeiling } from './hit-ceiling.ts';
import type { PlannedRequest } from './loadgen.ts';
import { planRequests, type PlanRequest } from './references.ts';
import type { Scenario } from './scenarios.ts';

export interface WorkBound {
  /** Requests per second the GPUs could serve at most. */
  readonly rate: number;
  /** Mean GPU seconds a request needs at least: prefill, decode. */
  readonly prefillS: number;
  readonly decodeS: number;
}

/** The least decode time of `output` tokens after a `prompt`-token prompt, s. */
export function decodeSeconds(p: EngineProfile, prompt: number, output: number): number {
  // Σ_{j=0}^{output−1} (prompt + j): the context each step reads.
  const tokens = output * prompt + (output * (output - 1)) / 2;
  return (tokens * p.kvBytesPerToken) / (p.hbmBytesPerS * p.hbmEfficiency);
}

/** The work bound of `reqs` on `gpus` replicas of `profile` (module header). */
export function workBoundOf(reqs: readonly PlanRequest[], profile: EngineProfile, gpus: number): WorkBound {
  const { seenTokens } = hitCeiling(reqs, profile.blockSize, Infinity);
  let prefill = 0;
  let decode = 0;
  reqs.forEach((r, i) => {
    prefill += (r.promptTokens - seenTokens[i]!) / profile.prefillTokensPerS;
    decode += decodeSeconds(profile, r.promptTokens, r.maxTokens);
  });
  const n = Math.max(1, reqs.length);
  const prefillS = prefill / n;
  const decodeS = decode / n;
  return { rate: gpus / (prefillS + decodeS), prefillS, decodeS };
}

/** The work bound of a scenario's `plan` on `gpus` replicas of its profile. */
export function workBound(scenario: Scenario, plan: readonly PlannedRequest[], gpus: number): WorkBound {
  const profile = PROFILES[scenario.fleet.profile as keyof typeof PROFILES];
  return workBoundOf(planRequests(plan, new Set(scenario.fleet.adapters ?? [])), profile, gpus);
}
