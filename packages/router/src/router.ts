/**
 * One live router: config → router core (fleet view fed by gossip, local
 * state, policy, retries and queue) → HTTP transport (undici upstreams) and
 * HTTP server. `startRouter` is what the CLI, tests, the demo and the live
 * benchmark call; the discrete-event simulator drives the same core.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROUTER_SCHEMA, type RouterConfig } from './config.ts';
import {
  answerClientError,
  ConfigError,
  createLogger,
  isLoadedConfig,
  loadConfig,
  readSecret,
  realClock,
  SERVER_TIMEOUTS,
  type Logger,
} from '@warmpath/shared/runtime';
import { prepareRequestSchemas } from '@warmpath/shared/wire';
import { createGossipNode, gossipOptionsOf, type GossipNode, type GossipOrigin } from '@warmpath/shared/gossip';
import { RouterCore } from './core/router-core.ts';
import type { CoreMetrics, Send } from './core/types.ts';
import { followGroups } from './fleet/served.ts';
import { snapshotFetcher } from './fleet/snapshot.ts';
import type { FleetView, Replica, ViewEvent } from './fleet/view.ts';
import { createSend } from './http/forward.ts';
import type { Exchange } from './http/exchange.ts';
import { observeAttempts } from './http/observe.ts';
import { createAnswer, createProxy } from './http/proxy.ts';
import { Drain } from './http/drain.ts';
import { createHandler, reachableHost, readApiKeys } from './http/server.ts';
import { originsOf, Upstreams } from './http/upstream.ts';
import { createMetrics, type RouterMetrics } from './metrics.ts';
import type { LocalState } from './core/local.ts';
import { baseRoute, formatRoute, type Route } from './placement/route.ts';
import type { Policy } from './placement/types.ts';
import { StatusRecorder } from './status/recorder.ts';
import { GossipShare, SHARE_CHANNEL } from './tenants/share-link.ts';
import { statusJson, statusPage } from './status/status.ts';
import { startTenancy, type LiveTenancy } from './tenants/live.ts';
import { tenantCoreMetrics, type TenantMetrics } from './tenants/metrics.ts';
import type { Tenancy } from './tenants/tenancy.ts';
import type { FleetShare } from './tenants/types.ts';

export type RouterOptions = Partial<{
  -readonly [K in keyof RouterConfig]: RouterConfig[K] extends readonly string[] ? string[] : RouterConfig[K];
}> & {
  /** false: no gossip node (feed state with `router.ingest`); a node: use it (not stopped on close). */
  gossip?: false | GossipNode;
  /** A policy instance instead of `policy` by name (the benchmark's emulations). */
  policyInstance?: Policy;
  /** Snapshot fetcher override (tests). */
  fetchSnapshot?: (r: Replica) => Promise<Uint8Array>;
  /** Where log lines go, one JSON line per call (at config.logLevel); default stderr. */
  log?: (line: string) => void;
  /** A config already validated by loadConfig (the CLI's): used as is, without the keys above it. */
  config?: RouterConfig;
  /** What the other routers admitted per tenant (with a tenants file); default: this router alone. */
  fleetShare?: FleetShare;
};

export interface Router {
  readonly id: string;
  /** http://host:port */
  readonly url: string;
  readonly port: number;
  /** Gossip peer id and multiaddrs (…/p2p/<id>); empty without gossip. */
  readonly peerId: string | undefined;
  readonly peerAddrs: string[];
  /** The gossip node (its groups, mesh and counters); undefined without gossip. */
  readonly gossip: GossipNode | undefined;
  readonly config: RouterConfig;
  readonly view: FleetView;
  readonly local: LocalState;
  readonly policy: Policy;
  readonly metrics: RouterMetrics;
  /** Predicted against reported cached tokens per replica (core/receipts.ts). */
  readonly receipts: RouterCore<Exchange>['receipts'];
  /** Recent placements and hottest prefixes, as the status page shows them. */
  readonly recorder: StatusRecorder;
  readonly logger: Logger;
  /** The tenants in force, their limiter and usage (with a tenants file). */
  readonly tenancy: Tenancy | undefined;
  /** Apply one gossip payload directly (tests, in-process benches). */
  ingest(bytes: Uint8Array): void;
  /** Graceful shutdown (SIGTERM): /readyz fails at once, new requests are served for shutdownDelayMs, in-flight ones may finish for shutdownTimeoutMs, then close. */
  drain(): Promise<void>;
  /** Close at once (in-flight requests are cut after 1 s). */
  close(): Promise<void>;
}

