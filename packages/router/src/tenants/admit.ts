/**
 * The router core's two calls into tenancy, kept here so the core reads the
 * same with or without tenants: `admitJob` at a request's arrival (its
 * tenant's limits; refused → the OpenAI rate-limit answer) and `endJob` once
 * it ends, however (the concurrent slot back, the reservation corrected by
 * the engine's usage, the usage booked); `overSlo` once placement picked a
 * replica (SLO admission, slo.ts). And the fair queue's view of a job.
 */
import { bandRank } from '@warmpath/shared/wire';
import type { Job } from '../core/job.ts';
import type { LocalState } from '../core/local.ts';
import type { RouteError } from '../core/types.ts';
import type { Replica } from '../fleet/view.ts';
import { SATURATED, type Placement, type PlacementRequest } from '../placement/types.ts';
import type { ReserveSide } from '../placement/reserve.ts';
import { leavesSide } from './split.ts';
import type { LimitKind } from './limits.ts';
import type { Tenancy, Who } from './tenancy.ts';
import type { EngineUsage } from './usage.ts';
import type { WaiterClass } from './fair.ts';
import { pickLoad, predictedTtftMs } from './slo.ts';

/** A request without a tenant (an --api-keys key) waits in the middle band with weight 1. */
const DEFAULT_BAND = bandRank('standard')!;

/** Admits the job against its tenant's limits (taking its claim), or returns the answer that refuses it. */
export function admitJob<T>(
  tenancy: Tenancy,
  job: Job<T>,
  now: number,
  limited?: (tenant: string, limit: LimitKind) => void,
): RouteError | undefined {
  if (job.who === undefined) return undefined;
  const t = job.who.tenant;
  const v = tenancy.limiter.admit(t, job.info.promptTokens + job.info.maxTokens, now);
  if (v.ok) {
    tenancy.split.note(job.who.band, now);
    job.ticket = v.ticket;
    job.rateHeaders = v.headers;
    return undefined;
  }
  limited?.(t.name, v.limit);
  return {
    code: 'rate_limit_exceeded',
    message: v.message,
    retryAfter: v.retryAfterMs !== undefined,
    ...(v.retryAfterMs !== undefined ? { retryAfterS: Math.max(1, Math.ceil(v.retryAfterMs / 1_000)) } : {}),
    headers: v.headers,
  };
}

/** The job ended: release its concurrent slot, settle its tokens with the engine's count, book its usage. Once. */
export function endJob<T>(tenancy: Tenancy, job: Job<T>, usage: EngineUsage | undefined, now: number): void {
  const ticket = job.ticket;
  if (job.who === undefined || ticket === undefined || ticket.released) return;
  tenancy.limiter.release(ticket);
  // Settled with the engine's count only when it reported the prompt (the estimate stands otherwise).
  if (usage?.promptTokens !== undefined)
    tenancy.limiter.settle(ticket, usage.promptTokens + (usage.completionTokens ?? 0), now);
  tenancy.usage.record(job.who.tenant.name, job.info.requested, usage, now);
}

/** The fair queue's view of a job: band, tenant, weight, estimated tokens. */
export function classOf<T>(job: Job<T>): WaiterClass {
  const who = job.who;
  return {
    band: who === undefined ? DEFAULT_BAND : bandRank(who.band)!,
    tenant: who?.tenant.name ?? '',
    weight: who?.tenant.weight ?? 1,
    cost: job.info.promptTokens + job.info.maxTokens,
  };
}

/**
 * Would sending the job to the pick (for a pair, its prefill replica)
 * predict a TTFT over its SLO bound with something queued ahead there
 * (slo.ts)? Then it waits in the queue instead; `sloHeld` counts it, by band.
 */
export function overSlo<T>(
  tenancy: Tenancy,
  job: Job<T>,
  placement: Placement,
  prefill: Replica | undefined,
  local: LocalState,
  config: { readonly prefillTokensPerS: number },
  metrics: { sloHeld?: (band: Who['band']) => void } | undefined,
  now: number,
): boolean {
  const who = job.who;
  if (who === undefined || placement.replica === undefined) return false;
  const bound = tenancy.sloBoundMs(who);
  if (bound === Number.POSITIVE_INFINITY) return false;
  const r = prefill ?? placement.replica;
  const info = job.info;
  const own =
    prefill === undefined && placement.work !== undefined ? placement.work - info.maxTokens : info.promptTokens;
  const load = pickLoad(r, { prefill: Math.max(0, own), added: local.figures(r).added }, config.prefillTokensPerS, now);
  if (load.queue <= 0 || predictedTtftMs(load) <= bound) return false;
  metrics?.sloHeld?.(who.band);
  return true;
}

/**
 * Places the job on its side of the interactive reserve when one is in
 * force (split.ts), and again on the whole group when it leaves that side
 * (`leavesSide`); a job with no room on its side that stays there is
 * `saturated` (it waits in the queue); without tenants or a reserve,
 * `place(whole)` alone.
 * Returns the request placed (the one the policy is told about) with its placement.
 */
export function placeOnSide<T, P extends { placement: Placement }>(
  tenancy: Tenancy | undefined,
  job: Job<T>,
  whole: PlacementRequest,
  now: number,
  place: (req: PlacementRequest) => P,
  metrics?: { reserveSide?: (side: ReserveSide) => void },
): P & { preq: PlacementRequest } {
  const side = tenancy?.sideOf(job.who, now);
  if (side !== undefined) {
    const preq = { ...whole, reserve: side };
    const placed = place(preq);
    if (placed.placement.replica !== undefined) metrics?.reserveSide?.(side.side);
    // No room on its side, staying there: it waits for room (the queue), whatever the reason there was none.
    if (!leavesSide(side, placed.placement))
      return { ...placed, preq, ...(placed.placement.replica === undefined ? { placement: SATURATED } : {}) };
  }
  return { ...place(whole), preq: whole };
}
