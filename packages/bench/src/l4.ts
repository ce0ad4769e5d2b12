/**
 * Which router each request reaches, as an L4 balancer in front of the
 * routers spreads clients: the same assignment drives live and DES runs.
 *
 * - random: a seeded draw per request (a fresh connection per request, or a
 *   balancer that spreads requests) — the default;
 * - sticky: every request of one session (or client) reaches the same router,
 *   as keep-alive connections through an L4 balancer do; a request without a
 *   session draws at random.
 * Complexity: O(requests). Trade-off: sticky is kinder to routers that learn
 * from their own history; random is what a shared balancer usually does.
 */
import { hashString32 } from '@warmpath/shared/wire';
import { mulberry32 } from '@warmpath/shared/runtime';
import type { PlannedRequest } from './loadgen.ts';

export const L4_MODES = ['random', 'sticky'] as const;
export type L4Mode = (typeof L4_MODES)[number];

/** Sets `target` (the router index) on every request of the plan, in place; returns the plan. */
export function assignRouters(plan: PlannedRequest[], routers: number, mode: L4Mode, seed: number): PlannedRequest[] {
  const n = Math.max(1, routers);
  const random = mulberry32((0x4c34 ^ seed) >>> 0);
  for (const p of plan) {
    const draw = Math.floor(random() * n); // drawn for every request, so both modes consume the stream alike
    p.target = mode === 'sticky' && p.session !== undefined ? hashString32(p.session) % n : draw;
  }
  return plan;
}
