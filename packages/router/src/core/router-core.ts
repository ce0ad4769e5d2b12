/**
 * The router core: everything a router does between "a described request
 * arrived" and "its answer ended", with no transport. The HTTP server and the
 * discrete-event simulator both drive this one object; they differ only in
 * the `send` they inject (undici streaming vs. the event queue and the agent
 * core) and in the clock.
 *
 * Steps per request:
 *  1. place through the policy (placement/place.ts) on a read of the fleet
 *     view and this router's local state; count the branch.
 *  2. no replica: `saturated`, or no other replica after an agent refused →
 *     wait in the bounded queue (woken by a fleet state update, one of our
 *     own completions, or the poll), placing again with the tried set cleared,
 *     until queueTimeoutMs → fleet_saturated; `no-replica` → no_replica (or
 *     upstream_error after failed attempts).
 *  3. a replica: record the dispatch (local state, policy), relabel the
 *     branch (`retry` after a failed attempt, `queued` after waiting) and hand
 *     the attempt to `send`.
 *  4. the attempt ended: close the dispatch and wake the queue. A refusal,
 *     connect failure or reset before the first byte excludes that replica
 *     (a connect failure also marks it suspect) and places again, up to
 *     maxAttempts; after the first byte the answer is final.
 * Complexity: one placement per attempt and per wake of a queued request.
 * Trade-off: callbacks, not a promise per step, so the simulator runs this
 * code synchronously in virtual time and stays deterministic.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { describeRequest, type ReplicaState, type RequestInfo, type RequestKind } from '@warmpath/shared/wire';
import type { RouterConfig } from '../config.ts';
import type { Origin } from '../fleet/trust.ts';
import { FleetView, type Replica, type ViewEvent } from '../fleet/view.ts';
import { affinityKey } from '../placement/eligible.ts';
import { LocalState, type Ticket } from '../placement/local.ts';
import { notifyComplete, notifyDispatch, placeRequest } from '../placement/place.ts';
import { createPolicy, policyOptions } from '../placement/registry.ts';
import type { Outcome, Placement, PlacementRequest, Policy } from '../placement/types.ts';
import { WaitQueue } from './queue.ts';
import type { Clock, CoreMetrics, RouteError, Send, SendResult } from './types.ts';

/** Every placement, for tracing: `{ router, request, placement }`. */
export const placementChannel = diagnostics_channel.channel('warmpath:router:placement');

/** Sweep period, ms: staleness transitions, forgetting, overlay and suspect expiry. */
export const SWEEP_MS = 250;
/** A queued request places again at least this often, ms: load decays on replicas even when no message arrives. */
export const QUEUE_POLL_MS = 50;

export interface RouterCoreOptions<T> {
  /** Validated router config (routerConfig / loadConfig). */
  config: RouterConfig;
  id: string;
  clock: Clock;
  send: Send<T>;
  /** Render an error answer the core decided on. */
  answer: (ctx: T, error: RouteError) => void;
  /** Pull a replica's digest snapshot (msgpack bytes). */
  fetchSnapshot: (r: Replica) => Promise<Uint8Array>;
  /** Random source of randomized policies; default Math.random. */
  random?: () => number;
  /** A policy instance instead of config.policy from the registry (tests, emulations). */
  policy?: Policy;
  metrics?: CoreMetrics;
  onViewEvent?: (e: ViewEvent) => void;
  /** After each sweep (the HTTP server closes pools of forgotten replicas). */
  onSweep?: () => void;
}

/** A request inside the core; opaque to transports except as a handle for `cancel`. */
export interface RouteJob<T> {
  readonly ctx: T;
  readonly info: RequestInfo;
}

interface Job<T> extends RouteJob<T> {
  readonly body: Readonly<Record<string, unknown>> | undefined;
  readonly key: bigint;
  exclude: Set<string> | undefined;
  attempt: number;
  /** When queueing gives up, ms; 0 = never queued. */
  deadline: number;
  /** The last failed attempt's result. */
  last: SendResult | undefined;
  /** The client left: place no more. */
  cancelled: boolean;
}