export async function startRouter(options: RouterOptions = {}): Promise<Router> {
  const {
    gossip: gossipOpt,
    policyInstance,
    fetchSnapshot,
    log: logOpt,
    config: validated,
    fleetShare,
    ...overrides
  } = options;
  if (validated !== undefined && !isLoadedConfig(validated))
    throw new ConfigError('startRouter: `config` must come from routerConfig()/loadConfig() (or pass plain keys)');
  const config = validated ?? loadConfig(ROUTER_SCHEMA, { overrides: overrides as Record<string, unknown> });
  prepareRequestSchemas();
  const id = config.id !== '' ? config.id : `router-${randomBytes(4).toString('hex')}`;
  const logger = createLogger({
    level: config.logLevel,
    name: 'router',
    bindings: { router: id },
    ...(logOpt !== undefined ? { write: logOpt } : {}),
  });
  const apiKeys = config.apiKeys !== '' ? readApiKeys(config.apiKeys) : undefined;
  const agentAuth = config.agentToken !== '' ? `Bearer ${readSecret(config.agentToken, 'agentToken')}` : undefined;
  const fetcher = snapshotFetcher(config.snapshotTimeoutMs, agentAuth);
  const upstreams = new Upstreams({
    connections: config.upstreamConnections,
    connectTimeoutMs: config.connectTimeoutMs,
    headersTimeoutMs: config.headersTimeoutMs,
    bodyTimeoutMs: config.bodyTimeoutMs,
  });
  const recorder = new StatusRecorder(config.keyDepthChunks);
  const share = fleetShare ?? GossipShare.wanted(config.tenants, gossipOpt !== false, () => tenants?.tenancy, logger);
  const tenants: LiveTenancy | undefined =
    config.tenants !== '' ? startTenancy(config.tenants, logger, share, config.tenantsPollMs) : undefined;
  const parts = { config, id, logger, upstreams, recorder, agentAuth, policyInstance, tenants };
  const { core, metrics } = createCore({ ...parts, fetchSnapshot: fetchSnapshot ?? fetcher.fetch });
  let gossip: Awaited<ReturnType<typeof joinGossip>> | undefined;
  const { server, drain } = createRouterServer({ ...parts, core, metrics, apiKeys, gossip: () => gossip?.node });
  try {
    const receive = (bytes: Uint8Array, origin: GossipOrigin): void => core.receiveBytes(bytes, origin);
    gossip = await joinGossip(config, gossipOpt, core.view, receive, logger);
    if (share instanceof GossipShare) gossip = share.attach(gossip);
    await listen(server, config.port, config.host);
  } catch (err) {
    core.stop();
    tenants?.stop();
    await gossip?.leave();
    await fetcher.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const close = closer(core, server, gossip, upstreams, fetcher, tenants);
  let draining: Promise<void> | undefined;
  return {
    id,
    url: `http://${reachableHost(config.host)}:${port}`,
    port,
    peerId: gossip.node?.peerId,
    peerAddrs: gossip.node?.multiaddrs() ?? [],
    gossip: gossip.node,
    config,
    view: core.view,
    local: core.local,
    receipts: core.receipts,
    policy: core.policy,
    metrics,
    recorder,
    logger,
    tenancy: tenants?.tenancy,
    ingest: (bytes) => core.receiveBytes(bytes),
    drain: () => (draining ??= drain.drain().then(close)),
    close,
  };
}

/** What the router's parts are built from. */
interface Parts {
  readonly config: RouterConfig;
  readonly id: string;
  readonly logger: Logger;
  readonly upstreams: Upstreams;
  readonly recorder: StatusRecorder;
  readonly agentAuth: string | undefined;
  readonly policyInstance: Policy | undefined;
  readonly tenants: LiveTenancy | undefined;
}

/** The router core over the HTTP transport, and the metrics it counts into (they read its view: bound once both exist). */
function createCore(p: Parts & { fetchSnapshot: (r: Replica) => Promise<Uint8Array> }): {
  core: RouterCore<Exchange>;
  metrics: RouterMetrics;
} {
  const { config, id, recorder } = p;
  let metrics: RouterMetrics | undefined;
  let tenantCounters: TenantMetrics | undefined;
  const core: RouterCore<Exchange> = new RouterCore<Exchange>({
    config,
    id,
    clock: realClock(),
    send: observeAttempts(
      recording(recorder, createSend(id, p.upstreams, config.heartbeatMs, p.agentAuth)),
      () => metrics!,
    ),
    answer: (ex, e) => answer(ex, e),
    fetchSnapshot: p.fetchSnapshot,
    ...(p.policyInstance !== undefined ? { policy: p.policyInstance } : {}),
    metrics: {
      ...coreMetrics(
        () => metrics!,
        () => core.policy.name,
        recorder,
      ),
      ...tenantCoreMetrics(() => tenantCounters),
    },
    onViewEvent: viewLogger(p.logger),
    onSweep: () => p.upstreams.retain(originsOf(core.view)),
    ...(p.tenants !== undefined ? { tenancy: p.tenants.tenancy } : {}),
  });
  metrics = createMetrics(core.view, {
    queueLength: () => core.waiting,
    overlaySize: () => core.local.overlaySize,
    ejected: () => core.local.ejectedCount(core.view.now()),
    routers: () => core.local.routers,
    routersHeard: () => core.local.routersHeard(core.view.now()),
    receipts: () => core.receipts.byReplica,
  });
  const answer = createAnswer(id, config.retryAfterS, metrics);
  tenantCounters = p.tenants?.metrics(metrics.registry);
  return { core, metrics };
}

/** The HTTP server (not listening yet): the proxy, the status page, readiness and the drain. */
function createRouterServer(
  p: Parts & {
    core: RouterCore<Exchange>;
    metrics: RouterMetrics;
    apiKeys: ReadonlySet<string> | undefined;
    gossip: () => GossipNode | undefined;
  },
): { server: Server; drain: Drain } {
  const { config, id, core, metrics } = p;
  const startedAt = Date.now();
  const status = {
    json: () =>
      statusJson({
        id,
        policy: core.policy.name,
        chunkChars: config.chunkChars,
        charsPerToken: config.charsPerToken,
        view: core.view,
        local: core.local,
        recorder: p.recorder,
        waiting: () => core.waiting,
        gossip: p.gossip(),
        receipts: core.receipts.byReplica,
        startedAt,
        ...(p.tenants !== undefined ? { tenants: (now: number) => p.tenants!.tenancy.usage.snapshot(now) } : {}),
      }),
    page: statusPage,
  };
  const server: Server = createServer(SERVER_TIMEOUTS);
  server.maxConnections = config.maxConnections;
  const drain = new Drain(server, id, config);
  const ready = (): boolean => !drain.draining && core.view.statusCounts().ready! > 0;
  server.on(
    'request',
    createHandler({
      id,
      view: core.view,
      metrics,
      proxy: createProxy(core, metrics),
      apiKeys: p.apiKeys,
      ...(p.tenants !== undefined ? { tenancy: p.tenants.tenancy } : {}),
      ready,
      drain,
      status,
      observe: { logger: p.logger, metrics, logPrompts: config.logPrompts },
    }),
  );
  server.on('clientError', answerClientError);
  return { server, drain };
}

/** Close at once, once: stop the core, close idle connections, cut the rest after 1 s, leave gossip, close the pools. */
function closer(
  core: RouterCore<Exchange>,
  server: Server,
  gossip: { leave(): Promise<void> },
  upstreams: Upstreams,
  fetcher: { close(): Promise<unknown> },
  tenants: LiveTenancy | undefined,
): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () =>
    (closing ??= (async () => {
      core.stop();
      tenants?.stop();
      server.closeIdleConnections();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      setTimeout(() => server.closeAllConnections(), 1_000).unref();
      await gossip.leave();
      await closed;
      await Promise.all([upstreams.close(), fetcher.close().catch(() => {})]);
    })());
}

