/**
 * The router core's seams: what a transport (the HTTP server, the
 * discrete-event simulator) gives the core and what the core asks of it.
 * The core never does I/O and never reads a clock of its own.
 */
import type { EngineUsage, RequestInfo } from '@warmpath/shared/wire';
import type { RouterConfig } from '../config.ts';
import type { Replica, ViewEvent } from '../fleet/view.ts';
import type { Route } from '../placement/route.ts';
import type { Branch, Policy, Transferred } from '../placement/types.ts';
import type { Tenancy } from '../tenants/tenancy.ts';
import type { PriorityBand } from '../tenants/types.ts';

/** Time and timers: the wall clock and setTimeout live, the event queue in the simulator. */
export type { Clock } from '@warmpath/shared/runtime';
import type { Clock } from '@warmpath/shared/runtime';

/** One attempt: send the request (the transport's context `ctx`) to `replica`. */
export interface Dispatch<T> {
  readonly ctx: T;
  readonly info: RequestInfo;
  readonly replica: Replica;
  /** Why this replica: the policy's branch. */
  readonly branch: Branch;
  /** The branch, the policy's step, the attempt's kind and the deciding term, as reported in x-warmpath-route (placement/route.ts). */
  readonly route: Route;
  /** 0 for the first attempt. */
  readonly attempt: number;
  /** The placement's queue limit (x-warmpath-queue-limit), tokens; never on the last attempt. */
  readonly queueLimit?: number;
  /** With tenants: the request's priority band (x-warmpath-priority to the agent). */
  readonly band?: PriorityBand;
  /** With tenants: the x-ratelimit-* headers its answer carries. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Disaggregated fleets, a KV transfer (placement/pair.ts): the replica that
   * prefills first; `replica` decodes and answers. The transport speaks the
   * engines' dialect (http/pd.ts), calls `prefillDone` once when the prefill
   * leg ended (`ok`: it answered and the decode leg goes on), and reports a
   * failure of that leg with `leg: 'prefill'`.
   */
  readonly prefill?: Replica;
  readonly prefillDone?: (ok: boolean) => void;
  /** A decode leg alone, after another decode replica refused it: its prefill is done (placement/pair.ts, 'redecode'). */
  readonly transfer?: Transferred;
  /** Cached tokens the placement predicted there (x-warmpath-expected-cached-tokens; receipts.ts). */
  readonly expectedCached: number;
}

/**
 * How an attempt ended, reported exactly once by the transport.
 * Before the first byte (the core may try another replica): `rejected` (the
 * agent's 429/503, with its x-warmpath-reject-reason), `connect` (never
 * reached it), `reset` (failed before the response headers), `failed` (it
 * answered another 5xx, which the transport did not pass on).
 * `timeout`: no response headers in time; the core answers upstream_timeout
 * (no retry: the replica may be working on it).
 * `done`: the response was committed to the client (its first byte sent) and
 * has ended; `error` names a failure after the first byte, for metrics
 * (`interrupted`: the replica failed or went silent past the between-chunks
 * deadline; `timeout`: the request's total deadline passed); `usage`: the
 * engine's usage from the agent's receipt.
 */
export type SendResult =
  | {
      readonly kind: 'rejected';
      readonly status: number;
      readonly reason?: string;
      readonly queued?: number;
      readonly leg?: Leg;
      /** The decode leg was refused after its prefill finished: the transfer another decode replica can take. */
      readonly transfer?: Transferred;
    }
  | { readonly kind: 'connect'; readonly leg?: Leg }
  | { readonly kind: 'reset'; readonly leg?: Leg }
  | { readonly kind: 'failed'; readonly status: number; readonly leg?: Leg }
  | { readonly kind: 'timeout' }
  | {
      readonly kind: 'done';
      readonly outcome: 'ok' | 'aborted' | 'error';
      readonly status?: number;
      readonly error?: 'aborted' | 'interrupted' | 'timeout';
      /** The engine's usage from its agent's receipt, when it reported one: receipts (receipts.ts) and tenant accounting read it. */
      readonly usage?: EngineUsage;
    };

