/**
 * One router: config → fleet view (fed by gossip) → policy → HTTP server.
 * `startRouter` is what the CLI, tests, the demo and the benchmark call.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROUTER_SCHEMA, type RouterConfig } from './config.ts';
import { loadConfig } from '@warmpath/shared/runtime';
import { snapshotFetcher } from './fleet/snapshot.ts';
import { FleetView, type Replica, type ViewEvent } from './fleet/view.ts';
import { createGossipNode, type GossipNode } from '@warmpath/shared/gossip';
import { createProxy } from './http/proxy.ts';
import { WaitQueue } from './http/queue.ts';
import { createHandler } from './http/server.ts';
import { Upstreams } from './http/upstream.ts';
import { createMetrics, type RouterMetrics } from './metrics.ts';
import { LocalState } from './placement/local.ts';
import { createPolicy } from './placement/registry.ts';
import type { Policy } from './placement/types.ts';

export type RouterOptions = Partial<{ -readonly [K in keyof RouterConfig]: RouterConfig[K] extends readonly string[] ? string[] : RouterConfig[K] }> & {
  /** false: no gossip node (feed state with `router.ingest`); a node: use it (not stopped on close). */
  gossip?: false | GossipNode;
  /** A policy instance instead of `policy` by name (the benchmark's emulations). */
  policyInstance?: Policy;
  /** Snapshot fetcher override (tests). */
  fetchSnapshot?: (r: Replica) => Promise<Uint8Array>;
  /** Operator log lines (chunk mismatch, snapshot failures); default console.error. */
  log?: (line: string) => void;
};

export interface Router {
  readonly id: string;
  /** http://host:port */
  readonly url: string;
  readonly port: number;
  /** Gossip peer id and multiaddrs (…/p2p/<id>); empty without gossip. */
  readonly peerId: string | undefined;
  readonly peerAddrs: string[];
  readonly config: RouterConfig;
  readonly view: FleetView;
  readonly local: LocalState;
  readonly policy: Policy;
  readonly metrics: RouterMetrics;
  /** Apply one gossip payload directly (tests, in-process benches). */
  ingest(bytes: Uint8Array): void;
  close(): Promise<void>;
}

/** Sweep period: staleness transitions, overlay expiry, idle pools. */
const SWEEP_MS = 250;

export async function startRouter(options: RouterOptions = {}): Promise<Router> {
  const { gossip: gossipOpt, policyInstance, fetchSnapshot, log: logOpt, ...overrides } = options;
  const config = loadConfig(ROUTER_SCHEMA, { overrides: overrides as Record<string, unknown> });
  const log = logOpt ?? ((line: string) => console.error(line));
  const id = config.id !== '' ? config.id : `router-${randomBytes(4).toString('hex')}`;
  const apiKeys = config.apiKeys !== '' ? readKeys(config.apiKeys) : undefined;

  const fetcher = snapshotFetcher(config.snapshotTimeoutMs);
  const mismatchLogged = new Set<string>();
  const onEvent = (e: ViewEvent): void => {
    if (e.type === 'chunk_mismatch' && !mismatchLogged.has(e.replica)) {
      mismatchLogged.add(e.replica);
      log(`warmpath router ${id}: replica ${e.replica} publishes chunkChars=${e.theirs} but this router uses ${e.ours}; excluding it from routing (set the same --chunk-chars fleet-wide)`);
    } else if (e.type === 'snapshot_failed') {
      log(`warmpath router ${id}: digest snapshot from ${e.replica} failed: ${e.error}`);
    }
  };
  const view = new FleetView({
    fleet: config.fleet,
    chunkChars: config.chunkChars,
    stateTtlMs: config.stateTtlMs,
    forgetAfterMs: config.forgetAfterMs,
    fetchSnapshot: fetchSnapshot ?? fetcher.fetch,
    onEvent,
  });
  const local = new LocalState({ overlayTtlMs: config.overlayTtlMs, overlayMaxChunks: config.overlayMaxChunks, suspectMs: config.suspectMs });
  const policy =
    policyInstance ??
    createPolicy(config.policy, { chunkChars: config.chunkChars, charsPerToken: config.charsPerToken, loadFactor: config.loadFactor, boundFloorTokens: config.boundFloorTokens });
  const queue = new WaitQueue(config.queueMax);
  const metrics = createMetrics(view, { queueLength: () => queue.length, overlaySize: () => local.overlaySize });
  const upstreams = new Upstreams({
    connections: config.upstreamConnections,
    connectTimeoutMs: config.connectTimeoutMs,
    headersTimeoutMs: config.headersTimeoutMs,
    bodyTimeoutMs: config.bodyTimeoutMs,
  });
  let seenReady = false;
  view.onChange(() => queue.wake());

  const proxy = createProxy({ id, config, view, local, policy, metrics, upstreams, queue });
  const server: Server = createServer({ keepAliveTimeout: 72_000, requestTimeout: 0, headersTimeout: 60_000 }, createHandler({
    id,
    view,
    metrics,
    proxy,
    apiKeys,
    ready: () => {
      if (!seenReady) for (const r of view.replicas.values()) if (r.live && !r.chunkMismatch) seenReady = true;
      return seenReady;
    },
  }));
  server.on('clientError', (_err, socket) => socket.destroy());

  const sweep = setInterval(() => {
    const now = Date.now();
    view.sweep(now);
    local.prune(now);
    const origins = new Set<string>();
    for (const r of view.replicas.values()) {
      const u = r.state.url;
      const s = u.indexOf('/', u.indexOf('//') + 2);
      origins.add(s < 0 ? u : u.slice(0, s));
    }
    upstreams.retain(origins);
  }, SWEEP_MS);
  sweep.unref();

  let gossip: GossipNode | undefined;
  let ownGossip = false;
  let unsubscribe: (() => void) | undefined;
  try {
    if (gossipOpt !== false) {
      if (gossipOpt !== undefined) gossip = gossipOpt;
      else {
        gossip = await createGossipNode({
          fleet: config.fleet,
          listen: [...config.gossipListen],
          bootstrap: [...config.bootstrap],
          ...(config.swarmKey !== '' ? { swarmKey: readFileSync(config.swarmKey, 'utf8') } : {}),
        });
        ownGossip = true;
      }
      unsubscribe = gossip.onMessage((bytes) => view.applyBytes(bytes));
      if (ownGossip) await gossip.start();
    }
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    clearInterval(sweep);
    unsubscribe?.();
    if (ownGossip) await gossip?.stop().catch(() => {});
    await fetcher.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host;

  let closing: Promise<void> | undefined;
  return {
    id,
    url: `http://${host}:${port}`,
    port,
    peerId: gossip?.peerId,
    peerAddrs: gossip?.multiaddrs() ?? [],
    config,
    view,
    local,
    policy,
    metrics,
    ingest: (bytes) => view.applyBytes(bytes),
    close: () =>
      (closing ??= (async () => {
        clearInterval(sweep);
        unsubscribe?.();
        server.closeIdleConnections();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        setTimeout(() => server.closeAllConnections(), 1_000).unref();
        if (ownGossip) await gossip?.stop().catch(() => {});
        await closed;
        await Promise.all([upstreams.close(), fetcher.close().catch(() => {})]);
      })()),
  };
}

function readKeys(path: string): Set<string> {
  const keys = new Set(
    readFileSync(path, 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#')),
  );
  if (keys.size === 0) throw Object.assign(new Error(`API key file ${path} holds no keys`), { code: 'config_invalid' });
  return keys;
}
