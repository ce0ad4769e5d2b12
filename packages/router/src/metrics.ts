/**
 * Router metrics (prom-client, one Registry per router so several routers can
 * share a process). Hot-path updates are counter increments and one histogram
 * observation; fleet gauges are computed at scrape time from the view.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { FleetView } from './fleet/view.ts';

export interface RouterMetrics {
  registry: Registry;
  branches: Counter<'policy' | 'branch'>;
  placementSeconds: Histogram<'policy'>;
  upstreamErrors: Counter<'kind'>;
  retries: Counter;
  responses: Counter<'code'>;
  queueWaiting: Gauge;
  ejections: Counter;
  retriesDenied: Counter<'reason'>;
}

export function createMetrics(view: FleetView, extra: { queueLength: () => number; overlaySize: () => number; ejected: () => number }): RouterMetrics {
  const registry = new Registry();
  const branches = new Counter({ name: 'warmpath_router_placements_total', help: 'Placement decisions by policy and branch', labelNames: ['policy', 'branch'] as const, registers: [registry] });
  const placementSeconds = new Histogram({
    name: 'warmpath_router_placement_seconds',
    help: 'Time spent in the placement function',
    labelNames: ['policy'] as const,
    buckets: [1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 5e-3],
    registers: [registry],
  });
  const upstreamErrors = new Counter({ name: 'warmpath_router_upstream_errors_total', help: 'Upstream failures by kind (connect, reset, failed = a 5xx before the first byte, rejected, timeout, interrupted, aborted)', labelNames: ['kind'] as const, registers: [registry] });
  const retries = new Counter({ name: 'warmpath_router_retries_total', help: 'Requests placed again on another replica before the first byte', registers: [registry] });
  const responses = new Counter({ name: 'warmpath_router_errors_total', help: 'Error answers by code', labelNames: ['code'] as const, registers: [registry] });
  const queueWaiting = new Gauge({ name: 'warmpath_router_queue_waiting', help: 'Requests waiting in the saturation queue', registers: [registry], collect() { this.set(extra.queueLength()); } });
  new Gauge({
    name: 'warmpath_router_replicas',
    help: 'Known replicas by status (ready, draining, down, stale, mismatch = chunkChars differs from the router)',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      for (const [status, n] of Object.entries(view.statusCounts())) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'warmpath_router_gossip_drops',
    help: 'State messages dropped, by reason (too_large, malformed, version, invalid, fleet, superseded)',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      for (const [reason, n] of Object.entries(view.drops)) this.set({ reason }, n);
    },
  });
  new Gauge({ name: 'warmpath_router_gossip_applied', help: 'State messages applied', registers: [registry], collect() { this.set(view.applied); } });
  new Gauge({
    name: 'warmpath_router_snapshot_pulls',
    help: 'Digest snapshot pulls by result',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      this.set({ result: 'ok' }, view.pulls.ok);
      this.set({ result: 'failed' }, view.pulls.failed);
    },
  });
  new Gauge({ name: 'warmpath_router_digest_index_hashes', help: 'Distinct chain hashes in the digest index', registers: [registry], collect() { this.set(view.indexSize); } });
  new Gauge({ name: 'warmpath_router_overlay_hashes', help: 'Chain hashes in the optimistic overlay', registers: [registry], collect() { this.set(extra.overlaySize()); } });
  const ejections = new Counter({ name: 'warmpath_router_ejections_total', help: 'Replicas ejected from placement for consecutive failures (outlier ejection)', registers: [registry] });
  new Gauge({ name: 'warmpath_router_ejected_replicas', help: 'Replicas ejected now', registers: [registry], collect() { this.set(extra.ejected()); } });
  const retriesDenied = new Counter({ name: 'warmpath_router_retries_denied_total', help: 'Failed requests not tried again, by reason (budget = the retry budget is spent, crashes = engines crashed on 2 replicas)', labelNames: ['reason'] as const, registers: [registry] });
  return { registry, branches, placementSeconds, upstreamErrors, retries, responses, queueWaiting, ejections, retriesDenied };
}
