/**
 * The one placement interface every policy implements — Warmpath's own, the
 * plain load balancers, and whatever else registers (the benchmark's
 * emulations of peer routers, packages/bench/src/peers/).
 *
 * `select(request, candidates, warmth)` is pure: it reads a candidate table
 * built once per request (placement/candidates.ts) and returns
 * `{ replica, branch }`, writing nothing — not the table, not the fleet view,
 * not this router's local state, not the policy's own state. The router does
 * all I/O, metrics and bookkeeping around it (placement/place.ts). Policies
 * that learn from their own routing decisions (SGLang's radix tree, llm-d's
 * LRU, round-robin's counter…) keep that state in their instance and update
 * it only from `onDispatch`/`onComplete`, one instance per router, exactly as
 * those systems do.
 */
import type { Endpoint, HashRing, RequestInfo } from '@warmpath/shared/wire';
import type { Replica } from '../fleet/view.ts';
import type { LocalState } from '../core/local.ts';
import type { Reserve } from './reserve.ts';

/**
 * Why a replica was chosen (or none): one name per reason, counted per policy
 * in warmpath_router_placements_total and returned in x-warmpath-route. The
 * router's README has the table of which policy emits which.
 */
export const BRANCHES = [
  // Warmpath (placement/warmpath/).
  'warm', // the deepest warm replica within the load bound with KV headroom
  'warm-over-bound', // a deeper warm replica over the bound (within 2c) whose cost (queue + 2 × what it lacks) is lower than the pick within it
  'balance', // a prefix warm on several replicas, the pick over its share: an under-loaded replica warms it too
  'ring', // cold prefix: the key's ring home within the bound
  'spill', // cold prefix, ring home over the bound or full: the next replica within it in key ring order
  'spill-two-choices', // cold prefix: the second replica within the bound in key ring order, whose published prefill queue is shorter
  'spill-least-queued', // cold prefix, no key: a later replica in key ring order whose queue is shorter than the choice's by more than a repeat's miss
  'retry-two-choices', // several routers, a replica refused: the cheapest of sampled admissible replicas (two warm and a cold one when it can)
  'adapter-home', // cold adapter: the adapter's ring home (hot, else a free slot, else an eviction)
  'adapter-spill', // cold adapter: a later replica in the adapter's ring order
  'least-loaded', // every replica over the bound: the least loaded with headroom
  'embedding-least-loaded', // an embedding (no prefix reuse): the least loaded with headroom
  // The plain load balancers (placement/simple.ts).
  'round-robin',
  'random',
  'least-request',
  'power-of-two',
  'chash-home', // consistent-hash: the session key's first candidate in ring order, no bound
  'chash-no-key', // consistent-hash: no session key: round-robin (HAProxy's rule for a missing header)
  'chwbl-home', // chwbl-header: the session key's home, within the bound
  'chwbl-walk', // chwbl-header: the home over the bound: a later candidate in the session's ring order
  'chwbl-no-key', // chwbl-header: no session key: round-robin over the candidates within the bound
  // Set by the router around any policy (a retry or a request placed after waiting keeps its policy's branch: placement/route.ts names the attempt's kind).
  'saturated', // no replica has room: queue, then 429 fleet_saturated
  'no-replica', // no eligible replica at all: 503 no_replica
] as const;
export type KnownBranch = (typeof BRANCHES)[number];
/** A policy registered from outside the product (the benchmark's emulations of peer routers) names its own branches. */
export type Branch = KnownBranch | (string & {});

/**
 * A finished prefill whose decode leg was refused: the prefill replica and
 * what the transport needs to send the decode leg elsewhere (vLLM: the
 * prefill answer's kv_transfer_params; the DES: nothing).
 */
export interface Transferred {
  readonly prefill: Replica;
  readonly params?: unknown;
}

export interface PlacementRequest {
  readonly info: RequestInfo;
  /** The endpoint asked for (same names as RequestInfo.kind). */
  readonly endpoint: Endpoint;
  /** Affinity key: hashed explicit routing key, else the chain hash at keyDepth (see affinityKey). */
  readonly key: bigint;
  /** The parsed body, for policies that key on raw text/JSON (peer emulations). */
  readonly body: Readonly<Record<string, unknown>> | undefined;
  /** Replica ids already tried for this request. */
  readonly exclude: ReadonlySet<string> | undefined;
  /** One leg of a disaggregated request (placement/pair.ts): members of this role are no candidates (not counted as tried). */
  readonly without?: 'prefill' | 'decode';
  /** Its prefill is done and the decode leg was refused (placement/pair.ts, 'redecode'): only a decode replica is placed. */
  readonly transfer?: Transferred;
  /** Prefill tokens this request's last refusal found queued beyond its pick's queue limit (what the view missed there); undefined before one. */
  readonly missed?: number;
  /** Local clock, ms: freshness and overlay expiry are judged at this instant. */
  readonly now: number;
  /** With an interactive reserve in force (tenants/split.ts): only the replicas of this side are candidates. */
  readonly reserve?: Reserve;
}

