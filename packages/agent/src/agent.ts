/**
 * Wires one agent: engine monitor → core state ← proxy; publisher → gossip;
 * admin API. `startAgent` is what the CLI, tests, the demo and benches call.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { Pool } from 'undici';
import { createGossipNode } from '@warmpath/shared/gossip';
import type { EngineKind } from '@warmpath/shared/wire';
import type { GossipNode } from '@warmpath/shared/gossip';
import { createAdminHandler } from './admin.ts';
import { agentConfig } from './config.ts';
import type { AgentConfig } from './config.ts';
import { AgentCore } from './core.ts';
import { createAdapter } from './engines/index.ts';
import { createMetrics } from './metrics.ts';
import { EngineMonitor } from './monitor.ts';
import { Publisher } from './publisher.ts';
import { createProxyHandler } from './proxy.ts';

export interface AgentState {
  replica: string;
  boot: string;
  seq: number;
  status: 'ready' | 'draining' | 'down';
  engineUp: boolean;
  models: string[];
  adapters: string[];
  hotAdapters: string[];
  load: ReturnType<AgentCore['load']>;
  capacity: ReturnType<AgentCore['capacity']>;
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
  /** Internals for benches and tests. */
  readonly core: AgentCore;
  readonly publisher: Publisher;
  state(): AgentState;
  /** Announce draining, refuse new work, finish in-flight requests, announce down, close. */
  drain(): Promise<void>;
  /** Close at once (in-flight requests are cut). */
  close(): Promise<void>;
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

/** Starts an agent. `overrides` are AGENT_SCHEMA keys (validated; unknown keys throw ConfigError). */
export async function startAgent(overrides: Record<string, unknown> = {}): Promise<Agent> {
  const config = agentConfig(overrides);
  const engine = config.engine as EngineKind;
  const engineOrigin = new URL(config.engineUrl).origin;
  const metrics = createMetrics();
  const core = new AgentCore(config, metrics);
  const pool = new Pool(engineOrigin, { connections: config.upstreamConnections, keepAliveTimeout: 60_000, pipelining: 1 });
  const control = new Pool(engineOrigin, { connections: 4, keepAliveTimeout: 60_000, pipelining: 1 });
  const adapter = createAdapter(engine, { dispatcher: control, baseUrl: engineOrigin });
  core.defaultEndpoints = adapter.endpoints;

  let publisher: Publisher | undefined;
  const poke = (force = false): void => publisher?.poke(force);
  core.onSignificant = () => poke(true);
  const monitor = new EngineMonitor(
    adapter,
    { intervalMs: config.scrapeIntervalMs, timeoutMs: config.scrapeTimeoutMs, modelsIntervalMs: config.modelsIntervalMs, downAfterFailures: config.downAfterFailures },
    {
      onScrape(snap, startedAt) {
        metrics.scrapes.inc();
        core.setSnapshot(snap, startedAt);
        if (core.cacheClearedPerCounters(snap)) {
          metrics.cacheResets.inc({ cause: 'cleared' });
          core.cache.reset();
          poke(true);
        }
        poke();
      },
      onUp() {
        core.engineUp = true;
        metrics.engineUp.set(1);
        poke(true);
      },
      onDown() {
        core.engineUp = false;
        metrics.engineUp.set(0);
        poke(true);
      },
      onRestart(cause) {
        metrics.engineRestarts.inc();
        metrics.cacheResets.inc({ cause });
        core.cache.reset();
        poke(true);
      },
      onModels(models) {
        core.setModels(models);
      },
      onError(code) {
        metrics.scrapeErrors.inc({ code });
      },
    },
  );

  const proxyServer = createServer(
    { keepAliveTimeout: 72_000, requestTimeout: 0, headersTimeout: 60_000 },
    createProxyHandler({ core, pool, engineOrigin, kick: () => monitor.kick(), poke: () => poke() }),
  );
  const proxyAddr = await listen(proxyServer, config.port, config.host);
  const advertise = urlHost(config.advertiseHost !== '' ? config.advertiseHost : config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host);
  const url = `http://${advertise}:${proxyAddr.port}`;
  const replica = config.replicaId !== '' ? config.replicaId : `${hostname()}:${proxyAddr.port}`;
  const boot = randomUUID();
  const bootAt = Date.now();

  let gossip: GossipNode | undefined;
  if (config.gossip) {
    gossip = await createGossipNode({
      fleet: config.fleet,
      listen: [...config.gossipListen],
      bootstrap: [...config.bootstrap],
      // Agents publish; routers subscribe. An agent never receives the fleet's state.
      subscribe: false,
      ...(config.swarmKey !== '' ? { swarmKey: readFileSync(config.swarmKey, 'utf8') } : {}),
    });
    await gossip.start();
  }

  const pub = new Publisher(core, {
    fleet: config.fleet,
    replica,
    boot,
    bootAt,
    url,
    admin: '', // set once the admin port is bound (the admin handler needs the publisher)
    engine,
    intervalMs: config.publishIntervalMs,
    minGapMs: config.minPublishGapMs,
    send: gossip === undefined ? undefined : (bytes) => gossip.publish(bytes),
  });
  const adminServer = createServer(
    createAdminHandler({
      core,
      publisher: pub,
      replica,
      boot,
      extra: () => ({
        engineKind: engine,
        engineUrl: engineOrigin,
        engineError: monitor.lastError,
        peerId: gossip?.peerId ?? null,
        peers: gossip?.peers().length ?? 0,
        gossipStats: gossip?.stats() ?? null,
      }),
    }),
  );
  const adminAddr = await listen(adminServer, config.adminPort, config.host);
  const adminUrl = `http://${advertise}:${adminAddr.port}`;
  pub.setAdmin(adminUrl);
  publisher = pub;

  await monitor.start();
  pub.start();
  await pub.publishNow();

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      const announced = core.closed;
      core.closed = true;
      monitor.stop();
      pub.stop();
      // Best effort: tell routers at once rather than letting them time the replica out.
      if (!announced && gossip !== undefined) await Promise.race([pub.publishNow(), new Promise((r) => setTimeout(r, 500))]);
      await Promise.all([closeServer(proxyServer), closeServer(adminServer)]);
      await gossip?.stop().catch(() => {});
      await Promise.all([pool.destroy().catch(() => {}), control.destroy().catch(() => {})]);
    })());

  let draining: Promise<void> | undefined;
  const drain = (): Promise<void> =>
    (draining ??= (async () => {
      core.draining = true;
      await pub.publishNow();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([core.idle(), new Promise<void>((r) => (timer = setTimeout(r, config.drainTimeoutMs)))]);
      clearTimeout(timer);
      core.closed = true;
      await pub.publishNow();
      await close();
    })());

  return {
    url,
    adminUrl,
    peerAddrs: gossip?.multiaddrs() ?? [],
    peerId: gossip?.peerId,
    replica,
    boot,
    config,
    core,
    publisher: pub,
    state: () => ({
      replica,
      boot,
      seq: pub.seq,
      status: core.status,
      engineUp: core.engineUp,
      models: [...core.models],
      adapters: [...core.adapters],
      hotAdapters: [...(core.snapshot?.hotAdapters ?? [])],
      load: core.load(),
      capacity: core.capacity(),
      cache: { size: core.cache.size, capacity: core.cache.capacity },
      gossip: { bytes: pub.bytes, messages: pub.messages },
    }),
    drain,
    close,
  };
}
