/**
 * The tenants in force and what the router core asks of them: who a key
 * belongs to, which band a request runs in, the limiter and the usage book.
 * The HTTP transport identifies the tenant; the simulator names it; both
 * hand the core a `Who`.
 *
 * Band rule: the band asked for (x-warmpath-priority) or the tenant's
 * default (its first), capped to its bands: the highest of its bands not
 * above the one asked for, else its lowest. A tenant never runs above its
 * highest band; asking lower than its bands gets its lowest.
 */
import { bandRank, PRIORITY_BANDS } from '@warmpath/shared/wire';
import { keyDigest, type TenantSet } from './file.ts';
import { TenantLimiter } from './limits.ts';
import { guardsOf, sloBoundMs } from './slo.ts';
import type { Reserve } from '../placement/reserve.ts';
import { BandSplit } from './split.ts';
import type { FleetShare, PriorityBand, Tenant } from './types.ts';
import { UsageBook } from './usage.ts';

/** The tenant a request runs as, and its band. */
export interface Who {
  readonly tenant: Tenant;
  readonly band: PriorityBand;
}

/** The band a request of `t` runs in when it asked for `asked` (a header value, possibly invalid). */
export function bandFor(t: Tenant, asked: string | undefined): PriorityBand {
  const want = bandRank(asked);
  if (want === undefined) return t.priorities[0]!;
  let best: PriorityBand | undefined;
  let lowest = t.priorities[0]!;
  for (const b of t.priorities) {
    const r = PRIORITY_BANDS.indexOf(b);
    if (r >= want && (best === undefined || r < PRIORITY_BANDS.indexOf(best))) best = b;
    if (r > PRIORITY_BANDS.indexOf(lowest)) lowest = b;
  }
  return best ?? lowest;
}

export class Tenancy {
  readonly limiter: TenantLimiter;
  readonly usage = new UsageBook();
  /** When the interactive reserve is in force (split.ts). */
  readonly split = new BandSplit();
  #set: TenantSet;
  /** Per band: the tightest objective of a band above it (slo.ts). */
  #guards: number[];

  constructor(set: TenantSet, share?: FleetShare) {
    this.#set = set;
    this.#guards = guardsOf(set.tenants.values());
    this.limiter = new TenantLimiter(share);
  }

  get tenants(): ReadonlyMap<string, Tenant> {
    return this.#set.tenants;
  }

  /** A new file is in force: requests in flight keep the tenant they were admitted as. */
  replace(set: TenantSet): void {
    this.#set = set;
    this.#guards = guardsOf(set.tenants.values());
    const names = new Set(set.tenants.keys());
    this.limiter.retain(names);
    this.usage.retain(names);
  }

  /** The tenant of an API key, or undefined. */
  byKey(key: string | undefined): Tenant | undefined {
    return key === undefined ? undefined : this.#set.byKey.get(keyDigest(key));
  }

  who(t: Tenant, asked: string | undefined): Who {
    return { tenant: t, band: bandFor(t, asked) };
  }

  /** The side of the interactive reserve a request is placed on now; undefined: the whole group (split.ts). */
  sideOf(who: Who | undefined, now: number): Reserve | undefined {
    return this.split.sideOf(this.#set.reserve, who?.band, now);
  }

  /** The most predicted TTFT (ms) the request may be sent with: SLO admission's bound (slo.ts); Infinity without objectives. */
  sloBoundMs(who: Who): number {
    return sloBoundMs(who.tenant, who.band, this.#guards);
  }
}
