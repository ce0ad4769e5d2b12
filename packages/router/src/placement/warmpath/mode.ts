/**
 * The switches and the mode: every `placementOff` switch is read here, once
 * per policy (`switchesOf`), and every request's mode is computed from them
 * once per request (`modeOf`), as plain data. Steps read the mode; none of
 * them tests a switch or the routing key itself (docs/PLACEMENT.md, "The
 * mode").
 */
import { mix32 } from '@warmpath/shared/runtime';
import type { RequestInfo } from '@warmpath/shared/wire';
import type { CandidateTable } from '../candidates.ts';
import type { PlacementRequest, WarmpathOptions } from '../types.ts';
import { SWITCHABLE_STEP_NAMES, type SwitchableStep } from './steps.ts';

/** How far over the load bound (× c) a deeper warm replica may still be taken, by default (the router's `hardBound`; docs/ABLATION.md). */
export const DEFAULT_HARD_BOUND = 2;

/** How many admissible replicas in ring order a cold prompt compares, by default (the router's `spillChoices`; docs/ABLATION.md). */
export const DEFAULT_SPILL_CHOICES = 2;

/** How far ahead equally warm replicas count the work their recent clients send, ms, by default (the router's `homeHorizonMs`; docs/ABLATION.md). */
export const DEFAULT_HOME_HORIZON_MS = 3_000;

/**
 * What reloading a chunk from an engine's host memory costs against
 * prefilling it, by default (the router's `hostReloadCost`): KV bytes per
 * token over PCIe against the prefill rate (docs/PLACEMENT.md, "Tiers and peers").
 */
export const DEFAULT_HOST_RELOAD_COST = 0.15;

/**
 * With N routers, balance's target is one of the first min(N, this) nearly
 * idle rows in the key's ring order, drawn by the request's own draw: the
 * first alone would be every router's target until their next reports
 * (docs/ABLATION.md). One router keeps the ring's first.
 */
export const MAX_BALANCE_SPREAD = 64;

/** Fewest candidates per slice (docs/PLACEMENT.md, "Warm"). */
const MIN_SLICE = 4;

/** Each switch: on (not in placementOff)? Computed once per policy. */
export type Switches = Readonly<Record<SwitchableStep, boolean>>;

export function switchesOf(opts: WarmpathOptions): Switches {
  const off = new Set(opts.placementOff ?? []);
  return Object.fromEntries(SWITCHABLE_STEP_NAMES.map((s) => [s, !off.has(s)])) as Record<SwitchableStep, boolean>;
}

/** One request's mode: what every step needs to know about how to place it, decided once. */
export interface Mode {
  /** An embedding: no prefix reuse, least-loaded. */
  readonly embedding: boolean;
  /** The request carries an explicit routing key: it asks for affinity (its own c, no spreaders, no queue limit). */
  readonly keyed: boolean;
  /** The load factor c. */
  readonly c: number;
  /** The factor a deeper warm replica may be taken within (warm-over-bound); 0 = never. */
  readonly hardC: number;
  /** This request's work unit for the bound, tokens: promptTokens + maxTokens (≥ 1). */
  readonly unit: number;
  /** The bound's floor per unit of weight, tokens (0 = none). */
  readonly floor: number;
  /** Routers besides this one sharing the clients, counted against the floor (0 with `share` off). */
  readonly others: number;
  /** Depth counts this router's optimistic overlay. */
  readonly overlay: boolean;
  readonly tokensPerChunk: number;
  /** What a chunk only in a replica's host memory is worth against one on its GPU: 1 − its reload's cost. */
  readonly hostCredit: number;
  /** What a chunk only another replica holds is worth: 1 − its transfer's cost (0: no KV sharing). */
  readonly peerCredit: number;
  /** Seconds of a row's recent work rate counted on top of its queue among equally warm rows (0 = none). */
  readonly horizonS: number;
  /** Keyed: equally warm rows go by the key's ring order, and a new task takes the cold step. */
  readonly keyRing: boolean;
  /** How many slices equally warm rows are cut into, one per router (1 = no slice). */
  readonly slices: number;
  /** A prefix warm on several replicas may warm one more (balance). */
  readonly balance: boolean;
  /** Balance's target is drawn among the first this many idle replicas in ring order (1 = the first). */
  readonly balanceSpread: number;
  /** Picks carry a queue limit. */
  readonly queueLimit: boolean;
  /** A cold prefix walks the ring past an inadmissible home (else only the home, then least-loaded). */
  readonly spill: boolean;
  /** Admissible ring members a cold prompt compares (spill-two-choices); 1 = the first alone. */
  readonly spillChoices: number;
  /** No routing key: a cold prompt leaves the ring's choices for a row whose queue is shorter by more than a repeat's miss. */
  readonly leastQueued: boolean;
  /** The queue they are compared by (cost.ts, coldQueue): keyed, what this router knows is queued; else the published queue. */
  readonly coldQueue: 'known' | 'published';
  /** A cold adapter request walks the adapter's own ring. */
  readonly adapterRing: boolean;
  /** Routers sharing the clients, rounded (≥ 1 in practice). */
  readonly routers: number;
  /** This request's own 32-bit draw: the same on every router, different for different prompts. */
  readonly draw: number;
}

export function modeOf(req: PlacementRequest, t: CandidateTable, on: Switches, opts: WarmpathOptions): Mode {
  const info = req.info;
  const keyed = info.routingKey !== undefined;
  const routers = Math.round(t.routers);
  const c = keyed ? opts.keyLoadFactor : opts.loadFactor;
  return {
    embedding: info.kind === 'embedding',
    keyed,
    c,
    hardC: on['warm-over-bound'] ? c * (opts.hardBound ?? DEFAULT_HARD_BOUND) : 0,
    unit: Math.max(1, info.promptTokens + info.maxTokens),
    floor: on['bound-floor'] ? opts.boundFloorTokens : 0,
    others: on.share ? routers - 1 : 0,
    overlay: on.overlay,
    tokensPerChunk: opts.chunkChars / opts.charsPerToken,
    hostCredit: 1 - (opts.hostReloadCost ?? DEFAULT_HOST_RELOAD_COST),
    peerCredit: 1 - (opts.peerFetchCost ?? 1),
    horizonS: on.horizon ? (opts.homeHorizonMs ?? DEFAULT_HOME_HORIZON_MS) / 1000 : 0,
    keyRing: keyed && on['key-tie-break'],
    slices: !keyed && on.slice ? Math.max(1, Math.min(routers, Math.floor(t.rows.length / MIN_SLICE))) : 1,
    balance: !keyed && on.balance,
    balanceSpread: on['balance-spread'] ? Math.max(1, Math.min(MAX_BALANCE_SPREAD, routers)) : 1,
    queueLimit: !keyed && on['queue-limit'],
    spill: on.spill,
    spillChoices: on['spill-two-choices'] ? (opts.spillChoices ?? DEFAULT_SPILL_CHOICES) : 1,
    leastQueued: !keyed && on['spill-least-queued'],
    coldQueue: keyed ? 'known' : 'published',
    adapterRing: info.adapter !== '' && on['adapter-home'],
    routers,
    draw: drawOf(info),
  };
}

/** A 32-bit draw from the request's last chain hash, its tail's hash and its length. */
function drawOf(info: RequestInfo): number {
  const h = info.hashes.length > 0 ? info.hashes[info.hashes.length - 1]! : 0n;
  return mix32(Number(h & 0xffffffffn) ^ Number(h >> 32n) ^ mix32(info.tailHash ^ info.promptChars));
}
