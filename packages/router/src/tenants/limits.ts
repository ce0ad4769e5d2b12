/**
 * Per-tenant admission: requests and tokens per minute over a sliding window
 * (window.ts), and requests in flight.
 *
 * Steps: admit(tenant, cost) — concurrent: in flight + 1 ≤ concurrent;
 * requests: local + others + 1 ≤ requestsPerMinute × f; tokens: local +
 * others + cost ≤ tokensPerMinute × f, where `others` is what the other
 * routers admitted for the tenant and f the share's limit factor (types.ts,
 * FleetShare; a lone router: 0 and 1). Admitted: the window takes one request
 * and `cost` tokens (a reservation: prompt plus max_tokens) and a ticket is
 * returned; `settle` replaces the reservation with the engine's usage, in the
 * slot it was made in; `release` gives back the concurrent slot, once,
 * however the request ended. Refused: which limit, when to retry, and the
 * OpenAI x-ratelimit-* headers.
 * Complexity: O(window slots) per admission; state only for tenants that
 * sent a request, at most the tenants in the file.
 * Trade-off: a reservation counts max_tokens until the answer ends, so a
 * tenant near its token limit is held back by output it may not use; the
 * correction gives it back at completion.
 */
import { paceRate, paceTake, paceWait, type Pace } from './pace.ts';
import { SlidingWindow } from './window.ts';
import { LONE_ROUTER, type Counts, type FleetShare, type Tenant } from './types.ts';

/** An admitted request's claim on its tenant's limits. */
export interface LimitTicket {
  readonly tenant: string;
  readonly slot: number;
  readonly reserved: number;
  released: boolean;
}

export type LimitKind = 'requests' | 'tokens' | 'concurrent';

export type Verdict =
  | { readonly ok: true; readonly ticket: LimitTicket; readonly headers: Record<string, string> }
  | {
      readonly ok: false;
      readonly limit: LimitKind;
      readonly message: string;
      /** When the request could pass, ms; undefined when it never can (larger than the limit). */
      readonly retryAfterMs: number | undefined;
      readonly headers: Record<string, string>;
    };

interface TenantState {
  window: SlidingWindow | undefined;
  inFlight: number;
  /** Pacing (pace.ts) of its requests and its tokens, with burstSeconds and a per-minute limit. */
  pace: { requests: Pace; tokens: Pace } | undefined;
}

export class TenantLimiter {
  readonly #share: FleetShare;
  readonly #states = new Map<string, TenantState>();

  constructor(share: FleetShare = LONE_ROUTER) {
    this.#share = share;
  }

