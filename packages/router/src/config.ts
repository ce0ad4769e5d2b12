/**
 * The router's config schema: one defaults object with units beside each
 * value. Filled from file, environment and flags by shared/config.ts,
 * validated once and frozen. Field `fooBarMs` is `--foo-bar-ms`.
 */
import { FLEET_DEFAULTS } from '@warmpath/shared/wire';
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_CONNECTIONS,
  LOG_SETTINGS,
  SWARM_KEY_SETTINGS,
  loadConfig,
  type ConfigOf,
  type Schema,
} from '@warmpath/shared/runtime';
import { GOSSIP_SETTINGS } from './gossip-settings.ts';
import { POLICY_NAMES } from './placement/policy-names.ts';
import { PD_SETTINGS } from './placement/pd-settings.ts';
import {
  DEFAULT_HARD_BOUND,
  DEFAULT_HOME_HORIZON_MS,
  DEFAULT_HOST_RELOAD_COST,
  DEFAULT_SPILL_CHOICES,
} from './placement/warmpath/mode.ts';
import { SWITCHABLE_STEP_NAMES } from './placement/warmpath/steps.ts';

export { POLICY_NAMES };

export const ROUTER_SCHEMA = {
  port: {
    type: 'number',
    default: 8080,
    min: 0,
    max: 65535,
    integer: true,
    essential: true,
    doc: 'HTTP port (0 = OS-chosen)',
  },
  host: { type: 'string', default: '127.0.0.1', essential: true, doc: 'HTTP listen address' },
  id: { type: 'string', default: '', doc: 'router id in x-warmpath-router and logs ("" = random)' },
  fleet: { type: 'string', default: 'default', essential: true, doc: 'fleet name (gossip topic)' },
  bootstrap: {
    type: 'list',
    default: [],
    essential: true,
    doc: 'gossip peers to dial (multiaddrs, /p2p/<id> optional): the other routers, or the agents when routers form no mesh',
  },
  gossipListen: { type: 'list', default: ['/ip4/127.0.0.1/tcp/0'], essential: true, doc: 'gossip listen multiaddrs' },
  models: {
    type: 'list',
    default: ['*'],
    essential: true,
    doc: "model groups served, their gossip topics only (an agent's --group, else its base model); * = every group",
  },
  bootstrapDns: {
    type: 'list',
    default: [],
    essential: true,
    doc: 'DNS names (name or name:port, port 4001) whose every A/AAAA record is a gossip peer, re-resolved periodically',
  },
  bootstrapDnsIntervalMs: {
    type: 'number',
    default: 10_000,
    min: 1_000,
    max: 600_000,
    doc: 'how often bootstrapDns names are re-resolved, ms; lower finds new routers sooner, more lookups',
  },
  ...GOSSIP_SETTINGS,
  ...SWARM_KEY_SETTINGS,
  policy: { type: 'string', default: 'warmpath', choices: POLICY_NAMES, doc: 'placement policy' },
  apiKeys: {
    type: 'string',
    default: '',
    essential: true,
    doc: 'file of bearer API keys, one per line ("" = no auth)',
  },
  tenants: {
    type: 'string',
    default: '',
    essential: true,
    doc: 'tenants file (YAML/JSON): keys, weights, bands, limits (docs/TENANTS.md); re-read on change; "" = none',
  },
  tenantsPollMs: {
    type: 'number',
    default: 5_000,
    min: 100,
    doc: 'also check the tenants file for changes this often, ms (for filesystems whose change events do not arrive)',
  },
  prefillTokensPerS: { type: 'number', default: 30_000, min: 1, doc: 'prefill tokens/s of weight 1 (SLO admission)' },
  maxBodyBytes: {
    type: 'number',
    default: DEFAULT_MAX_BODY_BYTES,
    min: 1024,
    integer: true,
    doc: 'request body limit, bytes',
  },
  // Prefix identity: must match the agents' (they publish chunkChars).
  chunkChars: {
    type: 'number',
    default: FLEET_DEFAULTS.chunkChars,
    min: 1,
    integer: true,
    doc: 'prefix chunk size, characters; must match the fleet',
  },
  maxChunks: {
    type: 'number',
    default: FLEET_DEFAULTS.maxChunks,
    min: 1,
    integer: true,
    doc: 'hash at most this many chunks per request',
  },
  charsPerToken: {
    type: 'number',
    default: FLEET_DEFAULTS.charsPerToken,
    min: 0.5,
    doc: 'characters per token for work estimates',
  },
  defaultMaxTokens: {
    type: 'number',
    default: FLEET_DEFAULTS.defaultMaxTokens,
    min: 1,
    integer: true,
    doc: 'output tokens assumed without max_tokens',
  },
  // Placement.
  keyDepthChunks: {
    type: 'number',
    default: 8,
    min: 1,
    integer: true,
    doc: 'affinity key = chain hash at this depth, chunks (8 × 256 chars ≈ 512 tokens)',
  },
  // Evidence for the default: docs/ABLATION.md, 'The load factor'.
  loadFactor: {
    type: 'number',
    default: 1.75,
    min: 1,
    doc: 'bounded-load factor c for requests without a routing key: a replica takes one while within c × its fair share',
  },
  // Evidence for the default: docs/ABLATION.md, 'A routing key asks for affinity'.
  keyLoadFactor: {
    type: 'number',
    default: 3,
    min: 1,
    doc: 'bounded-load factor c for requests with a routing key (prompt_cache_key, x-warmpath-key); hotter keys spread',
  },
  // Evidence for the default: docs/OPERATIONS.md, 'Tuning'; docs/SCALE.md, '1,000 replicas'.
  boundFloorTokens: {
    type: 'number',
    default: 2_048,
    min: 0,
    doc: 'a replica with less work than max(this, 2 × the request, at most 32 × this) tokens is always within the bound',
  },
  // Prefill/decode disaggregation (docs/DISAGGREGATION.md): only fleets whose agents publish a role.
  ...PD_SETTINGS,
  // Evidence for the default: docs/ABLATION.md, 'warm-over-bound's hard bound: tried without, kept'.
  hardBound: {
    type: 'number',
    default: DEFAULT_HARD_BOUND,
    min: 1,
    doc: 'a warm replica past the bound may still take a request within this × c × its share, when its cost is lower',
  },
  // Evidence for the default: docs/ABLATION.md, 'The trace's hit-rate gap, and two trade-offs made settings'.
  spillChoices: {
    type: 'number',
    default: DEFAULT_SPILL_CHOICES,
    min: 2,
    max: 64,
    integer: true,
    doc: 'a cold prompt goes to the shortest prefill queue among the first this many admissible replicas in ring order',
  },
  // Evidence for the default: docs/ABLATION.md, 'A new conversation's home counts its next few seconds (`horizon`)'.
  homeHorizonMs: {
    type: 'number',
    default: DEFAULT_HOME_HORIZON_MS,
    min: 0,
    max: 600_000,
    doc: "equally warm replicas compare prefill queue plus this many ms of their recent clients' work (0 = queue alone)",
  },
  // The rule: docs/PLACEMENT.md, 'Tiers and peers'.
  hostReloadCost: {
    type: 'number',
    default: DEFAULT_HOST_RELOAD_COST,
    min: 0,
    max: 1,
    doc: "a prefix chunk in an engine's host memory, reloaded over PCIe, costs this fraction of its prefill (1 = worth nothing)",
  },
  peerFetchCost: {
    type: 'number',
    default: 1,
    min: 0,
    max: 1,
    doc: 'a prefix chunk only another replica holds, fetched over the network, costs this × its prefill (1 = no KV sharing)',
  },
  placementOff: {
    type: 'list',
    default: [],
    choices: SWITCHABLE_STEP_NAMES,
    doc: 'warmpath placement steps to switch off, for ablation (none by default)',
  },
  overlayTtlMs: {
    type: 'number',
    default: 5_000,
    min: 0,
    doc: 'treat a dispatched prefix as warm on its replica this long, ms (until gossip confirms)',
  },
  overlayMaxChunks: {
    type: 'number',
    default: 256,
    min: 0,
    integer: true,
    doc: 'overlay remembers at most this many chunks per dispatch',
  },
  // Fleet view.
  stateTtlMs: {
    type: 'number',
    default: 3_000,
    min: 10,
    doc: 'a replica whose last state is older is ineligible, ms (a quiet agent publishes every 500 ms; keep it over 3 periods)',
  },
  forgetAfterMs: {
    type: 'number',
    default: 30_000,
    min: 10,
    doc: 'forget a silent replica (and its digest) after, ms',
  },
  snapshotTimeoutMs: { type: 'number', default: 2_000, min: 10, doc: 'digest snapshot pull timeout, ms' },
  // Upstream.
  maxAttempts: {
    type: 'number',
    default: 3,
    min: 1,
    max: 16,
    integer: true,
    doc: "replicas tried per request before the first byte (connect failure, reset, 5xx, an agent's 429/503)",
  },
  connectTimeoutMs: { type: 'number', default: 2_000, min: 10, doc: 'upstream connect timeout, ms' },
  headersTimeoutMs: {
    type: 'number',
    default: 600_000,
    min: 10,
    doc: 'upstream first-byte deadline: time to the response headers, ms (non-streaming answers take the whole generation)',
  },
  bodyTimeoutMs: {
    type: 'number',
    default: 120_000,
    min: 10,
    doc: 'upstream idle deadline between body chunks, ms; a hung replica then ends the stream with stream_interrupted',
  },
  upstreamConnections: {
    type: 'number',
    default: 256,
    min: 1,
    integer: true,
    doc: 'keep-alive connections per replica',
  },
  // Saturation.
  queueTimeoutMs: {
    type: 'number',
    default: 2_000,
    min: 0,
    doc: 'a saturated request waits this long for room before 429, ms',
  },
  queueMax: {
    type: 'number',
    default: 1_024,
    min: 0,
    integer: true,
    doc: 'requests waiting at most in the router queue',
  },
  retryAfterS: { type: 'number', default: 1, min: 0, integer: true, doc: 'Retry-After on 429/503, seconds' },
  // Logs.
  ...LOG_SETTINGS,
  // Security (docs/SECURITY.md).
  agentToken: {
    type: 'string',
    default: '',
    essential: true,
    doc: 'file of the token this router presents to agents (Authorization: Bearer); "" = none',
  },
  agentPeers: {
    type: 'list',
    default: [],
    doc: 'gossip peer ids of the agents allowed to publish replica state (empty = any peer holding the swarm key)',
  },
  agentNetworks: {
    type: 'list',
    default: [],
    essential: true,
    doc: "networks (CIDR) and host names (name, *.suffix) agent URLs may point to (default: the agent's own address)",
  },
  identityFile: {
    type: 'string',
    default: '',
    essential: true,
    doc: 'file of this node\'s libp2p private key, created if missing: a stable peer id across restarts ("" = a new one)',
  },
  // Reliability: outlier ejection, retry budget, deadlines, shutdown.
  ejectAfterFailures: {
    type: 'number',
    default: 5,
    min: 1,
    integer: true,
    doc: 'consecutive failures (5xx but admission refusals, resets, timeouts) that eject a replica; a refused connect at once',
  },
  ejectBaseMs: {
    type: 'number',
    default: 5_000,
    min: 1,
    doc: 'first ejection lasts this long, ms; each ejection in a row doubles it',
  },
  ejectMaxMs: { type: 'number', default: 60_000, min: 1, doc: 'longest ejection, ms' },
  ejectMaxPercent: {
    type: 'number',
    default: 10,
    min: 0,
    max: 100,
    doc: 'at most max(1, this % of a model group) ejected at once',
  },
  retryBudgetPercent: {
    type: 'number',
    default: 20,
    min: 0,
    max: 100,
    doc: 'retries after failures at most this % of the active requests',
  },
  retryBudgetMin: {
    type: 'number',
    default: 3,
    min: 0,
    integer: true,
    doc: 'retries after failures always allowed in flight, whatever the budget',
  },
  totalTimeoutMs: {
    type: 'number',
    default: 1_800_000,
    min: 10,
    doc: 'total deadline of one request from arrival, ms (30 min)',
  },
  heartbeatMs: {
    type: 'number',
    default: 15_000,
    min: 10,
    max: 15_000,
    doc: 'SSE `: keep-alive` comment after this much silence on a stream, ms (also commits a stream awaiting headers)',
  },
  maxConnections: {
    type: 'number',
    default: DEFAULT_MAX_CONNECTIONS,
    min: 1,
    integer: true,
    doc: 'client connections at most; more are refused',
  },
  shutdownDelayMs: {
    type: 'number',
    default: 5_000,
    min: 0,
    doc: 'on SIGTERM /readyz fails at once; new requests are still served this long, ms (load balancers deregister)',
  },
  shutdownTimeoutMs: {
    type: 'number',
    default: 20_000,
    min: 0,
    doc: 'then in-flight requests may finish this long before the router exits, ms',
  },
} as const satisfies Schema;

export type RouterConfig = ConfigOf<typeof ROUTER_SCHEMA>;

export function routerConfig(overrides: Record<string, unknown> = {}): RouterConfig {
  return loadConfig(ROUTER_SCHEMA, { overrides });
}
