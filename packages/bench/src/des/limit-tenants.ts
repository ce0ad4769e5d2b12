/**
 * The `tenants` scenario's tenants file as the router's Tenant objects, for
 * the admission DES (limits.ts), which has no file loader in front of it.
 */
import type { Tenant } from '@warmpath/router';
import { tenantsFile } from '../tenants-plan.ts';

export function limitsTenants(rate: number, perInstance = 1): Tenant[] {
  return tenantsFile({ rate, perInstance }).tenants.map((t) => ({
    name: t['name'] as string,
    keys: t['keys'] as string[],
    weight: (t['weight'] as number | undefined) ?? 1,
    priorities: t['priorities'] as Tenant['priorities'],
    limits: (t['limits'] as Tenant['limits'] | undefined) ?? {},
  }));
}
