/**
 * The router's config schema: one defaults object with units beside each
 * value. Filled from file, environment and flags by shared/config.ts,
 * validated once and frozen. Field `fooBarMs` is `--foo-bar-ms`.
 */
import { FLEET_DEFAULTS } from '@warmpath/shared/wire';
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_CONNECTIONS,
  LOG_LEVELS,
  loadConfig,
  type ConfigOf,
  type Schema,
} from '@warmpath/shared/runtime';
import { POLICY_NAMES } from './placement/registry.ts';
import { DEFAULT_HARD_BOUND, DEFAULT_HOME_HORIZON_MS, DEFAULT_SPILL_CHOICES } from './placement/warmpath/mode.ts';
import { SWITCHABLE_STEP_NAMES } from './placement/warmpath/steps.ts';

export { POLICY_NAMES };

export const ROUTER_SCHEMA = {
  port: { type: 'number', default: 8080, min: 0, max: 65535, integer: true, doc: 'HTTP port (0 = OS-chosen)' },
  host: { type: 'string', default: '127.0.0.1', doc: 'HTTP listen address' },
  id: { type: 'string', default: '', doc: 'router id in x-warmpath-router and logs ("" = random)' },
  fleet: { type: 'string', default: 'default', doc: 'fleet name (gossip topic)' },
  bootstrap: {
    type: 'list',
    default: [],
    doc: 'gossip peers to dial (multiaddrs, /p2p/<id> optional): the other routers, or (without a router mesh) the agents',
  },
  gossipListen: { type: 'list', default: ['/ip4/127.0.0.1/tcp/0'], doc: 'gossip listen multiaddrs' },
  bootstrapDns: {
    type: 'list',
    default: [],
    doc: "DNS names whose every A/AAAA record is a gossip peer to dial (name or name:port, port 4001 by default), re-resolved every bootstrapDnsIntervalMs: e.g. the routers' own Kubernetes headless Service, so routers mesh with each other",
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
    default: 0,
    min: 0,
    max: 1_000,
    integer: true,
    doc: 'stay connected to this many other routers out of the bootstrap and DNS candidates, picked at random and replaced when one goes away (0 = dial every candidate, e.g. a list of agents); with many routers 6-8 keeps connections per router independent of their number',
  },
  gossipMaxConnections: {
    type: 'number',
    default: 300,
    min: 1,
    max: 100_000,
    integer: true,
    doc: 'gossip connections held at most (router peers + the agents that picked this router); beyond it new ones are refused and agents pick another router',
  },
  swarmKey: {
    type: 'string',
    default: '',
    doc: "path of the fleet's libp2p swarm key file (required for gossip unless --insecure-no-swarm-key; `warmpath swarm-key` makes one)",
  },
  insecureNoSwarmKey: {
    type: 'boolean',
    default: false,
    doc: 'join gossip without a swarm key: anyone who reaches the gossip port can publish fleet state (tests and experiments only)',
  },
  policy: { type: 'string', default: 'warmpath', choices: POLICY_NAMES, doc: 'placement policy' },
  apiKeys: { type: 'string', default: '', doc: 'file of bearer API keys, one per line ("" = no auth)' },
  maxBodyBytes: {
    type: 'number',
    default: DEFAULT_MAX_BODY_BYTES,
    min: 1024,
    integer: true,
    doc: 'request body limit, bytes (16 MiB)',
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
  loadFactor: {
    type: 'number',
    default: 1.75,
    min: 1,
    doc: "bounded-load factor c for requests without a routing key: a replica takes one while its work stays within c × its share of the fleet's (1.75 = 75% over the mean); measured against 1.25 (DES, one router, seeds 1–3): hit rate +1.2 to +1.4 points on seed, +0.5 to +0.7 on chat, +2.7 to +3.8 on longctx, TTFT p99 lower on seed, chat and lora, lora's adapter loads about halved; 2 raised seed's p99 again",
  },
  keyLoadFactor: {
    type: 'number',
    default: 3,
    min: 1,
    doc: "bounded-load factor c for requests with an explicit routing key (prompt_cache_key, x-warmpath-key), which asks for cache affinity: a new task goes to whichever of its key's first two ring members has less prefill queued, its calls gather there, and only a key hotter than 3× its share spreads (fanout, DES seeds 1–3, 1/4/16 routers: c = 1.75 / 2 / 3 / 4 gave hit rates 94.3–95.3 / 94.7–95.3 / 95.2–95.5 / 95.4–95.5% and TTFT p50 76–83 / 78–85 / 81–87 / 81–87 ms)",
  },
  boundFloorTokens: {
    type: 'number',
    default: 2_048,
    min: 0,
    doc: 'a replica with less work than max(this, 2 × the request up to 32 × this) (tokens per unit weight) is always within the bound; measured (DES): 16,384 let a system prompt pile onto its ring home in the seed scenario (p50 +15%), a cap below 65,536 spilled long trace prompts off warm replicas',
  },
  hardBound: {
    type: 'number',
    default: DEFAULT_HARD_BOUND,
    min: 1,
    doc: "a warm replica deeper than the best one within the bound may still take a request while within this × c × its share, when its cost (prefill queue + twice the prompt it lacks) is lower; a large value leaves the choice to that cost alone, which gained the trace 0.2–1.1 points of hit rate (held-out seeds) but raised the seed scenario's TTFT p99 at one router by 16% (DES, 20 seeds)",
  },
  spillChoices: {
    type: 'number',
    default: DEFAULT_SPILL_CHOICES,
    min: 2,
    max: 64,
    integer: true,
    doc: "a cold prompt goes to the shortest prefill queue (published; for a routing key's new task, with this router's work since the report) among the first this many admissible replicas in its ring order; 4 cut the long-context scenario's TTFT p99 by 4–25% (DES, held-out seeds, 1/4/16 routers) at up to 0.4 points of the trace's hit rate",
  },
  homeHorizonMs: {
    type: 'number',
    default: DEFAULT_HOME_HORIZON_MS,
    min: 0,
    max: 600_000,
    doc: "equally warm replicas (a shared prefix: most often a new conversation choosing its home) are compared by prefill queue plus this many ms of the work their recent clients send (published recent rate); 0 compares the queue alone. 3 s cut the seed scenario's TTFT p99 by 1–4% and chat's by 2–5% over 20 seeds never tuned on (DES, 1/4/16 routers), p50 within 1.2%",
  },
  placementOff: {
    type: 'list',
    default: [],
    choices: SWITCHABLE_STEP_NAMES,
    doc: `warmpath steps to switch off, for ablation (none by default): ${SWITCHABLE_STEP_NAMES.join(', ')}`,
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
    doc: 'a replica whose last state is older is ineligible, ms (agents publish every 250 ms)',
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
    doc: 'upstream idle deadline between body chunks, ms (a hung replica ends the stream with stream_interrupted after this)',
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
    doc: 'file holding the token this router presents to agents (Authorization: Bearer, on proxied requests and digest pulls); "" = none',
  },
  agentPeers: {
    type: 'list',
    default: [],
    doc: 'gossip peer ids of the agents allowed to publish replica state (empty = any peer holding the swarm key); a listed peer may take over any replica id at once',
  },
  agentNetworks: {
    type: 'list',
    default: [],
    doc: 'networks (CIDR) and host names (name or *.suffix) agent URLs may point to whatever address the agent publishes from (default: only its own address, or this machine over loopback)',
  },
  identityFile: {
    type: 'string',
    default: '',
    doc: 'file holding this node\'s libp2p private key, created if missing: a stable gossip peer id across restarts ("" = a new id each start)',
  },
  // Reliability: outlier ejection, retry budget, deadlines, shutdown.
  ejectAfterFailures: {
    type: 'number',
    default: 5,
    min: 1,
    integer: true,
    doc: 'consecutive failures (5xx other than admission refusals, resets, timeouts) that eject a replica; a refused connection ejects at once',
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
    doc: "SSE comment `: keep-alive` after this much silence on a stream, ms (also commits a stream still waiting for its replica's headers)",
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
