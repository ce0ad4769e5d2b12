/**
 * The agent's one config schema: defaults with units, validated once and
 * frozen by packages/shared/src/config.ts. Each doc string states one rule;
 * `essential` fields are the ones `--help` lists. How to choose the values
 * that matter, with the evidence: docs/OPERATIONS.md.
 */
import { ENGINE_KINDS, FLEET_DEFAULTS, PUBLISH_FLOOR_MS } from '@warmpath/shared/wire';
import { GOSSIP_CONNECTION_SETTINGS, LOG_SETTINGS, SWARM_KEY_SETTINGS, loadConfig } from '@warmpath/shared/runtime';
import type { ConfigOf, Schema } from '@warmpath/shared/runtime';

export const AGENT_SCHEMA = {
  engine: {
    type: 'string',
    default: 'vllm',
    choices: ENGINE_KINDS,
    essential: true,
    doc: 'engine kind behind this agent',
  },
  role: {
    type: 'string',
    default: 'auto',
    choices: ['auto', 'both', 'prefill', 'decode'],
    essential: true,
    doc: "disaggregation role routers see: prefill, decode, both, or auto (the engine's own, else both)",
  },
  zone: {
    type: 'string',
    default: '',
    doc: 'topology label (host, rack or zone) for routers: a KV transfer within one zone costs less ("" = unknown)',
  },
  kvBootstrap: {
    type: 'string',
    default: '',
    doc: "a prefill engine's KV bootstrap host:port (SGLang); default: the engine's host and 8998 (vllm: its port)",
  },
  engineUrl: {
    type: 'string',
    default: 'http://127.0.0.1:8000',
    essential: true,
    doc: 'base URL of the inference engine',
  },
  host: { type: 'string', default: '127.0.0.1', essential: true, doc: 'interface the proxy and admin ports bind to' },
  port: {
    type: 'number',
    default: 0,
    min: 0,
    max: 65535,
    integer: true,
    essential: true,
    doc: 'proxy port for OpenAI requests (0 = OS-chosen)',
  },
  adminPort: {
    type: 'number',
    default: 0,
    min: 0,
    max: 65535,
    integer: true,
    essential: true,
    doc: 'admin port: digest, state, health, metrics (0 = OS-chosen)',
  },
  advertiseHost: {
    type: 'string',
    default: '',
    essential: true,
    doc: 'host put in published URLs (default: --host); set it when routers reach the agent by another name',
  },
  fleet: { type: 'string', default: 'default', essential: true, doc: 'fleet name (gossip topic)' },
  replicaId: { type: 'string', default: '', doc: 'stable replica id (default: hostname:proxy-port)' },
  group: {
    type: 'string',
    default: '',
    essential: true,
    doc: "model group (pool) whose gossip topic the state goes on, for routers' --models (default: the base model)",
  },
  gossipListen: { type: 'list', default: ['/ip4/127.0.0.1/tcp/0'], essential: true, doc: 'libp2p listen multiaddrs' },
  bootstrap: {
    type: 'list',
    default: [],
    essential: true,
    doc: 'multiaddrs of routers to publish to (/p2p/<id> optional); gossipPeers of them are dialed at a time',
  },
  bootstrapDns: {
    type: 'list',
    default: [],
    essential: true,
    doc: 'DNS names (name or name:port, port 4001) whose every A/AAAA record is a router to dial, re-resolved periodically',
  },
  bootstrapDnsIntervalMs: {
    type: 'number',
    default: 10_000,
    min: 1_000,
    max: 600_000,
    doc: 'how often bootstrapDns names are re-resolved, ms; lower finds new routers sooner, more lookups',
  },
  // Evidence for the default: docs/SCALE.md, 'Gossip mesh'.
  gossipPeers: {
    type: 'number',
    default: 2,
    min: 0,
    max: 1_000,
    integer: true,
    doc: 'publish to this many routers of the candidates, replaced when one leaves; they relay to the rest (0 = dial all)',
  },
  ...GOSSIP_CONNECTION_SETTINGS,
  ...SWARM_KEY_SETTINGS,
  identityFile: {
    type: 'string',
    default: '',
    essential: true,
    doc: "file of this agent's libp2p private key, created if missing: a stable peer id, so a restart keeps its replica",
  },
  gossip: { type: 'boolean', default: true, doc: 'join gossip (off: admin API only; tests and benches)' },
  publishIntervalMs: {
    type: 'number',
    default: PUBLISH_FLOOR_MS,
    min: 20,
    max: 60_000,
    doc: 'state publish floor, ms: a quiet agent publishes this often (a change publishes at once); lower = more gossip bytes',
  },
  minPublishGapMs: {
    type: 'number',
    default: 10,
    min: 0,
    max: 10_000,
    doc: 'least gap between change-triggered publishes, ms; bounds bursts',
  },
  // Evidence for the default: docs/SCALE.md, 'The fix: publish on a change of about one request's work'.
  publishChangeTokens: {
    type: 'number',
    default: 1024,
    min: 0,
    max: 1e9,
    integer: true,
    doc: "publish early when routers' guess of the prefill queue or in-flight work is off by this many tokens (0 = off)",
  },
  publishOverTokens: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1e9,
    integer: true,
    doc: 'as publishChangeTokens, for a guess above the truth (0 = publishChangeTokens); higher = fewer messages',
  },
  publishChangeChunks: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1e9,
    integer: true,
    doc: 'publish early when this many cached chunks were added or removed since the last message (0 = off)',
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
    doc: 'admission control (queue, kv, inflight, too_large, stale rules); off: admit all and let the engine queue',
  },
  // Evidence for the default: docs/ABLATION.md, 'Loaded adapters (the agents' hot-adapter list)'.
  loadedAdapters: {
    type: 'boolean',
    default: true,
    doc: "publish as hot the adapters of the latest admissions too, up to the engine's slots (off: the engine's report only)",
  },
  // Evidence for the default: docs/OPERATIONS.md, 'Tuning'.
  maxWaiting: {
    type: 'number',
    default: 64,
    min: 0,
    max: 1e6,
    integer: true,
    doc: 'admission: reject (queue) when the engine queues and its queue plus recent admissions reach this many; 0 = off',
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
  hostKvTokens: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1e12,
    doc: "the engine's host-memory KV tier (CPU offloading), tokens; 0 = none",
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
  // Evidence for the default: docs/SCALE.md, 'Compact views'; router memory per chunk: docs/OPERATIONS.md, 'Routers'.
  digestMaxHashes: {
    type: 'number',
    default: 8192,
    min: 0,
    max: 1e8,
    integer: true,
    doc: 'publish at most this many cached chunks, the most recently used (0 = all); bounds router memory per replica',
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
    doc: "ask vLLM/SGLang streams for usage and strip it from the client's stream, so the cache model learns each request",
  },
  enginePriority: {
    type: 'boolean',
    default: false,
    doc: "send a request's band as the engine's `priority` (vLLM --scheduling-policy priority, SGLang priority scheduling)",
  },
  ...LOG_SETTINGS,
  // Security (docs/SECURITY.md).
  agentToken: {
    type: 'string',
    default: '',
    essential: true,
    doc: 'file of the token routers must present (Authorization: Bearer) on the proxy and admin ports; "" = no auth',
  },
  engineApiKey: {
    type: 'string',
    default: '',
    doc: 'file of the engine\'s API key, sent as Authorization: Bearer to the engine ("" = the client\'s passes through)',
  },
} as const satisfies Schema;

export type AgentConfig = ConfigOf<typeof AGENT_SCHEMA>;

/** Config for in-process use: defaults + overrides, validated like the CLI's. */
export function agentConfig(overrides: Record<string, unknown> = {}): AgentConfig {
  return loadConfig(AGENT_SCHEMA, { overrides });
}
