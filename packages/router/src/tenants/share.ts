/**
 * The fleet share: global per-tenant limits with no store. Each router
 * publishes its own per-tenant usage over the last 60 s a few times a second
 * on the routers' gossip topic; each adds what the others last said to its
 * own window and admits against the sum (docs/TENANTS.md, 'Global limits').
 * Transport-free: the clock is the `now` each call passes; the live router
 * and the DES move the bytes.
 *
 * Steps:
 *  1. encode(now): this router's window sums (the limiter's localUsage) for
 *     the tenants that have a limit and some usage, largest first, at most
 *     MAX_SHARED_TENANTS, as one msgpack message: version, router id, epoch
 *     (a restart starts a new one), sequence, then (tenant, requests, tokens)
 *     triples. An idle router still publishes (no triples): it is alive.
 *  2. ingest(bytes, from, now): decode and validate (shape, bounds, the
 *     author is the router it names); garbage is dropped and counted, an
 *     older (epoch, sequence) than the last heard is dropped as stale. A
 *     message replaces everything its router said before (a tenant left out
 *     has no usage there), so a lost message costs only freshness.
 *  3. others(tenant, now): the sum over the routers heard within LIVE_MS,
 *     plus each one's growth since its message at the rate its last two
 *     messages showed (only growth, for at most one LIVE_MS): admissions in
 *     flight between messages are counted before they are heard of.
 *  4. limitFactor(now): (1 + live) / N, N = this router and every router
 *     known. Hearing everyone: 1. Cut off from everyone: 1/N, never more —
 *     the silent routers keep admitting their own share, so the ones still
 *     talking give it up. A router silent past FORGET_MS is forgotten (it
 *     left), but only while some other router is heard: a router that hears
 *     no one cannot tell a partition from the others leaving, so it keeps
 *     its 1/N until it hears one again. A router's `bye` (graceful
 *     shutdown) forgets it at once.
 *
 * Complexity: encode O(T log T) for T tenants with usage; ingest O(T) for
 * the message's tenants; others and limitFactor O(R) for R routers known.
 * Memory: at most MAX_ROUTERS routers × the tenants with limits.
 *
 * Trade-off: what a router knows of the others is as old as the publish
 * period plus the gossip delay. Within that lag two routers may both take
 * capacity that frees up, so the fleet can overshoot by about (routers − 1)
 * × the admissions of one lag; a shorter period shrinks it and costs one
 * message per router per period on every router (docs/TENANTS.md, 'Global
 * limits', has the measured figures).
 */
import { Packr } from 'msgpackr';
import type { Counts, FleetShare } from './types.ts';

/** One tenant's admitted requests and tokens over the last 60 s. */
export type TenantUsage = Counts;

/** How often a router with a tenants file publishes its usage, ms. */
export const SHARE_PUBLISH_MS = 250;
/** A router not heard for this long is cut off: its usage no longer counts and the limit factor drops, ms. */
export const LIVE_MS = 2_000;
/**
 * A router silent this long has left (forgotten, while some other router is
 * heard), ms. Longer: a router that crashed without its bye holds back its
 * share of every limit for longer. Shorter: a partition that outlasts it ends
 * with the others taking the whole limit while the cut-off router still
 * takes its 1/N, (1 + 1/N) × the limit in all.
 */
export const FORGET_MS = 300_000;
/** Tenants one message carries at most (the largest users by tokens first). */
export const MAX_SHARED_TENANTS = 4_096;
/** Routers remembered at most; messages from further ones are dropped and counted. */
export const MAX_ROUTERS = 1_024;
/** Tenant and router names longer than this are garbage. */
const MAX_NAME = 256;
const VERSION = 1;

export interface FleetShareOptions {
  /** This router's id: its gossip peer id live (the author gossip signs), `router-<i>` in the DES. */
  id: string;
  /** This router's own per-tenant sums over the last 60 s (the limiter's localUsage). */
  local: (now: number) => Iterable<readonly [string, TenantUsage]>;
  /** Whether a tenant has a per-minute limit: only those are sent and kept. */
  limited: (tenant: string) => boolean;
  /** Tells this router's restarts apart (later is newer); default the wall clock at construction. */
  epoch?: number;
}

export interface ShareStats {
  published: number;
  accepted: number;
  /** Undecodable or malformed messages, and messages whose author is not the router they name. */
  garbage: number;
  /** Messages older than the last heard from their router (reordered by the mesh). */
  stale: number;
  /** Messages from routers beyond MAX_ROUTERS. */
  overflow: number;
  /** Routers forgotten after FORGET_MS of silence or a bye. */
  forgotten: number;
}

interface Heard {
  epoch: number;
  seq: number;
  heardAt: number;
  usage: Map<string, TenantUsage>;
  /** The previous message's usage and time, for the growth rate. */
  prev: Map<string, TenantUsage> | undefined;
  prevAt: number;
}

const packr = new Packr({ useRecords: false, moreTypes: false });
const EMPTY: TenantUsage = Object.freeze({ requests: 0, tokens: 0 });

export class UsageShare implements FleetShare {
  readonly id: string;
  readonly epoch: number;
  readonly stats: ShareStats = { published: 0, accepted: 0, garbage: 0, stale: 0, overflow: 0, forgotten: 0 };
  readonly #o: FleetShareOptions;
  readonly #routers = new Map<string, Heard>();
  #seq = 0;

  constructor(o: FleetShareOptions) {
    this.#o = o;
    this.id = o.id;
    this.epoch = o.epoch ?? Date.now();
  }

