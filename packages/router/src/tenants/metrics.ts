/**
 * The tenants' Prometheus series, on the router's registry. A `tenant` label
 * only ever carries a name from the tenants file, and only for tenants that
 * sent a request since start (usage) or were refused (limits), so a file of
 * thousands of tenants costs series only for those in use. No model label:
 * per-model usage is in GET /warmpath/v1/usage.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { LimitKind } from './limits.ts';
import type { Tenancy } from './tenancy.ts';
import type { CoreMetrics } from '../core/types.ts';
import type { PriorityBand } from './types.ts';

export interface TenantMetrics {
  limited(tenant: string, limit: LimitKind): void;
  shed(band: PriorityBand): void;
  sloHeld(band: PriorityBand): void;
  reserveSide(side: 'reserved' | 'rest'): void;
  /** A tenants file read: in force (`ok`) or kept out (`invalid`). */
  reloaded(result: 'ok' | 'invalid'): void;
}

/** The router core's tenant callbacks, counted once the registry's TenantMetrics exist (`counters()` is undefined before). */
export function tenantCoreMetrics(
  counters: () => TenantMetrics | undefined,
): Required<Pick<CoreMetrics, 'limited' | 'shed' | 'sloHeld' | 'reserveSide'>> {
  return {
    limited: (tenant, limit) => counters()?.limited(tenant, limit),
    shed: (band) => counters()?.shed(band),
    sloHeld: (band) => counters()?.sloHeld(band),
    reserveSide: (side) => counters()?.reserveSide(side),
  };
}

export function tenantMetrics(registry: Registry, tenancy: Tenancy): TenantMetrics {
  gauges(registry, tenancy);
  return eventCounters(registry);
}

/** The counters of events (refusals, sheds, holds, reserve sides, reloads), as the callbacks that count them. */
function eventCounters(registry: Registry): TenantMetrics {
  const limited = new Counter({
    name: 'warmpath_router_tenant_limited_total',
    help: "Requests refused by a tenant's limit (rate_limit_exceeded), by tenant and limit (requests, tokens, concurrent)",
    labelNames: ['tenant', 'limit'] as const,
    registers: [registry],
  });
  const shed = new Counter({
    name: 'warmpath_router_queue_shed_total',
    help: 'Queued requests shed for a higher priority band while the queue was full, by the shed request band',
    labelNames: ['band'] as const,
    registers: [registry],
  });
  const held = new Counter({
    name: 'warmpath_router_slo_held_total',
    help: "Placements held in the queue by SLO admission (predicted TTFT over the band's bound), by band",
    labelNames: ['band'] as const,
    registers: [registry],
  });
  const sides = new Counter({
    name: 'warmpath_router_reserve_placements_total',
    help: 'Placements made on one side of the interactive reserve while it was in force (reserved = interactive, rest = lower bands)',
    labelNames: ['side'] as const,
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'warmpath_router_tenants_reloads_total',
    help: 'Tenants file reads after start, by result (ok = in force, invalid = the last good file kept)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  return {
    limited: (tenant, limit) => limited.inc({ tenant, limit }),
    shed: (band) => shed.inc({ band }),
    sloHeld: (band) => held.inc({ band }),
    reserveSide: (side) => sides.inc({ side }),
    reloaded: (result) => reloads.inc({ result }),
  };
}

/** The series read from the tenancy at each scrape: tenants in force, usage, in flight. */
function gauges(registry: Registry, tenancy: Tenancy): void {
  new Gauge({
    name: 'warmpath_router_tenants',
    help: 'Tenants in the tenants file in force',
    registers: [registry],
    collect() {
      this.set(tenancy.tenants.size);
    },
  });
  new Counter({
    name: 'warmpath_router_tenant_requests_total',
    help: 'Requests of each tenant that ended (any outcome), since start',
    labelNames: ['tenant'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { tenant, total } of tenancy.usage.totals()) this.inc({ tenant }, total.requests);
    },
  });
  new Counter({
    name: 'warmpath_router_tenant_tokens_total',
    help: "Tokens of each tenant's requests as the engines reported them, by kind (prompt, cached = of prompt, completion)",
    labelNames: ['tenant', 'kind'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { tenant, total } of tenancy.usage.totals()) {
        this.inc({ tenant, kind: 'prompt' }, total.promptTokens);
        this.inc({ tenant, kind: 'cached' }, total.cachedTokens);
        this.inc({ tenant, kind: 'completion' }, total.completionTokens);
      }
    },
  });
  new Gauge({
    name: 'warmpath_router_tenant_in_flight',
    help: 'Requests of each tenant in flight through this router (queued included), tenants with any',
    labelNames: ['tenant'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const name of tenancy.tenants.keys()) {
        const n = tenancy.limiter.inFlight(name);
        if (n > 0) this.set({ tenant: name }, n);
      }
    },
  });
}