/** Every dispatch, as the core hands it to the transport, goes into the status recorder first. */
function recording<T>(recorder: StatusRecorder, send: Send<T>): Send<T> {
  return (d, report) => {
    recorder.record(d.info, d.branch, d.replica.id);
    send(d, report);
  };
}

/** The core's counters, backed by the router's prom-client metrics (bound lazily: they need the core's view); refusals also go to the status recorder. */
function coreMetrics(metrics: () => RouterMetrics, policy: () => string, recorder: StatusRecorder): CoreMetrics {
  const branchCounters = new Map<string, { inc(): void }>();
  let placeTimer: { observe(v: number): void } | undefined;
  return {
    placed(r: Route) {
      if (r.branch === 'saturated' || r.branch === 'no-replica') recorder.recordRefusal(r.branch);
      if (r.pd !== undefined) metrics().pairs.inc({ mode: r.pd.mode, by: r.pd.by });
      const key = formatRoute(r.pd === undefined ? r : baseRoute(r));
      let c = branchCounters.get(key);
      if (c === undefined)
        branchCounters.set(key, (c = metrics().branches.labels(policy(), r.step, r.branch, r.attempt, r.by)));
      c.inc();
    },
    placementSeconds: (s) => (placeTimer ??= metrics().placementSeconds.labels(policy())).observe(s),
    retried: () => metrics().retries.inc(),
    upstreamError: (kind) => metrics().upstreamErrors.inc({ kind }),
    ejected: () => metrics().ejections.inc(),
    retryDenied: (reason) => metrics().retriesDenied.inc({ reason }),
    missed: (tokens) => metrics().missedTokens.observe(tokens),
  };
}