/** Which leg of a disaggregated attempt failed before the first byte: the prefill replica's (absent: the dispatch's `replica`). */
export type Leg = 'prefill';

/** The transport: forward one attempt and call `report` once when it ends (never synchronously inside a core call it was not given). */
export type Send<T> = (d: Dispatch<T>, report: (r: SendResult) => void) => void;

/** An error answer the core decided on; the transport renders it (HTTP: sendError with Retry-After). */
export interface RouteError {
  readonly code: 'no_replica' | 'fleet_saturated' | 'upstream_error' | 'upstream_timeout' | 'rate_limit_exceeded';
  readonly message?: string;
  /** Send Retry-After (config.retryAfterS unless `retryAfterS`): the fleet may have room later. */
  readonly retryAfter: boolean;
  /** Retry-After in seconds, instead of config.retryAfterS (a tenant's limit knows when it frees). */
  readonly retryAfterS?: number;
  /** More headers (a tenant's x-ratelimit-*). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Upstream failure kinds counted in metrics. */
export type UpstreamErrorKind = 'connect' | 'reset' | 'failed' | 'rejected' | 'timeout' | 'aborted' | 'interrupted';

/** Why a failed request was not tried again: the router-wide retry budget, or it already crashed engines on CRASH_LIMIT replicas. */
export type RetryDenial = 'budget' | 'crashes';

/** What the core counts; the HTTP server backs it with prom-client, the simulator with nothing. */
export interface CoreMetrics {
  /** A placement decision by route (`saturated` once per queued request, `no-replica` per failure). */
  placed(route: Route): void;
  /** Time placement took, seconds; when given, the core times each placement. */
  placementSeconds?(seconds: number): void;
  /** A request placed again after a failure before its first byte. */
  retried(): void;
  upstreamError(kind: UpstreamErrorKind): void;
  /** A replica was ejected for `ms` (outliers.ts). */
  ejected?(replica: string, ms: number): void;
  /** A request that failed was not tried again. */
  retryDenied?(reason: RetryDenial): void;
  /** A stale refusal found this much prefill (tokens) queued beyond the attempt's queue limit: other routers' work this router's view missed. */
  missed?(tokens: number): void;
  /** A tenant's request refused by one of its limits. */
  limited?(tenant: string, limit: 'requests' | 'tokens' | 'concurrent'): void;
  /** A queued request shed for a higher band's (its band). */
  shed?(band: PriorityBand): void;
  /** A request held in the queue by SLO admission (its band). */
  sloHeld?(band: PriorityBand): void;
  /** A placement made on one side of the interactive reserve (tenants/split.ts). */
  reserveSide?(side: 'reserved' | 'rest'): void;
}

/** What a transport gives the router core. */
export interface RouterCoreOptions<T> {
  /** Validated router config (routerConfig / loadConfig). */
  config: RouterConfig;
  id: string;
  clock: Clock;
  send: Send<T>;
  /** Render an error answer the core decided on. */
  answer: (ctx: T, error: RouteError) => void;
  /** Pull a replica's digest snapshot (msgpack bytes). */
  fetchSnapshot: (r: Replica) => Promise<Uint8Array>;
  /** Random source of randomized policies; default Math.random. */
  random?: () => number;
  /** A policy instance instead of config.policy from the registry (tests, emulations). */
  policy?: Policy;
  metrics?: CoreMetrics;
  onViewEvent?: (e: ViewEvent) => void;
  /** Tenants (a tenants file): limits, bands, the fair queue, usage. Without: one default tenant, as before. */
  tenancy?: Tenancy;
  /** After each sweep (the HTTP server closes pools of forgotten replicas). */
  onSweep?: () => void;
}
