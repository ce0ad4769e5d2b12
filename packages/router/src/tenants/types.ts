/**
 * The tenants' vocabulary, shared by the file loader, the limiter, the fair
 * queue and usage accounting, and the seam to the fleet-wide share of usage
 * (`FleetShare`): what the other routers admitted, as this router last heard
 * it. Types only, and the share a lone router uses.
 */
import type { PriorityBand } from '@warmpath/shared/wire';

export type { PriorityBand };

/** A tenant's limits; an absent one is unlimited. Per-minute limits hold over any 60 s (window.ts). */
export interface TenantLimits {
  readonly requestsPerMinute?: number;
  /** Prompt plus completion tokens, as OpenAI counts them. */
  readonly tokensPerMinute?: number;
  /** Requests in flight at once (queued ones included). */
  readonly concurrent?: number;
  /** Pace the per-minute limits (pace.ts): admitted at their rate, with a burst of this many seconds of it; absent: the window alone. */
  readonly burstSeconds?: number;
}

/** One tenant, as the file declares it (file.ts validated it). */
export interface Tenant {
  readonly name: string;
  readonly keys: readonly string[];
  /** Its share of a band's work under saturation, relative to the others' (default 1). */
  readonly weight: number;
  /** Bands it may use, its default first. */
  readonly priorities: readonly PriorityBand[];
  readonly limits: TenantLimits;
  /** Time-to-first-token objective per band, ms (optional). */
  readonly slo?: Readonly<Partial<Record<PriorityBand, { readonly ttftMs: number }>>>;
}

/** The interactive reserve (docs/TENANTS.md, "Interactive reserve"; placement/reserve.ts, split.ts). */
export interface BandReserve {
  /** Share of each model group's replicas set apart for the interactive band, in (0, 1). */
  readonly interactive: number;
  /** The split is lifted after this long without requests of one side (interactive, or the lower bands), s. */
  readonly lendAfterSeconds: number;
}

/** Requests and tokens, over a window or since start. */
export interface Counts {
  requests: number;
  tokens: number;
}

export interface FleetShare {
  /** What the OTHER routers admitted for this tenant over the last 60 s, as last heard. */
  others(tenant: string, now: number): { requests: number; tokens: number };
  /** 1 while this router hears the other routers; 1/N (N = routers last known) when cut off from them. */
  limitFactor(now: number): number;
  /** Other routers known (pace.ts floors this router's share at 1 ÷ (1 + known)); absent: none. */
  routers?(now: number): { known: number };
}

/** A router alone: nobody else admits anything, and the whole limit is its own. */
export const LONE_ROUTER: FleetShare = {
  others: () => ({ requests: 0, tokens: 0 }),
  limitFactor: () => 1,
};
