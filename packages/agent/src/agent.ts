/**
 * One live agent: the agent core (admission, cache model, monitor,
 * publisher) with its I/O around it — the engine adapter over HTTP, the proxy
 * and admin servers, gossip. `startAgent` is what the CLI, tests, the demo
 * and benches call; the discrete-event simulator drives the same core.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { Pool } from 'undici';
import { createGossipNode, gossipOptionsOf } from '@warmpath/shared/gossip';
import type { GossipNode } from '@warmpath/shared/gossip';
import { collectDefaultMetrics } from 'prom-client';
import {
  answerClientError,
  createLogger,
  DEFAULT_MAX_CONNECTIONS,
  isLoadedConfig,
  LINT_FAILING_DEFAULT_METRICS,
  readSecret,
  SERVER_TIMEOUTS,
  UPSTREAM_KEEP_ALIVE_MS,
  type Logger,
} from '@warmpath/shared/runtime';
import { groupOf, prepareRequestSchemas, sendError, type EngineKind, type ReplicaState } from '@warmpath/shared/wire';
import { createAdminHandler } from './admin.ts';
import { kvBootstrapOf, resolveRole } from './disagg.ts';
import { agentConfig } from './config.ts';
import type { AgentConfig } from './config.ts';
import { AgentCore, type EngineEvent } from './core.ts';
import { adapterSource, createAdapter } from './engines/index.ts';
import type { AgentLedger } from './ledger.ts';
import { createProxyHandler } from './proxy.ts';
import type { Publisher } from './publisher.ts';

export interface AgentState {
  replica: string;
  boot: string;
  seq: number;
  status: 'ready' | 'draining' | 'down';
  engineUp: boolean;
  models: string[];
  adapters: string[];
  hotAdapters: string[];
  load: ReturnType<AgentLedger['load']>;
  capacity: ReturnType<AgentLedger['capacity']>;
  cache: { size: number; capacity: number };
  gossip: { bytes: number; messages: number };
}

export interface Agent {
  /** Proxy base URL (OpenAI endpoints). */
  readonly url: string;
  /** Admin base URL. */
  readonly adminUrl: string;
  /** Gossip multiaddrs (…/p2p/<peer id>); empty without gossip. */
  readonly peerAddrs: string[];
  readonly peerId: string | undefined;
  readonly replica: string;
  readonly boot: string;
  readonly config: AgentConfig;
  /** The agent core (its ledger and publisher: for benches and tests). */
  readonly core: AgentCore;
  readonly publisher: Publisher;
  readonly logger: Logger;
  state(): AgentState;
  /** Announce draining, refuse new work, finish in-flight requests, announce down, close. */
  drain(): Promise<void>;
  /** Close at once (in-flight requests are cut). */
  close(): Promise<void>;
}

/** An announcement on close waits at most this long for gossip, ms. */
const CLOSE_ANNOUNCE_MS = 500;

export interface AgentOptions {
  /** Where log lines go, one JSON line per call (at config.logLevel); default stderr. */
  log?: (line: string) => void;
}

/**
 * Starts an agent. `overrides` are AGENT_SCHEMA keys (validated; unknown keys
 * throw ConfigError), or a config agentConfig()/loadConfig() already validated
 * (the CLI's), used as is.
 */