export class RouterCore<T> {
  readonly id: string;
  readonly config: RouterConfig;
  readonly view: FleetView;
  readonly local: LocalState;
  readonly policy: Policy;
  readonly #o: RouterCoreOptions<T>;
  readonly #queue: WaitQueue<Job<T>>;
  readonly #resolveModel: FleetView['resolveModel'];
  readonly #stopSweep: () => void;

  constructor(o: RouterCoreOptions<T>) {
    const c = o.config;
    this.#o = o;
    this.id = o.id;
    this.config = c;
    const now = (): number => o.clock.now();
    this.view = new FleetView({
      fleet: c.fleet,
      chunkChars: c.chunkChars,
      stateTtlMs: c.stateTtlMs,
      forgetAfterMs: c.forgetAfterMs,
      agentPeers: c.agentPeers,
      agentNetworks: c.agentNetworks,
      fetchSnapshot: o.fetchSnapshot,
      now,
      onEvent: o.onViewEvent ?? (() => {}),
    });
    this.local = new LocalState({ overlayTtlMs: c.overlayTtlMs, overlayMaxChunks: c.overlayMaxChunks, suspectMs: c.suspectMs });
    this.policy =
      o.policy ??
      createPolicy(c.policy, policyOptions(c, o.random));
    this.#queue = new WaitQueue(c.queueMax, QUEUE_POLL_MS, o.clock, (job) => {
      job.exclude?.clear();
      this.#place(job);
    });
    this.#resolveModel = (name) => this.view.resolveModel(name);
    this.view.onChange(() => this.#queue.wake());
    this.#stopSweep = this.#sweepEvery(SWEEP_MS);
  }

  /** Requests waiting in the router queue. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Parsed body → RequestInfo with this router's prefix settings and the fleet's model names; throws WarmpathError. */
  describe(body: Record<string, unknown>, kind: RequestKind, headers: RequestHeaders): RequestInfo {
    return describeFor(this.config, body, kind, this.#resolveModel, headers);
  }

  /** Does some known replica serve the request's model (and adapter) on its endpoint? */
  supports(info: RequestInfo): boolean {
    return this.view.supports(info.model, info.adapter, info.kind);
  }

  /** A gossip payload (encoded state message); `origin`: its author as the gossip node saw it (its rights are checked). */
  receiveBytes(bytes: Uint8Array, origin?: Origin): void {
    this.view.applyBytes(bytes, origin);
  }

  /** A decoded state message (the simulator skips the codec). */
  receive(state: ReplicaState): void {
    this.view.apply(state);
  }

  /** Route one described request; the answer goes through `send` or `answer`. */
  route(ctx: T, info: RequestInfo, body: Readonly<Record<string, unknown>> | undefined): RouteJob<T> {
    const job: Job<T> = { ctx, info, body, key: affinityKey(info, this.config.keyDepthChunks), exclude: undefined, attempt: 0, deadline: 0, last: undefined, cancelled: false };
    this.#place(job);
    return job;
  }

  /** The client left: leave the queue, place no more (an attempt in flight is the transport's to abort). */
  cancel(handle: RouteJob<T>): void {
    const job = handle as Job<T>;
    job.cancelled = true;
    this.#queue.remove(job);
  }

  stop(): void {
    this.#stopSweep();
  }

  #place(job: Job<T>): void {
    if (job.cancelled) return;
    const o = this.#o;
    const now = o.clock.now();
    const preq: PlacementRequest = { info: job.info, endpoint: job.info.kind, key: job.key, body: job.body, exclude: job.exclude, now };
    const placement = this.#timedPlace(preq);
    if (placementChannel.hasSubscribers) placementChannel.publish({ router: this.id, request: preq, placement });
    const replica = placement.replica;
    if (replica === undefined) return this.#noRoom(job, placement.branch, now);
    const branch = job.attempt > 0 ? 'retry' : job.deadline > 0 ? 'queued' : placement.branch;
    o.metrics?.placed(branch);
    const ticket = this.local.dispatch(replica.id, placement.work ?? job.info.promptTokens + job.info.maxTokens, now);
    notifyDispatch(this.policy, preq, replica, this.local);
    o.send({ ctx: job.ctx, info: job.info, replica, branch, attempt: job.attempt }, (r) => this.#ended(job, preq, replica, ticket, r));
  }

  #timedPlace(preq: PlacementRequest): Placement {
    const observe = this.#o.metrics?.placementSeconds;
    if (observe === undefined) return placeRequest(this.policy, preq, this.view, this.local);
    const t0 = performance.now();
    const placement = placeRequest(this.policy, preq, this.view, this.local);
    observe((performance.now() - t0) / 1e3);
    return placement;
  }

  /** No replica now: wait for room, or fail. */
  #noRoom(job: Job<T>, branch: 'saturated' | 'no-replica', now: number): void {
    const { metrics, answer } = this.#o;
    const last = job.last;
    if (branch === 'saturated' || last?.kind === 'rejected') {
      if (job.deadline === 0) {
        job.deadline = now + this.config.queueTimeoutMs;
        metrics?.placed('saturated');
      }
      const left = job.deadline - now;
      if (left > 0 && this.#queue.add(job, left)) return;
      return answer(job.ctx, { code: 'fleet_saturated', retryAfter: true });
    }
    metrics?.placed('no-replica');
    if (last === undefined) return answer(job.ctx, { code: 'no_replica', retryAfter: true });
    answer(job.ctx, { code: 'upstream_error', message: `No replica could take the request (last: ${last.kind}).`, retryAfter: true });
  }

  /** An attempt ended: close its dispatch; before the first byte, try another replica. */
  #ended(job: Job<T>, preq: PlacementRequest, replica: Replica, ticket: Ticket, r: SendResult): void {
    const { metrics, answer } = this.#o;
    this.local.complete(ticket);
    this.#queue.wake();
    notifyComplete(this.policy, preq, replica, outcomeOf(r));
    if (r.kind === 'done') {
      if (r.error !== undefined) metrics?.upstreamError(r.error);
      return;
    }
    metrics?.upstreamError(r.kind);
    if (r.kind === 'timeout') return answer(job.ctx, { code: 'upstream_timeout', retryAfter: false });
    if (r.kind === 'connect') this.local.markSuspect(replica.id, this.#o.clock.now());
    job.last = r;
    job.attempt++;
    if (job.attempt >= this.config.maxAttempts) {
      if (r.kind === 'rejected') return answer(job.ctx, { code: 'fleet_saturated', message: 'Every replica tried refused the request.', retryAfter: true });
      return answer(job.ctx, { code: 'upstream_error', message: `Replicas tried: ${job.attempt}; last failure: ${r.kind}.`, retryAfter: true });
    }
    metrics?.retried();
    (job.exclude ??= new Set()).add(replica.id);
    this.#place(job);
  }

  #sweepEvery(ms: number): () => void {
    let cancel = (): void => {};
    const tick = (): void => {
      const now = this.#o.clock.now();
      this.view.sweep(now);
      this.local.prune(now);
      this.#o.onSweep?.();
      cancel = this.#o.clock.schedule(ms, tick);
    };
    cancel = this.#o.clock.schedule(ms, tick);
    return () => cancel();
  }
}

