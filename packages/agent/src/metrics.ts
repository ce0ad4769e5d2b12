/** The agent's Prometheus metrics: one registry per agent (several agents may share a process in tests). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  return {
    registry,
    ...proxyMetrics(registry),
    ...publishMetrics(registry),
    ...cacheMetrics(registry),
    ...engineMetrics(registry),
  };
}

/** The proxy's requests: admission, the engine's answers, time spent. */
function proxyMetrics(registry: Registry) {
  return {
    inflight: new Gauge({
      name: 'warmpath_agent_inflight_requests',
      help: 'Requests admitted and not finished',
      registers: [registry],
    }),
    inflightTokens: new Gauge({
      name: 'warmpath_agent_inflight_tokens',
      help: 'Work of in-flight requests, tokens (uncached prompt + max output)',
      registers: [registry],
    }),
    admitted: new Counter({
      name: 'warmpath_agent_admitted_total',
      help: 'Requests admitted to the engine',
      registers: [registry],
    }),
    rejected: new Counter({
      name: 'warmpath_agent_rejected_total',
      help: 'Requests refused, by reason (queue, kv, inflight, too_large, stale, draining, engine_down, invalid, unauthorized)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'warmpath_agent_upstream_errors_total',
      help: 'Engine requests that failed (connect, reset, mid-stream)',
      labelNames: ['phase'],
      registers: [registry],
    }),
    clientAborts: new Counter({
      name: 'warmpath_agent_client_aborts_total',
      help: 'Requests the client abandoned before the end',
      registers: [registry],
    }),
    firstByte: new Histogram({
      name: 'warmpath_agent_first_byte_seconds',
      help: 'From request arrival to first response byte from the engine',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    overhead: new Histogram({
      name: 'warmpath_agent_overhead_seconds',
      help: 'Time the agent spends before forwarding (body read, hashing, admission)',
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'warmpath_agent_request_duration_seconds',
      help: 'Proxied request duration',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
  };
}

/** What the publisher sends on gossip. */
function publishMetrics(registry: Registry) {
  return {
    gossipBytes: new Counter({
      name: 'warmpath_agent_gossip_published_bytes_total',
      help: 'State message bytes published on gossip',
      registers: [registry],
    }),
    gossipMessages: new Counter({
      name: 'warmpath_agent_gossip_published_messages_total',
      help: 'State messages published',
      registers: [registry],
    }),
    gossipErrors: new Counter({
      name: 'warmpath_agent_gossip_publish_errors_total',
      help: 'State publishes that failed',
      registers: [registry],
    }),
  };
}

/** The cache model: its size, evictions and corrections from the engine's feedback. */
function cacheMetrics(registry: Registry) {
  return {
    cacheChunks: new Gauge({
      name: 'warmpath_agent_cache_model_chunks',
      help: 'Chain hashes in the cache model',
      registers: [registry],
    }),
    cacheCapacity: new Gauge({
      name: 'warmpath_agent_cache_model_capacity_chunks',
      help: 'Effective cache model capacity, chunks',
      registers: [registry],
    }),
    cacheEvictionAge: new Gauge({
      name: 'warmpath_agent_cache_eviction_age_seconds',
      help: 'How long the prefix chunk the cache model last evicted had gone unused: a prompt repeated later than this misses (absent until the cache first fills)',
      // Registered at its first value (publisher.ts): before the cache fills there is no age, and 0 would read as "evicts at once".
      registers: [],
    }),
    cacheCorrections: new Counter({
      name: 'warmpath_agent_cache_model_corrections_total',
      help: 'Cache model corrections from engine feedback',
      labelNames: ['kind'],
      registers: [registry],
    }),
    cacheResets: new Counter({
      name: 'warmpath_agent_cache_model_resets_total',
      help: 'Cache model resets (engine restart or cache clear)',
      labelNames: ['cause'],
      registers: [registry],
    }),
    predictedCached: new Counter({
      name: 'warmpath_agent_predicted_cached_tokens_total',
      help: 'Prompt tokens the cache model predicted cached',
      registers: [registry],
    }),
    reportedCached: new Counter({
      name: 'warmpath_agent_reported_cached_tokens_total',
      help: 'Prompt tokens the engine reported cached',
      registers: [registry],
    }),
  };
}

/** The engine monitor's scrapes. */
function engineMetrics(registry: Registry) {
  return {
    scrapes: new Counter({
      name: 'warmpath_agent_engine_scrapes_total',
      help: 'Engine scrapes',
      registers: [registry],
    }),
    scrapeErrors: new Counter({
      name: 'warmpath_agent_engine_scrape_errors_total',
      help: 'Engine scrapes that failed',
      labelNames: ['code'],
      registers: [registry],
    }),
    engineUp: new Gauge({
      name: 'warmpath_agent_engine_up',
      help: '1 when the engine answers its metrics endpoint',
      registers: [registry],
    }),
    engineRestarts: new Counter({
      name: 'warmpath_agent_engine_restarts_total',
      help: 'Engine restarts detected',
      registers: [registry],
    }),
  };
}

export type AgentMetrics = ReturnType<typeof createMetrics>;
