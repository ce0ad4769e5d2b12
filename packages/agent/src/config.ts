/**
 * The agent's one config schema: defaults with units, validated once and
 * frozen by packages/shared/src/config.ts. Each doc string ends with what
 * changing the value costs.
 */
import { ENGINE_KINDS, FLEET_DEFAULTS } from '@warmpath/shared/wire';
import { LOG_LEVELS, loadConfig } from '@warmpath/shared/runtime';
import type { ConfigOf, Schema } from '@warmpath/shared/runtime';

export const AGENT_SCHEMA = {
  engine: { type: 'string', default: 'vllm', choices: ENGINE_KINDS, doc: 'engine kind behind this agent' },
  engineUrl: { type: 'string', default: 'http://127.0.0.1:8000', doc: 'base URL of the inference engine' },
  host: { type: 'string', default: '127.0.0.1', doc: 'interface the proxy and admin ports bind to' },
  port: {
    type: 'number',
    default: 0,
    min: 0,
    max: 65535,
    integer: true,
    doc: 'proxy port for OpenAI requests (0 = OS-chosen)',
  },
  adminPort: {
    type: 'number',
    default: 0,
    min: 0,
    max: 65535,
    integer: true,
    doc: 'admin port: digest, state, health, metrics (0 = OS-chosen)',
  },
  advertiseHost: {
    type: 'string',
    default: '',
    doc: 'host put in published URLs (default: --host); set it when routers reach the agent by another name',
  },
  fleet: { type: 'string', default: 'default', doc: 'fleet name (gossip topic)' },
  replicaId: { type: 'string', default: '', doc: 'stable replica id (default: hostname:proxy-port)' },
  gossipListen: { type: 'list', default: ['/ip4/127.0.0.1/tcp/0'], doc: 'libp2p listen multiaddrs' },
  bootstrap: {
    type: 'list',
    default: [],
    doc: "multiaddrs of routers to publish to (/p2p/<id> optional); gossipPeers of them (with bootstrapDns's) are dialed at a time",
  },
  bootstrapDns: {
    type: 'list',
    default: [],
    doc: "DNS names whose every A/AAAA record is a router to dial (name or name:port, port 4001 by default), re-resolved every bootstrapDnsIntervalMs: e.g. the routers' Kubernetes headless Service",
  },
  bootstrapDnsIntervalMs: {
    type: 'number',
    default: 10_000,
    min: 1_000,
    max: 600_000,
    doc: 'how often bootstrapDns names are re-resolved, ms; lower finds new routers sooner, more lookups',
  },
  gossipPeers: {
    type: 'number',
    default: 2,
    min: 0,
    max: 1_000,
    integer: true,
    doc: 'publish to this many routers out of the bootstrap and DNS candidates, picked at random and replaced when one goes away; the routers relay to the rest through their mesh (0 = dial every candidate). 2 survives one router loss; more costs a connection each and no latency',
  },
  gossipMaxConnections: {
    type: 'number',
    default: 300,
    min: 1,
    max: 100_000,
    integer: true,
    doc: 'gossip connections held at most',
  },
  swarmKey: {
    type: 'string',
    default: '',
    doc: "path of the fleet's libp2p swarm key file (required for gossip unless --insecure-no-swarm-key; `warmpath keygen` makes one)",
  },
  insecureNoSwarmKey: {
    type: 'boolean',
    default: false,
    doc: 'join gossip without a swarm key: anyone who reaches the gossip port can publish fleet state (tests and experiments only)',
  },
  identityFile: {
    type: 'string',
    default: '',
    doc: 'file holding this agent\'s libp2p private key, created if missing: a stable peer id, so a restarted agent keeps its replica id at once and routers can allowlist it (--agent-peers) ("" = a new id each start, and a restart waits one state TTL)',
  },
  gossip: { type: 'boolean', default: true, doc: 'join gossip (off: admin API only; tests and benches)' },
  publishIntervalMs: {
    type: 'number',
    default: 250,
    min: 20,
    max: 60_000,
    doc: 'state publish period, ms; lower = fresher routers, more gossip bytes',
  },
  minPublishGapMs: {
    type: 'number',
    default: 10,
    min: 0,
    max: 10_000,
    doc: 'least gap between change-triggered publishes, ms; bounds bursts',
  },
  publishChangeTokens: {
    type: 'number',
    default: 1024,
    min: 0,
    max: 1e9,
    integer: true,
    doc: "publish soon when the prefill queue or the in-flight work moved by this many tokens since the last message (0 = off); about one request's work, so many routers see each other's work before the next period",
  },
  scrapeIntervalMs: {
    type: 'number',
    default: 250,
    min: 20,
    max: 60_000,
    doc: 'engine metrics scrape period, ms; lower = fresher admission, more engine load',
  },
  scrapeTimeoutMs: {
    type: 'number',
    default: 2_000,
    min: 50,
    max: 60_000,
    doc: 'one engine scrape may take this long, ms',
  },
  modelsIntervalMs: {
    type: 'number',
    default: 5_000,
    min: 100,
    max: 600_000,
    doc: 'how often /v1/models (adapters) is re-read, ms',
  },
  downAfterFailures: {
    type: 'number',
    default: 2,
    min: 1,
    max: 1000,
    integer: true,
    doc: 'consecutive failed scrapes before the engine counts as down',
  },
  admission: {
    type: 'boolean',
    default: true,
    doc: 'admission control (the queue, kv, inflight, too_large and stale rules); off: admit everything and let the engine queue or preempt, as an engine without Warmpath does (the benchmark runs peer emulations this way)',
  },
  loadedAdapters: {
    type: 'boolean',
    default: true,
    doc: "publish as hot, besides the adapters the engine reports in use, those of the requests admitted most recently, up to the engine's adapter slots: an engine keeps an idle adapter loaded and evicts the least recently used, but its metrics name only adapters in use (lora, DES seeds 1–3: adapter loads 161/155/165 → 91/85/98, TTFT p99 359/466/352 → 245/266/249 ms); off: the engine's report only",
  },
  maxWaiting: {
    type: 'number',
    default: 64,
    min: 0,
    max: 1e6,
    integer: true,
    doc: 'admission: reject (reason queue) when the engine already queues and its queue plus admissions since the last scrape would reach this many requests; 0 = off. 64 lets a 16-call fan-out sharing one prefix in (16 refused some of its calls: fanout DES p50 85 → 79 ms, 6 of 7,758 calls lost on one seed)',
  },
  maxInflight: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1e6,
    integer: true,
    doc: 'admission: reject (reason inflight) above this many in-flight requests; 0 = off',
  },
  kvHighWatermark: {
    type: 'number',
    default: 0.95,
    min: 0.1,
    max: 1,
    doc: 'admission: reject (reason kv) when projected KV use would exceed this fraction of capacity',
  },
  outputReserve: {
    type: 'number',
    default: 1,
    min: 0,
    max: 1,
    doc: 'fraction of max_tokens reserved in KV at admission; 1 = worst case (fewer admits), 0 = prompt only',
  },
  kvCapacityTokens: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1e12,
    doc: 'KV capacity override, tokens (0 = from engine metrics)',
  },
  weight: { type: 'number', default: 1, min: 0, max: 1e6, doc: 'relative ring weight published to routers' },
  endpoints: {
    type: 'list',
    default: [],
    doc: 'endpoints served (chat,completion,responses,embedding); empty = engine default',
  },
  chunkChars: {
    type: 'number',
    default: FLEET_DEFAULTS.chunkChars,
    min: 1,
    max: 1 << 20,
    integer: true,
    doc: 'prefix chunk size, chars (fleet-wide; must match routers)',
  },
  maxChunks: {
    type: 'number',
    default: FLEET_DEFAULTS.maxChunks,
    min: 1,
    max: 1 << 20,
    integer: true,
    doc: 'chunks hashed per request at most',
  },
  charsPerToken: {
    type: 'number',
    default: FLEET_DEFAULTS.charsPerToken,
    min: 0.5,
    max: 64,
    doc: 'chars per token for estimates',
  },
  cacheCapacityChunks: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1e8,
    integer: true,
    doc: 'cache model size override, chunks (0 = from engine KV capacity)',
  },
  digestMaxHashes: {
    type: 'number',
    default: 8192,
    min: 0,
    max: 1e8,
    integer: true,
    doc: 'publish at most this many cached chunks, the most recently used (0 = all the cache model holds); above the nominal size of the cache model (6,750–7,209 chunks on the simulated GPUs), so it binds only when the model has grown past it (up to 2×); a router keeps about 31–36 bytes per published chunk per replica, so this bounds it at ≈ 300 MiB for 1,000 replicas whatever the engines cache. 2,048 cost 5–15 points of hit rate on chat, trace and longctx',
  },
  maxBodyBytes: {
    type: 'number',
    default: 16 * 1024 * 1024,
    min: 1024,
    max: 1 << 30,
    integer: true,
    doc: 'request body limit, bytes',
  },
  upstreamConnections: {
    type: 'number',
    default: 256,
    min: 1,
    max: 65536,
    integer: true,
    doc: 'keep-alive connections to the engine at most',
  },
  headersTimeoutMs: {
    type: 'number',
    default: 300_000,
    min: 100,
    max: 3_600_000,
    doc: 'wait for the engine response headers at most this long, ms',
  },
  bodyTimeoutMs: {
    type: 'number',
    default: 300_000,
    min: 100,
    max: 3_600_000,
    doc: 'idle gap allowed between response body chunks, ms',
  },
  drainTimeoutMs: {
    type: 'number',
    default: 120_000,
    min: 0,
    max: 3_600_000,
    doc: 'drain waits this long for in-flight requests, ms, then closes anyway',
  },
  usageFeedback: {
    type: 'boolean',
    default: true,
    doc: "ask vLLM and SGLang for usage (stream_options.include_usage) on streams whose client did not, and strip that usage chunk from the client's stream, so the cache model learns cached_tokens from every request; off: forward bodies unchanged (streams without usage then teach the cache model nothing)",
  },
  logLevel: {
    type: 'string',
    default: 'info',
    choices: LOG_LEVELS,
    doc: 'least severe level logged (JSON lines on stderr); info includes one access-log line per request',
  },
  logPrompts: {
    type: 'boolean',
    default: false,
    doc: "put each request's prompt (messages, prompt or input) in its access-log line; off: prompts never reach the logs",
  },
  // Security (docs/SECURITY.md).
  agentToken: {
    type: 'string',
    default: '',
    doc: 'file holding the token routers must present (Authorization: Bearer) on the proxy port and the admin API (all but /healthz and /readyz); "" = no auth',
  },
  engineApiKey: {
    type: 'string',
    default: '',
    doc: 'file holding the engine\'s API key, sent as Authorization: Bearer to the engine (proxied requests, metrics and model scrapes); "" = the client\'s Authorization passes through (unless agentToken is set)',
  },
} as const satisfies Schema;

export type AgentConfig = ConfigOf<typeof AGENT_SCHEMA>;

/** Config for in-process use: defaults + overrides, validated like the CLI's. */
export function agentConfig(overrides: Record<string, unknown> = {}): AgentConfig {
  return loadConfig(AGENT_SCHEMA, { overrides });
}