export async function startAgent(
  overrides: Record<string, unknown> | AgentConfig = {},
  options: AgentOptions = {},
): Promise<Agent> {
  const config = isLoadedConfig(overrides) ? (overrides as AgentConfig) : agentConfig(overrides);
  prepareRequestSchemas();
  const engine = config.engine as EngineKind;
  const token = config.agentToken !== '' ? readSecret(config.agentToken, 'agentToken') : undefined;
  const { engineOrigin, engineKey, pool, control, adapter } = engineClients(config, engine);
  const { server: proxyServer, serve } = proxyServerOf();
  const proxyAddr = await listen(proxyServer, config.port, config.host);
  const advertise = advertisedHost(config);
  const replica = config.replicaId !== '' ? config.replicaId : `${hostname()}:${proxyAddr.port}`;
  const logger = createLogger({
    level: config.logLevel,
    name: 'agent',
    bindings: { replica },
    ...(options.log !== undefined ? { write: options.log } : {}),
  });
  const gossip = config.gossip ? await joinGossip(config, logger) : undefined;
  const boot = randomBytes(9).toString('base64url'); // 72 random bits in 12 characters (a UUID: 36)
  const agentCore = new AgentCore({
    config,
    identity: {
      fleet: config.fleet,
      replica,
      boot,
      bootAt: Date.now(),
      url: `http://${advertise}:${proxyAddr.port}`,
      admin: '', // set once the admin port is bound
      engine,
      ...(config.group !== '' ? { group: config.group } : {}),
    },
    engine: adapterSource(adapter, config.scrapeTimeoutMs),
    ...(gossip !== undefined ? { send: publishOn(gossip) } : {}),
    onEngine: (e) => logEngine(logger, e, () => agentCore.monitor.lastError),
  });
  collectDefaultMetrics({ register: agentCore.metrics.registry });
  for (const name of LINT_FAILING_DEFAULT_METRICS) agentCore.metrics.registry.removeSingleMetric(name);
  serve(
    createProxyHandler({
      core: agentCore,
      pool,
      engineOrigin,
      accessLog: { logger, logPrompts: config.logPrompts },
      token,
      engineKey,
    }),
  );
  const adminServer = createServer(
    createAdminHandler({
      core: agentCore,
      boot,
      token,
      extra: () => adminExtra(agentCore, engine, engineOrigin, gossip),
    }),
  ).on('clientError', answerClientError);
  const adminUrl = `http://${advertise}:${(await listen(adminServer, config.adminPort, config.host)).port}`;
  agentCore.setAdminUrl(adminUrl);
  await new Promise<void>((resolve) => agentCore.startMonitor(resolve));
  await learnRole(agentCore, config, engine, adapterContext(control, engineOrigin, engineKey));
  agentCore.startPublishing();

  const close = closer(agentCore, [proxyServer, adminServer], gossip, [pool, control]);
  return {
    url: `http://${advertise}:${proxyAddr.port}`,
    adminUrl,
    peerAddrs: gossip?.multiaddrs() ?? [],
    peerId: gossip?.peerId,
    replica: agentCore.replica,
    boot,
    config,
    core: agentCore,
    publisher: agentCore.publisher,
    logger,
    state: () => stateOf(agentCore, boot),
    drain: drainer(agentCore, close),
    close,
  };
}

/**
 * The proxy's server. Its port is bound before the core exists (its URL and
 * the replica id are part of the core's identity); until `serve` hands it the
 * proxy the engine is not even scraped, so the answer is engine_unavailable.
 */
function proxyServerOf(): { server: Server; serve(handler: RequestListener): void } {
  let proxy: RequestListener = (req, res) => {
    req.resume();
    sendError(res, 'engine_unavailable', undefined, { headers: { 'retry-after': 1 } });
  };
  const server = createServer(SERVER_TIMEOUTS, (req, res) => proxy(req, res)).on('clientError', answerClientError);
  server.maxConnections = DEFAULT_MAX_CONNECTIONS;
  return { server, serve: (handler) => void (proxy = handler) };
}

/** The engine's connection pools (the proxied requests', the agent's own calls) and its adapter. */
function engineClients(config: AgentConfig, engine: EngineKind) {
  const engineOrigin = new URL(config.engineUrl).origin;
  const engineKey = config.engineApiKey !== '' ? readSecret(config.engineApiKey, 'engineApiKey') : undefined;
  const pool = new Pool(engineOrigin, {
    connections: config.upstreamConnections,
    keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS,
    pipelining: 1,
  });
  const control = new Pool(engineOrigin, { connections: 4, keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS, pipelining: 1 });
  const adapter = createAdapter(engine, adapterContext(control, engineOrigin, engineKey));
  return { engineOrigin, engineKey, pool, control, adapter };
}

/** The agent's own calls to its engine, as its adapter makes them. */
function adapterContext(control: Pool, baseUrl: string, engineKey: string | undefined) {
  return {
    dispatcher: control,
    baseUrl,
    ...(engineKey !== undefined ? { headers: { authorization: `Bearer ${engineKey}` } } : {}),
  };
}

