/**
 * The one placement interface every policy implements — Warmpath's own, the
 * plain load balancers, and the benchmark's emulations of peer routers.
 *
 * `place(request, view, local)` is pure: it reads the fleet view and this
 * router's local state and returns `{ replica, branch }`; the router does all
 * I/O, metrics and bookkeeping around it. Policies that learn from their own
 * routing decisions (SGLang's radix tree, KubeAI's in-flight counts…) keep
 * that state in their instance and update it from `onDispatch`/`onComplete`,
 * one instance per router, exactly as those systems do.
 */
import type { Endpoint, RequestInfo } from '@warmpath/shared/wire';
import type { FleetView, Replica } from '../fleet/view.ts';
import type { LocalState } from './local.ts';

/** Why a replica was chosen (or none): counted per policy and returned in x-warmpath-route. */
export const BRANCHES = [
  'warm', // the warmest replica within the load bound with KV headroom
  'ring', // the key's ring home (first eligible in ring order) within the bound
  'spill', // a later replica in the key's ring order: deterministic overflow
  'balance', // a prefix warm on several replicas, all over their share: an under-loaded replica warms it too
  'adapter-hot', // no warm prefix; a replica with the adapter loaded, in key ring order
  'adapter-home', // the adapter's ring home (free slot preferred): a cold adapter load
  'adapter-spill', // a later replica in the adapter's ring order
  'least-loaded', // every replica over the bound; the least loaded with headroom
  'round-robin',
  'least-request',
  'power-of-two',
  'queued', // waited in the router queue for room, then placed
  'retry', // placed again after a replica refused or failed to connect
  'saturated', // no replica has room: queue, then 429 fleet_saturated
  'no-replica', // no eligible replica at all: 503 no_replica
  // The peers' emulations (placement/peers/), named after each peer's own decision paths.
  'sglang-balance', // SGLang cache_aware: imbalanced, least in-flight
  'sglang-cache-hit', // SGLang cache_aware: match rate above cache_threshold
  'sglang-least-load', // SGLang cache_aware: low match rate, least in-flight
  'llm-d-score', // llm-d endpoint picker: max weighted score
  'dynamo-cost', // Dynamo KV router: minimum cost
  'kubeai-home', // KubeAI PrefixHash: the key's ring home
  'kubeai-walk', // KubeAI PrefixHash: a later endpoint clockwise (bounded load)
] as const;
export type KnownBranch = (typeof BRANCHES)[number];
/** Emulations may add their own branch names. */
export type Branch = KnownBranch | (string & {});

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
  /** Local clock, ms: freshness and overlay expiry are judged at this instant. */
  readonly now: number;
}

export type Placement =
  | {
      replica: Replica;
      branch: Branch;
      /** Tokens this request adds to the replica (uncached prompt + output); default promptTokens + maxTokens. */
      work?: number;
    }
  | { replica: undefined; branch: 'saturated' | 'no-replica' };

export interface Outcome {
  /** ok: answered; rejected: the agent's 429/503; connect: could not reach it; error: failed after dispatch; aborted: the client left. */
  kind: 'ok' | 'rejected' | 'connect' | 'error' | 'aborted';
  status?: number;
}

export interface Policy {
  readonly name: string;
  place(req: PlacementRequest, view: FleetView, local: LocalState): Placement;
  /** The router sent `req` to `replica` (after place, before the first upstream byte). */
  onDispatch?(req: PlacementRequest, replica: Replica, local: LocalState): void;
  /** The request to `replica` ended. */
  onComplete?(req: PlacementRequest, replica: Replica, outcome: Outcome): void;
}

export interface PolicyOptions {
  /** Prefix chunk size, characters (for warm-token estimates). */
  chunkChars: number;
  charsPerToken: number;
  /** Bounded-load factor c. */
  loadFactor: number;
  /** Below this much work per unit of weight (tokens) a replica is always within the bound. */
  boundFloorTokens?: number;
  /** Random source in [0, 1) for randomized policies; tests pass a seeded one. */
  random?: () => number;
}

export type PolicyFactory = (opts: PolicyOptions) => Policy;

export const NO_REPLICA: Placement = Object.freeze({ replica: undefined, branch: 'no-replica' });
export const SATURATED: Placement = Object.freeze({ replica: undefined, branch: 'saturated' });