  /** The file changed: forget the state of tenants no longer in it (their tickets still release). */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.#states.keys()) if (!names.has(name)) this.#states.delete(name);
  }

  admit(t: Tenant, cost: number, now: number): Verdict {
    const s = this.#state(t.name);
    const { concurrent, requestsPerMinute: rpm, tokensPerMinute: tpm } = t.limits;
    const f = this.#share.limitFactor(now);
    const others =
      rpm !== undefined || tpm !== undefined ? this.#share.others(t.name, now) : { requests: 0, tokens: 0 };
    const local = s.window?.sum(now) ?? { requests: 0, tokens: 0 };
    if (concurrent !== undefined && s.inFlight + 1 > concurrent)
      return this.#refuse(
        t,
        now,
        'concurrent',
        `${t.name} has ${s.inFlight} requests in flight (limit ${concurrent}).`,
        0,
      );
    if (rpm !== undefined && local.requests + others.requests + 1 > rpm * f) {
      const wait = this.#wait(s, now, 'requests', rpm * f - others.requests - 1);
      return this.#refuse(
        t,
        now,
        'requests',
        `Rate limit reached for ${t.name} on requests per minute: limit ${rpm}.`,
        wait,
      );
    }
    if (tpm !== undefined && local.tokens + others.tokens + cost > tpm * f) {
      const never = cost > tpm * f;
      const wait = never ? undefined : this.#wait(s, now, 'tokens', tpm * f - others.tokens - cost);
      const message = never
        ? `Request too large for ${t.name}: about ${cost} tokens (prompt + max_tokens), limit ${tpm} per minute.`
        : `Rate limit reached for ${t.name} on tokens per minute: limit ${tpm}, requested ${cost}.`;
      return this.#refuse(t, now, 'tokens', message, wait);
    }
    const paced = this.#pace(t, s, { requests: 1, tokens: cost }, { local, others, f }, now);
    if (paced !== undefined) return paced;
    s.window ??= new SlidingWindow();
    const slot = s.window.add(now, 1, cost);
    s.inFlight++;
    return {
      ok: true,
      ticket: { tenant: t.name, slot, reserved: cost, released: false },
      headers: this.headers(t, now),
    };
  }

  /** The request used `tokens` (prompt + completion, the engine's count) instead of its reservation. */
  settle(ticket: LimitTicket, tokens: number, now: number): void {
    this.#states.get(ticket.tenant)?.window?.adjust(ticket.slot, now, tokens - ticket.reserved);
  }

  /** The request ended (any way): its concurrent slot is free. Once per ticket. */
  release(ticket: LimitTicket): void {
    if (ticket.released) return;
    ticket.released = true;
    const s = this.#states.get(ticket.tenant);
    if (s !== undefined && s.inFlight > 0) s.inFlight--;
  }

  /** Requests in flight for a tenant (through this router). */
  inFlight(tenant: string): number {
    return this.#states.get(tenant)?.inFlight ?? 0;
  }

  /** This router's own admissions per tenant over the window (what it publishes to the others). */
  *localUsage(now: number): Iterable<[string, Counts]> {
    for (const [name, s] of this.#states)
      if (s.window !== undefined && !s.window.empty(now)) yield [name, s.window.sum(now)];
  }

  /** OpenAI's x-ratelimit-* headers for the limits the tenant has, as of `now`. */
  headers(t: Tenant, now: number): Record<string, string> {
    const { requestsPerMinute: rpm, tokensPerMinute: tpm } = t.limits;
    if (rpm === undefined && tpm === undefined) return {};
    const s = this.#states.get(t.name);
    const f = this.#share.limitFactor(now);
    const others = this.#share.others(t.name, now);
    const local = s?.window?.sum(now) ?? { requests: 0, tokens: 0 };
    const h: Record<string, string> = {};
    if (rpm !== undefined) {
      h['x-ratelimit-limit-requests'] = String(rpm);
      h['x-ratelimit-remaining-requests'] = String(Math.max(0, Math.floor(rpm * f - local.requests - others.requests)));
      h['x-ratelimit-reset-requests'] = formatDuration(s?.window?.waitUntil(now, 'requests', 0) ?? 0);
    }
    if (tpm !== undefined) {
      h['x-ratelimit-limit-tokens'] = String(tpm);
      h['x-ratelimit-remaining-tokens'] = String(Math.max(0, Math.floor(tpm * f - local.tokens - others.tokens)));
      h['x-ratelimit-reset-tokens'] = formatDuration(s?.window?.waitUntil(now, 'tokens', 0) ?? 0);
    }
    return h;
  }

  #state(name: string): TenantState {
    let s = this.#states.get(name);
    if (s === undefined) this.#states.set(name, (s = { window: undefined, inFlight: 0, pace: undefined }));
    return s;
  }

  /**
   * Paces the tenant within its per-minute limits (pace.ts): the refusal
   * when a limit's pace is ahead of now by more than its burst; otherwise
   * the admission is taken on every pace.
   */
  #pace(t: Tenant, s: TenantState, cost: Counts, u: { local: Counts; others: Counts; f: number }, now: number) {
    const limits = { requests: t.limits.requestsPerMinute, tokens: t.limits.tokensPerMinute };
    const burst = t.limits.burstSeconds;
    if (burst === undefined || (limits.requests === undefined && limits.tokens === undefined)) return undefined;
    const p = (s.pace ??= { requests: { tat: 0 }, tokens: { tat: 0 } });
    const routers = 1 + (this.#share.routers?.(now).known ?? 0);
    const rates = { requests: 0, tokens: 0 };
    for (const k of ['requests', 'tokens'] as const) {
      const limit = limits[k];
      if (limit === undefined) continue;
      rates[k] = paceRate(limit, u.f, u.local[k], u.others[k], routers);
      const wait = paceWait(p[k], cost[k], rates[k], burst * 1_000, now);
      if (wait > 0)
        return this.#refuse(t, now, k, `Rate limit reached for ${t.name} on ${k} per minute: paced to ${limit}.`, wait);
    }
    for (const k of ['requests', 'tokens'] as const) if (rates[k] > 0) paceTake(p[k], cost[k], rates[k], now);
    return undefined;
  }

  /** How long until this router's window falls to `target`; what others admitted is taken as it stands. */
  #wait(s: TenantState, now: number, which: keyof Counts, target: number): number {
    if (s.window === undefined || target < 0) return WAIT_UNKNOWN_MS;
    return Math.max(1, s.window.waitUntil(now, which, target));
  }

  #refuse(t: Tenant, now: number, limit: LimitKind, message: string, wait: number | undefined): Verdict {
    return { ok: false, limit, message, retryAfterMs: wait, headers: this.headers(t, now) };
  }
}

/** Retry-After when this router's own window cannot say (the others' admissions fill the limit): a second. */
const WAIT_UNKNOWN_MS = 1_000;

/** OpenAI's duration format: "20ms", "1s", "1.5s", "6m0s", "1h2m3s". */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total < 1_000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = (total % 60_000) / 1_000;
  const sec = `${Number.isInteger(s) ? s : s.toFixed(3).replace(/0+$/, '')}s`;
  if (h > 0) return `${h}h${m}m${sec}`;
  if (m > 0) return `${m}m${sec}`;
  return sec;
}
