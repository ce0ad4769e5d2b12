/**
 * The router's live status as JSON (`GET /warmpath/v1/status.json`), and the
 * page that renders it (`GET /warmpath/v1/status`, page.html beside this
 * file, which fetches the JSON once a second). Read-only: built from the
 * fleet view, this router's local state, its status recorder and its gossip
 * node at request time; nothing here is on the placement path.
 * Complexity: O(replicas) per read, plus O(replicas) digest lookups for each
 * of the few hottest prefixes.
 */
import { readFileSync } from 'node:fs';
import { groupOf } from '@warmpath/shared/wire';
import { groupsJson } from '../fleet/served.ts';
import type { FleetView, Replica } from '../fleet/view.ts';
import type { LocalState } from '../core/local.ts';
import { hex, type StatusRecorder } from './recorder.ts';
import type { UsageReport } from '../tenants/usage.ts';
import type { ReceiptCounts } from '../core/receipts.ts';

const NO_RECEIPTS: ReceiptCounts = { judged: 0, expectedHits: 0, misroutes: 0, errorTokens: 0 };

/** Recent placements and hottest prefixes in one answer. */
const RECENT_SHOWN = 40;
const PREFIXES_SHOWN = 10;
/** Tenants shown: the busiest over the last minute. */
const TENANTS_SHOWN = 20;

export interface StatusSources {
  readonly id: string;
  readonly policy: string;
  readonly chunkChars: number;
  readonly charsPerToken: number;
  readonly view: FleetView;
  readonly local: LocalState;
  readonly recorder: StatusRecorder;
  /** Requests waiting in the router's queue. */
  readonly waiting: () => number;
  /** This router's gossip node, when it has one. */
  readonly gossip:
    | {
        readonly peerId: string;
        meshPeers(): string[];
        peers(): string[];
        stats(): { batchWindowMs?: number; statesCoalesced: number };
      }
    | undefined;
  /** The router core's receipts per replica (core/receipts.ts). */
  readonly receipts: ReadonlyMap<string, Readonly<ReceiptCounts>>;
  /** Wall clock, ms since the epoch, when the router started. */
  readonly startedAt: number;
  /** Usage per tenant (with a tenants file). */
  readonly tenants?: (now: number) => UsageReport[];
}

/** The busiest tenants over the last minute, without their per-model rows; null without a tenants file. */
function tenantRows(s: StatusSources, now: number): Array<Record<string, unknown>> | null {
  if (s.tenants === undefined) return null;
  return s
    .tenants(now)
    .sort((a, b) => b.lastMinute.requests - a.lastMinute.requests || b.total.requests - a.total.requests)
    .slice(0, TENANTS_SHOWN)
    .map((u) => ({ tenant: u.tenant, lastMinute: u.lastMinute, total: u.total }));
}

/**
 * Is this replica ejected from placement? Outlier ejection adds the field to
 * the replica view; until a view carries it, no replica is ejected.
 */
export function ejectedOf(r: Replica): boolean {
  return (r as Replica & { readonly ejected?: boolean }).ejected === true;
}

function replicaRow(s: StatusSources, r: Replica, now: number): Record<string, unknown> {
  const { state } = r;
  const cap = state.capacity.kvTokens;
  const used = state.load.kvUsedTokens;
  return {
    id: r.id,
    status: state.status,
    live: r.live,
    fresh: s.view.fresh(r, now),
    draining: state.status === 'draining',
    ejected: ejectedOf(r),
    chunkMismatch: r.chunkMismatch,
    ageMs: Math.max(0, Math.round(now - r.receivedAt)),
    engine: state.engine,
    url: state.url,
    models: state.models,
    group: groupOf(state) ?? null,
    adapters: state.adapters.length,
    hotAdapters: state.hotAdapters,
    weight: state.capacity.weight,
    kv: {
      usedTokens: used,
      capacityTokens: cap,
      usedFraction: cap > 0 ? Math.min(1, used / cap) : null,
      headroomTokens: Math.max(0, cap - used),
    },
    running: state.load.running,
    waiting: state.load.waiting,
    inflight: state.load.inflight,
    prefillTokens: state.load.prefillTokens,
    routerInflight: s.local.inflight(r.id),
    digestSize: r.digestSize,
    receipts: { ...(s.receipts.get(r.id) ?? NO_RECEIPTS) },
  };
}

/** The status document the page renders; field names are part of the router's HTTP API. */
export function statusJson(s: StatusSources): Record<string, unknown> {
  const now = s.view.now();
  const replicas = [...s.view.replicas.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const recent = s.recorder.recent();
  const branches: Record<string, number> = {};
  for (const p of recent) branches[p.branch] = (branches[p.branch] ?? 0) + 1;
  const wall = Date.now();
  const tokensPerChunk = s.chunkChars / s.charsPerToken;
  return {
    router: s.id,
    fleet: s.view.fleet,
    groups: groupsJson(s.view.served, replicas),
    policy: s.policy,
    time: wall,
    uptimeS: Math.round((wall - s.startedAt) / 1000),
    queueWaiting: s.waiting(),
    counts: s.view.statusCounts(now),
    replicas: replicas.map((r) => replicaRow(s, r, now)),
    placements: { total: s.recorder.total, window: recent.length, branches, recent: recent.slice(0, RECENT_SHOWN) },
    prefixes: s.recorder.hottest(PREFIXES_SHOWN).map((p) => ({
      hash: hex(p.hash),
      depthChunks: p.depth,
      approxTokens: Math.round(p.depth * tokensPerChunk),
      model: p.model,
      adapter: p.adapter,
      requests: p.count,
      lastAgoMs: Math.max(0, wall - p.lastAt),
      replicas: replicas.filter((r) => s.view.holds(r, p.hash)).map((r) => r.id),
    })),
    tenants: tenantRows(s, now),
    routers: {
      ...(s.gossip === undefined
        ? { self: null, mesh: [], connectedPeers: 0, batchWindowMs: 0, statesCoalesced: 0 }
        : {
            self: s.gossip.peerId,
            mesh: s.gossip.meshPeers().sort(),
            connectedPeers: s.gossip.peers().length,
            // The window its agents' states wait in (wider with many routers) and those sent as one.
            batchWindowMs: s.gossip.stats().batchWindowMs ?? 0,
            statesCoalesced: s.gossip.stats().statesCoalesced,
          }),
      // Other routers whose batches it hears, and the routers' worth of traffic it places with (core/routers-estimate.ts).
      heard: s.local.routersHeard(now),
      sharing: Math.round(s.local.routers * 100) / 100,
    },
  };
}

let page: string | undefined;
/** The status page (read once; the bundle ships it as an asset). */
export function statusPage(): string {
  return (page ??= readFileSync(new URL('./page.html', import.meta.url), 'utf8'));
}