/** Operator log lines for fleet-view events: a chunk-size mismatch once per replica, every failed snapshot pull. */
function viewLogger(logger: Logger): (e: ViewEvent) => void {
  const mismatchLogged = new Set<string>();
  return (e) => {
    if (e.type === 'chunk_mismatch' && !mismatchLogged.has(e.replica)) {
      mismatchLogged.add(e.replica);
      logger.warn(
        { replica: e.replica, theirs: e.theirs, ours: e.ours },
        `replica ${e.replica} publishes chunkChars=${e.theirs} but this router uses ${e.ours}; excluding it from routing (set the same --chunk-chars fleet-wide)`,
      );
    } else if (e.type === 'snapshot_failed') {
      logger.warn({ replica: e.replica, error: e.error }, `digest snapshot from ${e.replica} failed`);
    }
  };
}

/**
 * Subscribe to the fleet's gossip: our own node (started, stopped on leave), a
 * given one (left running), or none. Either way the fleet view judges each
 * message before it is delivered or relayed (trust.ts), and applies it with
 * its origin.
 */
async function joinGossip(
  config: RouterConfig,
  opt: false | GossipNode | undefined,
  view: FleetView,
  onMessage: (bytes: Uint8Array, origin: GossipOrigin) => void,
  logger: Logger,
): Promise<{ node: GossipNode | undefined; leave(): Promise<void> }> {
  if (opt === false) return { node: undefined, leave: async () => {} };
  const own = opt === undefined;
  const warn = (w: { code: string; message: string }): void => logger.warn({ code: w.code }, w.message);
  const groups = view.served.gossipGroups;
  const node =
    opt ??
    (await createGossipNode({
      ...(await gossipOptionsOf(config, warn, [SHARE_CHANNEL])),
      ...(groups !== undefined ? { groups } : {}),
    }));
  node.setValidator((bytes, origin) => view.judge(bytes, origin));
  const unsubscribe = node.onMessage((bytes, _from, origin) => onMessage(bytes, origin));
  const unfollow = node.servesAll ? followGroups(node, () => view.replicas.values()) : () => {};
  const leave = async (): Promise<void> => {
    unfollow();
    unsubscribe();
    node.setValidator(undefined);
    if (own) await node.stop().catch(() => {});
  };
  if (own) {
    try {
      await node.start();
    } catch (err) {
      await leave();
      throw err;
    }
  }
  return { node, leave };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
