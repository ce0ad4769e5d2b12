/**
 * @warmpath/router: the live router (`startRouter`), the transport-free
 * router core both the HTTP server and the discrete-event simulator drive,
 * its config, the policy registry, and tenants (limits, bands, the fair
 * queue, usage) for the simulator to give a core.
 */
export { startRouter, type Router, type RouterOptions } from './router.ts';
export { ROUTER_SCHEMA, POLICY_NAMES, routerConfig, type RouterConfig } from './config.ts';
export { RouterCore, placementChannel, SWEEP_MS, QUEUE_POLL_MS, type RouteJob } from './core/router-core.ts';
export { describeFor, type RequestHeaders } from './core/describe.ts';
export { judge, MISROUTE_SHARE, Receipts, type Receipt, type ReceiptCounts } from './core/receipts.ts';
export type {
  Clock,
  CoreMetrics,
  Dispatch,
  RouteError,
  RouterCoreOptions,
  Send,
  SendResult,
  UpstreamErrorKind,
} from './core/types.ts';
export type { Replica, ViewEvent } from './fleet/view.ts';
export {
  createPolicy,
  registerPolicy,
  warmpathOptions,
  BUILT_IN_POLICIES,
  type PolicyDefinition,
} from './placement/registry.ts';
export { rowOf, type Candidate, type CandidateTable, type Warmth } from './placement/candidates.ts';
export {
  BRANCHES,
  NO_REPLICA,
  SATURATED,
  type Branch,
  type KnownBranch,
  type Outcome,
  type PdRule,
  type Placement,
  type PlacementRequest,
  type Policy,
  type PolicyFactory,
  type RandomOptions,
  type WarmpathOptions,
} from './placement/types.ts';
export { ATTEMPT_KINDS, formatRoute, parseRoute, routeOf, type AttemptKind, type Route } from './placement/route.ts';
export { STEPS } from './placement/warmpath/index.ts';
export { SWITCHABLE_STEPS, SWITCHABLE_STEP_NAMES, type SwitchableStep } from './placement/warmpath/steps.ts';
export { ROUTE_LABELS } from './http/observe.ts';
export { TenantLimiter, formatDuration, type LimitKind, type LimitTicket, type Verdict } from './tenants/limits.ts';
export type { Tenant, FleetShare, Counts, PriorityBand, TenantLimits } from './tenants/types.ts';
export { LONE_ROUTER } from './tenants/types.ts';
export { UsageShare, SHARE_PUBLISH_MS, LIVE_MS, type ShareStats } from './tenants/share.ts';
export { bandFor, Tenancy, type Who } from './tenants/tenancy.ts';
export { loadTenantFile, parseTenants, TenantFileError, type TenantSet } from './tenants/file.ts';
export { SlidingWindow, SLOT_MS, WINDOW_MS, WINDOW_SLOTS } from './tenants/window.ts';
export type { EngineUsage, UsageCounts, UsageReport } from './tenants/usage.ts';
export { FairQueue, QUANTUM } from './tenants/fair.ts';