  /** This router's message now: its usage, or with `bye` its farewell (the others forget it at once). */
  encode(now: number, bye = false): Uint8Array {
    const rows: Array<readonly [string, TenantUsage]> = [];
    if (!bye)
      for (const [tenant, u] of this.#o.local(now))
        if ((u.requests > 0 || u.tokens > 0) && this.#o.limited(tenant)) rows.push([tenant, u]);
    if (rows.length > MAX_SHARED_TENANTS) rows.sort((a, b) => b[1].tokens - a[1].tokens).length = MAX_SHARED_TENANTS;
    const u: Array<string | number> = [];
    for (const [tenant, x] of rows) u.push(tenant, x.requests, x.tokens);
    this.stats.published++;
    return packr.pack({ v: VERSION, r: this.id, e: this.epoch, s: ++this.#seq, ...(bye ? { bye: true } : {}), u });
  }

  /** Takes another router's message; `from` is its author as the transport knows it (the gossip signer), if any. */
  ingest(bytes: Uint8Array, from: string | undefined, now: number): boolean {
    const m = decode(bytes);
    if (m === undefined || (from !== undefined && from !== m.r) || m.r === this.id) {
      this.stats.garbage++;
      return false;
    }
    const known = this.#routers.get(m.r);
    if (known !== undefined && (m.e < known.epoch || (m.e === known.epoch && m.s <= known.seq))) {
      this.stats.stale++;
      return false;
    }
    if (m.bye) {
      if (this.#routers.delete(m.r)) this.stats.forgotten++;
      this.stats.accepted++;
      return true;
    }
    if (known === undefined && this.#routers.size >= MAX_ROUTERS) {
      this.stats.overflow++;
      return false;
    }
    const usage = new Map<string, TenantUsage>();
    for (let i = 0; i < m.u.length; i += 3) {
      const tenant = m.u[i] as string;
      if (this.#o.limited(tenant)) usage.set(tenant, { requests: m.u[i + 1] as number, tokens: m.u[i + 2] as number });
    }
    const sameRun = known !== undefined && known.epoch === m.e;
    this.#routers.set(m.r, {
      epoch: m.e,
      seq: m.s,
      heardAt: now,
      usage,
      prev: sameRun ? known.usage : undefined,
      prevAt: sameRun ? known.heardAt : now,
    });
    this.stats.accepted++;
    return true;
  }

  others(tenant: string, now: number): TenantUsage {
    this.#sweep(now);
    let requests = 0;
    let tokens = 0;
    for (const h of this.#routers.values()) {
      const age = now - h.heardAt;
      if (age > LIVE_MS) continue;
      const u = h.usage.get(tenant) ?? EMPTY;
      requests += u.requests;
      tokens += u.tokens;
      // Growth since the message, at the rate its last two showed: only up, and over at most one LIVE_MS.
      const p = h.prev?.get(tenant) ?? EMPTY;
      const span = h.heardAt - h.prevAt;
      if (h.prev !== undefined && span > 0) {
        requests += (Math.max(0, u.requests - p.requests) * age) / span;
        tokens += (Math.max(0, u.tokens - p.tokens) * age) / span;
      }
    }
    return { requests, tokens };
  }

  limitFactor(now: number): number {
    this.#sweep(now);
    return (1 + this.#live(now)) / (1 + this.#routers.size);
  }

  /** Routers known (heard within FORGET_MS, or kept while cut off) and, of them, heard within LIVE_MS. */
  routers(now: number): { known: number; live: number } {
    this.#sweep(now);
    return { known: this.#routers.size, live: this.#live(now) };
  }

  #live(now: number): number {
    let live = 0;
    for (const h of this.#routers.values()) if (now - h.heardAt <= LIVE_MS) live++;
    return live;
  }

  /** Forgets routers silent past FORGET_MS, but only while some other router is heard (see the header). */
  #sweep(now: number): void {
    if (this.#live(now) === 0) return;
    for (const [id, h] of this.#routers)
      if (now - h.heardAt > FORGET_MS) {
        this.#routers.delete(id);
        this.stats.forgotten++;
      }
  }
}

/** The gossip validator's rule: a well-formed message whose signer is the router it names (else reject). */
export function wellFormedShare(bytes: Uint8Array, author: string): boolean {
  return decode(bytes)?.r === author;
}

interface Message {
  r: string;
  e: number;
  s: number;
  bye: boolean;
  u: ReadonlyArray<unknown>;
}

/** The message, or undefined when it is not one: every field typed and bounded, every count finite and ≥ 0. */
function decode(bytes: Uint8Array): Message | undefined {
  let raw: unknown;
  try {
    raw = packr.unpack(bytes);
  } catch {
    return undefined;
  }
  if (raw === null || typeof raw !== 'object') return undefined;
  const m = raw as Record<string, unknown>;
  if (m.v !== VERSION || !isName(m.r) || !isCount(m.e) || !isCount(m.s) || !Array.isArray(m.u)) return undefined;
  if (m.bye !== undefined && m.bye !== true) return undefined;
  const u = m.u as unknown[];
  if (u.length % 3 !== 0 || u.length > 3 * MAX_SHARED_TENANTS) return undefined;
  for (let i = 0; i < u.length; i += 3) if (!isName(u[i]) || !isCount(u[i + 1]) || !isCount(u[i + 2])) return undefined;
  return { r: m.r, e: m.e, s: m.s, bye: m.bye === true, u };
}

function isName(x: unknown): x is string {
  return typeof x === 'string' && x.length > 0 && x.length <= MAX_NAME;
}

function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0;
}
