/**
 * Router metrics (prom-client, one Registry per router so several routers can
 * share a process). Hot-path updates are counter increments and histogram
 * observations; fleet gauges, and the counters over the fleet view's running
 * counts, are read at scrape time. No label carries a model or a path a
 * client chose. Only the receipts (core/receipts.ts) carry a replica: an
 * operator must know which replica the predictions miss on; they are four
 * series per replica the router knows, dropped when it forgets one (a test
 * holds the total under 5,000 at 100 replicas).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LINT_FAILING_DEFAULT_METRICS } from '@warmpath/shared/runtime';
import type { FleetView } from './fleet/view.ts';
import type { ReceiptCounts } from './core/receipts.ts';

export interface RouterMetrics {
  registry: Registry;
  branches: Counter<'policy' | 'step' | 'branch' | 'attempt' | 'by'>;
  /** Disaggregated fleets: placements by pair mode (transfer, local) and reason (placement/pair.ts). */
  pairs: Counter<'mode' | 'by'>;
  placementSeconds: Histogram<'policy'>;
  upstreamErrors: Counter<'kind'>;
  retries: Counter;
  responses: Counter<'code'>;
  queueWaiting: Gauge;
  /** Every HTTP request answered, by route (see http/observe.ts) and status. */
  requests: Counter<'route' | 'status'>;
  /** Inference requests: arrival to the first response byte sent to the client. */
  ttftSeconds: Histogram<'route'>;
  /** Inference requests: arrival to the end of the response. */
  durationSeconds: Histogram<'route'>;
  /** Attempts sent to replicas, by how each ended. */
  attempts: Counter<'result'>;
  ejections: Counter;
  retriesDenied: Counter<'reason'>;
  /** Prefill a stale refusal found queued beyond the attempt's limit, tokens. */
  missedTokens: Histogram;
}

/** A counter over a running count kept elsewhere (the fleet view's), set from it at scrape time: a number, or one per label value. */
function countOf(
  registry: Registry,
  name: string,
  help: string,
  labelName: string | undefined,
  read: () => number | Readonly<Record<string, number>>,
): void {
  new Counter({
    name,
    help,
    labelNames: labelName !== undefined ? [labelName] : [],
    registers: [registry],
    collect() {
      this.reset();
      const counts = read();
      if (typeof counts === 'number') this.inc(counts);
      else for (const [value, n] of Object.entries(counts)) this.inc({ [labelName!]: value }, n);
    },
  });
}

/** What the scrape-time gauges read beside the fleet view: the router core's queue and local state. */
export interface ScrapeReadings {
  queueLength(): number;
  overlaySize(): number;
  ejected(): number;
  routers(): number;
  /** Other routers whose batches this router heard within the state TTL. */
  routersHeard(): number;
  /** The router core's receipts per replica. */
  receipts(): ReadonlyMap<string, Readonly<ReceiptCounts>>;
}