export type Placement =
  | {
      replica: Replica;
      branch: Branch;
      /** Tokens this request adds to the replica (uncached prompt + output); default promptTokens + maxTokens. */
      work?: number;
      /** KV tokens it takes there until a report counts it; default `work` (a decode leg's is more: its prompt arrives by transfer). */
      kv?: number;
      /** The most prefill (tokens) the policy expects queued there before another replica would serve the request sooner (x-warmpath-queue-limit). */
      queueLimit?: number;
      /** The policy's step that placed the request (warmpath: placement/warmpath/index.ts, STEPS); default the branch. */
      step?: string;
      /** The term or tie-break that decided among the step's candidates (warmpath: docs/PLACEMENT.md, "Reading the header"). */
      by?: string;
    }
  | { replica: undefined; branch: 'saturated' | 'no-replica' };

export interface Outcome {
  /** ok: answered; rejected: the agent's 429/503; connect: could not reach it; error: failed after dispatch; aborted: the client left. */
  kind: 'ok' | 'rejected' | 'connect' | 'error' | 'aborted';
  status?: number;
}

export interface Policy {
  readonly name: string;
  /** Pure (see above); called only with at least one candidate. */
  select(req: PlacementRequest, candidates: CandidateTable, warmth: Warmth): Placement;
  /** The router sent `req` to `replica` (after select, before the first upstream byte). */
  onDispatch?(req: PlacementRequest, replica: Replica, local: LocalState): void;
  /** The request to `replica` ended. */
  onComplete?(req: PlacementRequest, replica: Replica, outcome: Outcome): void;
  /**
   * Build this policy's candidate tables with `expected` in the queue
   * (Candidate.expected): the work other routers likely sent each replica
   * since its report. Off for the peers' emulations, which have no such
   * estimate.
   */
  readonly expectsOthers?: boolean;
  /**
   * A peer's own prefill/decode rule (the benchmark's P/D emulations),
   * used instead of warmpath's pair (placement/pair.ts, placeByRule) in a
   * disaggregated fleet; absent: warmpath's.
   */
  readonly pd?: PdRule;
}

/**
 * How a peer pairs, decode first as llm-d's and Dynamo's routers do: the
 * decode replica by the policy's `select` over the decode-capable replicas,
 * then whether the prompt prefills elsewhere, then the prefill replica.
 */
export interface PdRule {
  /** Prompt tokens the chosen decode replica (row `row` of `t`) would have to prefill, as the peer sees its cache. */
  uncached(req: PlacementRequest, t: CandidateTable, row: number, warmth: Warmth): number;
  /** Prefill elsewhere? Given those tokens and the prefill-capable replicas' table. */
  remote(req: PlacementRequest, uncached: number, prefill: CandidateTable): boolean;
  /** The prefill replica among the prefill-capable ones; absent: the policy's `select`. */
  prefill?(req: PlacementRequest, t: CandidateTable, warmth: Warmth): Placement;
}

/** Warmpath's parameters, read from the router's validated config (warmpathOptions in registry.ts). */
export interface WarmpathOptions {
  /** Prefix chunk size, characters (for warm-token estimates). */
  readonly chunkChars: number;
  readonly charsPerToken: number;
  /** Bounded-load factor c, for requests without an explicit routing key. */
  readonly loadFactor: number;
  /** Bounded-load factor c for requests with an explicit routing key. */
  readonly keyLoadFactor: number;
  /** The bounded-load floor per unit of weight, tokens (withinBound's `floor`). */
  readonly boundFloorTokens: number;
  /** How far over the bound (× c) a deeper warm replica may still be taken (warmpath's warm-over-bound); default DEFAULT_HARD_BOUND. */
  readonly hardBound?: number;
  /** How many admissible replicas in a cold prompt's ring order compare published prefill queues (warmpath's spill-two-choices); default DEFAULT_SPILL_CHOICES. */
  readonly spillChoices?: number;
  /** Equally warm replicas count this many ms of their recent work rate on top of their prefill queue (warmpath's step `horizon`); default DEFAULT_HOME_HORIZON_MS. */
  readonly homeHorizonMs?: number;
  /** A chunk only in an engine's host memory costs this fraction of prefilling it (its reload); default DEFAULT_HOST_RELOAD_COST. */
  readonly hostReloadCost?: number;
  /** A chunk only another replica holds costs this fraction of prefilling it (its transfer); default 1: no KV sharing. */
  readonly peerFetchCost?: number;
  /** Warmpath steps switched off, for ablation (SWITCHABLE_STEPS in placement/warmpath/steps.ts); default none. */
  readonly placementOff?: readonly string[];
}

