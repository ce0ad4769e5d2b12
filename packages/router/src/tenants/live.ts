/**
 * Tenants in a live router: the file read at start (an invalid one stops the
 * start with every problem named), then watched; an edit that validates is
 * in force at once, one that does not keeps the last good file, is logged
 * with its problems and counted (warmpath_router_tenants_reloads_total).
 */
import { ConfigError, type Logger } from '@warmpath/shared/runtime';
import type { Registry } from 'prom-client';
import { loadTenantFile, TenantFileError, watchTenantFile, type TenantSet } from './file.ts';
import { tenantMetrics, type TenantMetrics } from './metrics.ts';
import { Tenancy } from './tenancy.ts';
import type { FleetShare } from './types.ts';

export interface LiveTenancy {
  readonly tenancy: Tenancy;
  /** Binds the tenants' series to the router's registry (once it exists); returns the counters the core feeds. */
  metrics(registry: Registry): TenantMetrics;
  stop(): void;
}

/** Reads `path` (throws ConfigError when invalid) and watches it. */
export function startTenancy(path: string, logger: Logger, share?: FleetShare, pollMs?: number): LiveTenancy {
  let set: TenantSet;
  try {
    set = loadTenantFile(path);
  } catch (err) {
    throw new ConfigError(err instanceof TenantFileError ? err.message : `tenants file ${path}: ${String(err)}`);
  }
  const tenancy = new Tenancy(set, share);
  logger.info({ tenants: set.tenants.size, file: path }, `tenants: ${set.tenants.size} from ${path}`);
  let counters: TenantMetrics | undefined;
  const stop = watchTenantFile(path, {
    onReload: (next) => {
      tenancy.replace(next);
      counters?.reloaded('ok');
      logger.info({ tenants: next.tenants.size, file: path }, `tenants: ${next.tenants.size} from ${path} (reloaded)`);
    },
    onError: (err) => {
      counters?.reloaded('invalid');
      logger.error(
        { file: path, problems: err.problems.slice(0, 20) },
        `tenants file ${path} is invalid; the last good one stays in force: ${err.problems.slice(0, 3).join('; ')}`,
      );
    },
    ...(pollMs !== undefined ? { pollMs } : {}),
  });
  return {
    tenancy,
    metrics: (registry) => (counters ??= tenantMetrics(registry, tenancy)),
    stop,
  };
}