export function createMetrics(view: FleetView, extra: ScrapeReadings): RouterMetrics {
  const registry = new Registry();
  const branches = new Counter({
    name: 'warmpath_router_placements_total',
    help: 'Placement decisions by policy, step, branch, attempt kind (first, retry, queued) and deciding term (by); x-warmpath-route carries the same',
    labelNames: ['policy', 'step', 'branch', 'attempt', 'by'] as const,
    registers: [registry],
  });
  const pairs = new Counter({
    name: 'warmpath_router_pd_placements_total',
    help: 'Disaggregated fleets: placements by mode (transfer: prefill replica then KV to the decode replica; local: the decode replica prefills) and reason (pd-by in x-warmpath-route)',
    labelNames: ['mode', 'by'] as const,
    registers: [registry],
  });
  const placementSeconds = new Histogram({
    name: 'warmpath_router_placement_seconds',
    help: 'Time spent in the placement function',
    labelNames: ['policy'] as const,
    buckets: [1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 5e-3],
    registers: [registry],
  });
  const upstreamErrors = new Counter({
    name: 'warmpath_router_upstream_errors_total',
    help: 'Upstream failures by kind (connect, reset, failed = a 5xx before the first byte, rejected, timeout, interrupted, aborted)',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'warmpath_router_retries_total',
    help: 'Requests placed again on another replica before the first byte',
    registers: [registry],
  });
  const responses = new Counter({
    name: 'warmpath_router_errors_total',
    help: 'Error answers by code',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const queueWaiting = new Gauge({
    name: 'warmpath_router_queue_waiting',
    help: 'Requests waiting in the saturation queue',
    registers: [registry],
    collect() {
      this.set(extra.queueLength());
    },
  });
  const ejections = new Counter({
    name: 'warmpath_router_ejections_total',
    help: 'Replicas ejected from placement for consecutive failures (outlier ejection)',
    registers: [registry],
  });
  const retriesDenied = new Counter({
    name: 'warmpath_router_retries_denied_total',
    help: 'Failed requests not tried again, by reason (budget = the retry budget is spent, crashes = engines crashed on 2 replicas)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  fleetGauges(registry, view, extra);
  receiptCounters(registry, extra.receipts);
  const perRequest = requestMetrics(registry);
  collectDefaultMetrics({ register: registry });
  for (const name of LINT_FAILING_DEFAULT_METRICS) registry.removeSingleMetric(name);
  return {
    registry,
    branches,
    pairs,
    placementSeconds,
    upstreamErrors,
    retries,
    responses,
    queueWaiting,
    ejections,
    retriesDenied,
    ...perRequest,
  };
}

/** The fleet view's counts and this router's local state, read at scrape time. */
function fleetGauges(registry: Registry, view: FleetView, extra: ScrapeReadings): void {
  new Gauge({
    name: 'warmpath_router_replicas',
    help: 'Known replicas by status (ready, draining, down, stale, mismatch = chunkChars differs from the router)',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      for (const [status, n] of Object.entries(view.statusCounts())) this.set({ status }, n);
    },
  });
  countOf(
    registry,
    'warmpath_router_gossip_drops_total',
    'State messages dropped, by reason (too_large, malformed, version, invalid, fleet, superseded, stale; not_allowed, future, not_owner, too_many_ids, foreign_url, relayed, rate: docs/SECURITY.md)',
    'reason',
    () => view.drops,
  );
  countOf(registry, 'warmpath_router_gossip_applied_total', 'State messages applied', undefined, () => view.applied);
  countOf(registry, 'warmpath_router_snapshot_pulls_total', 'Digest snapshot pulls by result', 'result', () => ({
    ok: view.pulls.ok,
    failed: view.pulls.failed,
  }));
  new Gauge({
    name: 'warmpath_router_digest_index_hashes',
    help: 'Distinct chain hashes in the digest index',
    registers: [registry],
    collect() {
      this.set(view.indexSize);
    },
  });
  new Gauge({
    name: 'warmpath_router_overlay_hashes',
    help: 'Chain hashes in the optimistic overlay',
    registers: [registry],
    collect() {
      this.set(extra.overlaySize());
    },
  });
  new Gauge({
    name: 'warmpath_router_traffic_routers',
    help: "Routers' worth of traffic the fleet carries per request of this router's (in-flight requests the replicas publish over this router's own; placement's share of the bound floor)",
    registers: [registry],
    collect() {
      this.set(extra.routers());
    },
  });
  new Gauge({
    name: 'warmpath_router_routers_heard',
    help: 'Other routers whose gossip batches carried a state here within the state TTL (the traffic routers estimate starts from them)',
    registers: [registry],
    collect() {
      this.set(extra.routersHeard());
    },
  });
  new Gauge({
    name: 'warmpath_router_ejected_replicas',
    help: 'Replicas ejected now',
    registers: [registry],
    collect() {
      this.set(extra.ejected());
    },
  });
}

/** The receipts per replica, read at scrape time (docs/OPERATIONS.md, "Receipts"). */
function receiptCounters(registry: Registry, read: ScrapeReadings['receipts']): void {
  const perReplica = (k: keyof ReceiptCounts) => (): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const [id, c] of read()) out[id] = c[k];
    return out;
  };
  countOf(
    registry,
    'warmpath_router_receipts_total',
    "Answers whose engine reported cached tokens, per replica: the receipts' denominator for the mean prediction error",
    'replica',
    perReplica('judged'),
  );
  countOf(
    registry,
    'warmpath_router_expected_hits_total',
    'Answers the placement predicted to hit at least half their prompt, per replica: the misroute rate denominator',
    'replica',
    perReplica('expectedHits'),
  );
  countOf(
    registry,
    'warmpath_router_misroutes_total',
    'Predicted hits (at least half the prompt) whose engine found less than half cached, per replica',
    'replica',
    perReplica('misroutes'),
  );
  countOf(
    registry,
    'warmpath_router_prediction_error_tokens_total',
    'Sum of |expected - reported cached tokens| over the receipts, per replica',
    'replica',
    perReplica('errorTokens'),
  );
}

/** The HTTP transport's per-request metrics (http/observe.ts feeds them). */
function requestMetrics(
  registry: Registry,
): Pick<RouterMetrics, 'requests' | 'ttftSeconds' | 'durationSeconds' | 'attempts' | 'missedTokens'> {
  const requests = new Counter({
    name: 'warmpath_router_requests_total',
    help: 'HTTP requests answered, by route (the path, "other" for unknown ones) and status ("499": the client left before the answer)',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const ttftSeconds = new Histogram({
    name: 'warmpath_router_ttft_seconds',
    help: 'Inference requests: time from arrival to the first response byte sent to the client (the first token of a stream)',
    labelNames: ['route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const durationSeconds = new Histogram({
    name: 'warmpath_router_request_duration_seconds',
    help: 'Inference requests: time from arrival to the end of the response',
    labelNames: ['route'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'warmpath_router_upstream_attempts_total',
    help: 'Attempts sent to replicas, by result (ok, rejected, connect, reset, timeout, aborted, error)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const missedTokens = new Histogram({
    name: 'warmpath_router_refusal_missed_tokens',
    help: "Prefill tokens an agent's stale refusal found queued beyond the attempt's queue limit: other routers' work this router's view had not seen (how much the routers herd)",
    buckets: [0, 256, 1024, 4096, 16384, 65536, 262144],
    registers: [registry],
  });
  return { requests, ttftSeconds, durationSeconds, attempts, missedTokens };
}