/** The randomized policies' one parameter: a random source in [0, 1) (tests pass a seeded one). */
export interface RandomOptions {
  readonly random?: () => number;
}

/** Builds a policy from its own parameters `P` (each policy declares its type; the registry derives it from the config). */
export type PolicyFactory<P> = (params: P) => Policy;

export const NO_REPLICA: Placement = Object.freeze({ replica: undefined, branch: 'no-replica' });
export const SATURATED: Placement = Object.freeze({ replica: undefined, branch: 'saturated' });

/** The candidate table (built by candidates.ts once per request): what a policy may read about the request's candidates. */
export interface Candidate {
  readonly replica: Readonly<Replica>;
  /** Published inflightTokens + `added`: the replica's work as this router sees it, tokens. */
  readonly load: number;
  /** Work this router sent to the replica after its last report and still open, tokens. */
  readonly added: number;
  /** Relative capacity (> 0). */
  readonly weight: number;
  /** KV tokens free after what this router sent since the report (LocalState.figures' addedKv; Infinity when the replica publishes no KV size). */
  readonly kvFree: number;
  /** Published prefillTokens + `added` (+ `expected`): the prefill queue this request would wait behind, tokens. */
  readonly queue: number;
  /** This router's requests in flight on the replica. */
  readonly inflight: number;
  /**
   * Work the other routers sharing the clients likely sent the replica since
   * its report, tokens, included in `queue` (not in `load`): its published arrival
   * rate × the report's age × the share of the fleet's traffic that is not
   * this router's (1 − 1/N, N = `routers` rounded: 0 with one router). 0 for
   * a policy that does not ask for it (Policy.expectsOthers).
   */
  readonly expected: number;
  /** The replica's published recent work rate (recentTokensPerS), tokens/s: what its clients of the last several seconds send it. */
  readonly recent: number;
}

export interface CandidateTable {
  /** Eligible members of the request's group, in group order; never empty. */
  readonly rows: readonly Candidate[];
  /** Σ load over rows, tokens. */
  readonly totalLoad: number;
  /** Σ weight over rows. */
  readonly totalWeight: number;
  /**
   * How many routers' worth of traffic the fleet carries for each of this
   * router's requests: the rows' published in-flight requests over this
   * router's own among them, both averaged over about 2 s (≥ 1; 1 until it
   * has some). Routers that share clients evenly see about their number; it
   * needs no configuration and no router-to-router messages.
   */
  readonly routers: number;
  /** The group's ring (over its live members, a superset of the rows). */
  readonly ring: HashRing;
  /** The group's members by id (read with `rowOf`). */
  readonly members: ReadonlyMap<string, Readonly<Replica>>;
  /** Ring member index → replica slot (Group.ringSlots). */
  readonly ringSlots: Int32Array;
  /** Replica slot → row index, -1 (or past the end) when not a candidate. */
  readonly rowOfSlot: ArrayLike<number>;
}

/** Matched chain depth (chunks) per row of a CandidateTable. */
export interface Warmth {
  /** From the replicas' published digests: the engines' caches as of their last report. */
  readonly digest: readonly number[];
  /** Of `digest`, the leading chunks on the GPU (the rest only in host memory); equal to it without a host tier (absent: equal). */
  readonly gpu?: readonly number[];
  /** From this router's optimistic overlay: prefixes it sent in the last overlayTtlMs. */
  readonly overlay: readonly number[];
  /** The rows with a non-zero depth in either, in no particular order: the only rows a prefix can favour (at 1,000 replicas, a tenth of them or less). */
  readonly warm: readonly number[];
}
