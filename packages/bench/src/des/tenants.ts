/**
 * Tenants in the discrete-event fleet: each router's tenancy (the tenants
 * file, its limiter and fair queue) and, when the limits are shared, its
 * fleet share, the routers exchanging usage messages every SHARE_PUBLISH_MS
 * through the run's gossip model (gossip.ts: the same delay and loss as the
 * replicas' state) — or, `shared: false`, each router alone with the limits
 * it was given, as a gateway without a store is deployed.
 * A request's tenant is its API key's (Authorization: Bearer …), its band
 * the x-warmpath-priority it asks for, capped as the live router caps it.
 * Complexity: O(routers²) deliveries per publish period. No draw from the
 * run's random stream without tenants (so every other run is unchanged).
 */
import { parseTenants, SHARE_PUBLISH_MS, Tenancy, UsageShare, type Who } from '@warmpath/router';
import { HEADERS } from '@warmpath/shared/wire';
import type { PlannedRequest } from '../loadgen.ts';
import { delaySampler, type GossipModel } from './gossip.ts';
import type { EventQueue } from './queue.ts';

export interface DesTenantsOptions {
  /** The tenants file's text (YAML or JSON). */
  file: string;
  /** Share usage between routers over gossip (Warmpath); false: each router's limits are its own. */
  shared: boolean;
  /** From `fromMs` (run time), `router` neither hears the others nor is heard: a partition. */
  partition?: { router: number; fromMs: number };
}

export interface DesTenants {
  /** Router i's tenancy. */
  readonly tenancies: readonly Tenancy[];
  /** Who a request is, at router i (undefined: no known key). */
  who(router: number, p: PlannedRequest): Who | undefined;
  /** Starts the routers' publishing (random phases) until `endAt`. */
  start(endAt: number): void;
}

export function desTenants(
  o: DesTenantsOptions,
  routers: number,
  q: EventQueue,
  random: () => number,
  gossip: GossipModel,
): DesTenants {
  const set = parseTenants(o.file, 'tenants file');
  const limited = (name: string): boolean => {
    const l = set.tenants.get(name)?.limits;
    return l !== undefined && (l.requestsPerMinute !== undefined || l.tokensPerMinute !== undefined);
  };
  const shares: UsageShare[] = [];
  const tenancies = Array.from({ length: routers }, (_, i) => {
    if (!o.shared) return new Tenancy(set);
    let tenancy: Tenancy | undefined;
    const share = new UsageShare({
      id: `router-${i}`,
      local: (now) => tenancy!.limiter.localUsage(now),
      limited,
      epoch: 1,
    });
    shares.push(share);
    return (tenancy = new Tenancy(set, share));
  });
  const cut = o.partition;
  const cutOff = (a: number, b: number): boolean =>
    cut !== undefined && (a === cut.router || b === cut.router) && q.now >= cut.fromMs;
  const start = (endAt: number): void => {
    if (shares.length < 2) return;
    const delay = delaySampler(gossip.delay, random);
    for (const [i, from] of shares.entries()) {
      const publish = (): void => {
        const bytes = from.encode(q.now);
        for (const [j, to] of shares.entries()) {
          if (j === i || cutOff(i, j) || (gossip.loss > 0 && random() < gossip.loss)) continue;
          q.after(delay(), () => void to.ingest(bytes, from.id, q.now));
        }
        if (q.now < endAt) q.after(SHARE_PUBLISH_MS, publish);
      };
      q.at(random() * SHARE_PUBLISH_MS, publish);
    }
  };
  return {
    tenancies,
    start,
    who: (router, p) => {
      const tenancy = tenancies[router]!;
      const t = tenancy.byKey(p.headers?.authorization?.replace(/^Bearer /, ''));
      return t === undefined ? undefined : tenancy.who(t, p.headers?.[HEADERS.priority]);
    },
  };
}