function outcomeOf(r: SendResult): Outcome {
  switch (r.kind) {
    case 'done':
      return r.status !== undefined ? { kind: r.outcome, status: r.status } : { kind: r.outcome };
    case 'rejected':
      return { kind: 'rejected', status: r.status };
    case 'timeout':
      return { kind: 'error' };
    default:
      return { kind: 'connect' };
  }
}

/** The request headers placement reads: the explicit routing key and the client's session id. */
export interface RequestHeaders {
  readonly key?: string | undefined;
  readonly session?: string | undefined;
}

/** describeRequest with a router config's prefix and work settings: the one description both transports use. */
export function describeFor(
  config: Pick<RouterConfig, 'chunkChars' | 'maxChunks' | 'charsPerToken' | 'defaultMaxTokens'>,
  body: Record<string, unknown>,
  kind: RequestKind,
  resolveModel: (name: string) => { model: string; adapter: string } | undefined,
  headers: RequestHeaders,
): RequestInfo {
  return describeRequest(body, kind, {
    chunkChars: config.chunkChars,
    maxChunks: config.maxChunks,
    charsPerToken: config.charsPerToken,
    defaultMaxTokens: config.defaultMaxTokens,
    resolveModel,
    keyHeader: headers.key,
    sessionHeader: headers.session,
  });
}