/** The replica's role (--role or the engine's) and, for a prefill replica, its KV bootstrap: published from the first message. */
async function learnRole(
  core: AgentCore,
  config: AgentConfig,
  engine: EngineKind,
  ctx: ReturnType<typeof adapterContext>,
): Promise<void> {
  const role = await resolveRole(config.role, engine, ctx, config.scrapeTimeoutMs);
  core.setTopology(
    role,
    config.zone,
    role === 'prefill' ? kvBootstrapOf(config.kvBootstrap, engine, config.engineUrl) : '',
  );
}

/** The host routers reach this agent at: --advertise-host, else the listen host (loopback for a wildcard). */
function advertisedHost(config: AgentConfig): string {
  if (config.advertiseHost !== '') return urlHost(config.advertiseHost);
  return urlHost(config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host);
}

/** Each state goes on its model group's gossip topic (shared/gossip/groups.ts). */
function publishOn(gossip: GossipNode): (bytes: Uint8Array, s: ReplicaState) => Promise<number> {
  return (bytes, s) => gossip.publish(bytes, groupOf(s));
}

/** The admin API's fields beyond the core's own: the engine and the gossip node. */
function adminExtra(
  core: AgentCore,
  engine: EngineKind,
  engineUrl: string,
  gossip: Awaited<ReturnType<typeof joinGossip>> | undefined,
): Record<string, unknown> {
  return {
    engineKind: engine,
    engineUrl,
    engineError: core.monitor.lastError,
    peerId: gossip?.peerId ?? null,
    peers: gossip?.peers().length ?? 0,
    gossipStats: gossip?.stats() ?? null,
  };
}

function stateOf(core: AgentCore, boot: string): AgentState {
  const l = core.ledger;
  return {
    replica: core.replica,
    boot,
    seq: core.publisher.seq,
    status: l.status,
    engineUp: l.engineUp,
    models: [...l.models],
    adapters: [...l.adapters],
    hotAdapters: l.hotAdapters(),
    load: l.load(),
    capacity: l.capacity(),
    cache: { size: l.cache.size, capacity: l.cache.capacity },
    gossip: { bytes: core.publisher.bytes, messages: core.publisher.messages },
  };
}

/** Close at once: stop the loops, tell routers (best effort), close the servers, gossip and pools. */
function closer(
  core: AgentCore,
  servers: Server[],
  gossip: GossipNode | undefined,
  pools: Pool[],
): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () =>
    (closing ??= (async () => {
      const announced = core.ledger.closed;
      core.ledger.closed = true;
      core.stop();
      // Best effort: tell routers at once rather than letting them time the replica out.
      if (!announced && gossip !== undefined)
        await Promise.race([core.publisher.announce(), new Promise((r) => setTimeout(r, CLOSE_ANNOUNCE_MS))]);
      await Promise.all(servers.map(closeServer));
      await gossip?.stop().catch(() => {});
      await Promise.all(pools.map((p) => p.destroy().catch(() => {})));
    })());
}

/** Drain: announce draining, wait for in-flight requests (at most drainTimeoutMs), announce down, close. */
function drainer(core: AgentCore, close: () => Promise<void>): () => Promise<void> {
  let draining: Promise<void> | undefined;
  return () =>
    (draining ??= (async () => {
      core.ledger.draining = true;
      await core.publisher.announce();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        core.ledger.idle(),
        new Promise<void>((r) => (timer = setTimeout(r, core.config.drainTimeoutMs))),
      ]);
      clearTimeout(timer);
      core.ledger.closed = true;
      await core.publisher.announce();
      await close();
    })());
}

/** Operator log lines for the engine's transitions. */
function logEngine(logger: Logger, e: EngineEvent, lastError: () => unknown): void {
  if (e.type === 'reset') logger.info({ cause: e.cause }, 'engine cache reset: the cache model starts empty');
  else if (e.type === 'up') logger.info('engine up');
  else logger.warn({ error: lastError() }, 'engine down: the replica takes no requests until it answers again');
}

async function joinGossip(config: AgentConfig, logger: Logger): Promise<GossipNode> {
  const gossip = await createGossipNode({
    ...(await gossipOptionsOf(config, (w) => logger.warn({ code: w.code }, w.message))),
    // Agents publish; routers subscribe. An agent never receives the fleet's state.
    subscribe: false,
  });
  await gossip.start();
  return gossip;
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

const urlHost = (h: string): string => (h.includes(':') && !h.startsWith('[') ? `[${h}]` : h);
