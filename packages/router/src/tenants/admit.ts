/**
 * The router core's two calls into tenancy, kept here so the core reads the
 * same with or without tenants: `admitJob` at a request's arrival (its
 * tenant's limits; refused → the OpenAI rate-limit answer) and `endJob` once
 * it ends, however (the concurrent slot back, the reservation corrected by
 * the engine's usage, the usage booked). And the fair queue's view of a job.
 */
import { bandRank } from '@warmpath/shared/wire';
import type { Job } from '../core/job.ts';
import type { RouteError } from '../core/types.ts';
import type { LimitKind } from './limits.ts';
import type { Tenancy } from './tenancy.ts';
import type { EngineUsage } from './usage.ts';
import type { WaiterClass } from './fair.ts';

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
