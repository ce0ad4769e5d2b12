/**
 * The router core: everything a router does between "a described request
 * arrived" and "its answer ended", with no transport. The HTTP server and the
 * discrete-event simulator both drive this one object; they differ only in
 * the `send` (undici streaming vs. the event queue and agent core) and clock.
 *
 * Steps per request:
 *  1. place through the policy (placement/place.ts) on a read of the fleet
 *     view and this router's local state; count its route.
 *  2. no replica: `saturated`, or no other replica after an agent refused →
 *     wait in the bounded queue (woken by a fleet state update, one of our
 *     own completions, or the poll), placing again with the tried set cleared,
 *     until queueTimeoutMs → fleet_saturated; `no-replica` → no_replica (or
 *     upstream_error after failed attempts).
 *  3. a replica: record the dispatch (local state, policy), name the
 *     attempt's kind (`first`, `retry` after a failed attempt, `queued` after
 *     waiting) beside the policy's branch (placement/route.ts) and hand the
 *     attempt to `send`.
 *  4. the attempt ended: close the dispatch, wake the queue, and tell the
 *     outlier detector (outliers.ts) whether the replica failed or answered.
 *     A refusal, a connect failure, a reset or a 5xx before the first byte
 *     excludes that replica and places again, up to maxAttempts — a failure
 *     (not a refusal) only within the retry budget (retries in flight at most
 *     max(retryBudgetMin, retryBudgetPercent of the active requests; over it
 *     the request waits in the queue for a slot until queueTimeoutMs) and
 *     never to a third replica after engines crashed on CRASH_LIMIT; after
 *     the first byte the answer is final.
 * Complexity: one placement per attempt and per wake of a queued request.
 * Trade-off: callbacks, not a promise per step, so the simulator runs this
 * code synchronously in virtual time and stays deterministic.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import type { EngineUsage, ReplicaState, RequestInfo, RequestKind } from '@warmpath/shared/wire';
import type { RouterConfig } from '../config.ts';
import type { Origin } from '../fleet/trust.ts';
import { FleetView, type Replica } from '../fleet/view.ts';
import { affinityKey } from '../placement/eligible.ts';
import { LocalState, type Ticket } from './local.ts';
import { notifyComplete, notifyDispatch } from '../placement/place.ts';
import { dispatchPlaced, openPrefillLeg, placePairTimed } from '../placement/pair.ts';
import { createPolicy } from '../placement/registry.ts';
import { attemptKind, routeOf } from '../placement/route.ts';
import { NO_REPLICA, SATURATED, type PlacementRequest, type Policy } from '../placement/types.ts';
import { Outliers } from './outliers.ts';
import { predicted, Receipts } from './receipts.ts';
import { failureOf, failureText, outcomeOf } from './results.ts';
import { WaitQueue, type Waiting } from './queue.ts';
import type { RetryDenial, RouteError, RouterCoreOptions, SendResult } from './types.ts';
import { describeFor, type RequestHeaders } from './describe.ts';
import { newJob, type Job, type RouteJob } from './job.ts';
export type { RouteJob } from './job.ts';
import { FairQueue } from '../tenants/fair.ts';
import { admitJob, classOf, endJob, overSlo, placeOnSide } from '../tenants/admit.ts';
import type { Tenancy, Who } from '../tenants/tenancy.ts';

/** Every placement, for tracing: `{ router, request, placement }`. */
export const placementChannel = diagnostics_channel.channel('warmpath:router:placement');

/** Sweep period, ms: staleness transitions, forgetting, overlay and ejection expiry. */
export const SWEEP_MS = 250;
/** A queued request places again at least this often, ms: load decays on replicas even when no message arrives. */
export const QUEUE_POLL_MS = 50;
/** A request on which engines crashed (a reset or a 5xx) on this many replicas is not sent to another: it is likely the cause. */
export const CRASH_LIMIT = 2;

export class RouterCore<T> {
  readonly id: string;
  readonly config: RouterConfig;
  readonly view: FleetView;
  readonly local: LocalState;
  readonly policy: Policy;
  readonly outliers: Outliers;
  /** Predicted against reported cached tokens, per replica (receipts.ts). */
  readonly receipts = new Receipts();
  readonly #o: RouterCoreOptions<T>;
  readonly #queue: Waiting<Job<T>>;
  readonly #tenancy: Tenancy | undefined;
  readonly #resolveModel: FleetView['resolveModel'];
  readonly #stopSweep: () => void;
  /** Requests routed and not yet ended, and those of them holding a retry budget slot. */
  #active = 0;
  #retrying = 0;

  constructor(o: RouterCoreOptions<T>) {
    const c = o.config;
    this.#o = o;
    this.id = o.id;
    this.config = c;
    this.view = new FleetView({
      fleet: c.fleet,
      chunkChars: c.chunkChars,
      stateTtlMs: c.stateTtlMs,
      forgetAfterMs: c.forgetAfterMs,
      agentPeers: c.agentPeers,
      agentNetworks: c.agentNetworks,
      models: c.models,
      fetchSnapshot: o.fetchSnapshot,
      now: () => o.clock.now(),
      onEvent: o.onViewEvent ?? (() => {}),
    });
    this.local = new LocalState(c);
    this.outliers = new Outliers(c, this.local);
    this.policy = o.policy ?? createPolicy(c.policy, c, o.random);
    const onWake = (job: Job<T>): void => {
      if (job.slotDeadline > 0) return this.#retryWithSlot(job);
      job.exclude?.clear();
      this.#place(job);
    };
    this.#tenancy = o.tenancy;
    const q = { max: c.queueMax, pollMs: QUEUE_POLL_MS, clock: o.clock, classOf, onWake, onShed: this.#shed };
    this.#queue = o.tenancy === undefined ? new WaitQueue(q.max, q.pollMs, q.clock, onWake) : new FairQueue(q);
    this.#resolveModel = (name) => this.view.resolveModel(name);
    this.view.onChange(() => this.#queue.wake());
    this.#stopSweep = this.#sweepEvery(SWEEP_MS);
  }

  /** Requests waiting in the router queue. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Requests routed and not yet ended (queued or in flight). */
  get active(): number {
    return this.#active;
  }

  /** Active requests on a retry after a failure (the retry budget's use). */
  get retrying(): number {
    return this.#retrying;
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
    if (origin?.vouchedBy !== undefined) this.local.heardRouter(origin.vouchedBy, this.#o.clock.now());
  }

  /** A decoded state message (the simulator skips the codec); `vouchedBy`: the router whose batch carried it. */
  receive(state: ReplicaState, vouchedBy?: string): void {
    this.view.apply(state);
    if (vouchedBy !== undefined) this.local.heardRouter(vouchedBy, this.#o.clock.now());
  }

  /** Route one described request (`who`: its tenant and band, with a tenants file); the answer goes through `send` or `answer`. */
  route(ctx: T, info: RequestInfo, body: Readonly<Record<string, unknown>> | undefined, who?: Who): RouteJob<T> {
    const job = newJob(ctx, info, body, affinityKey(info, this.config.keyDepthChunks), who);
    const tenancy = this.#tenancy;
    const refused = tenancy && admitJob(tenancy, job, this.#o.clock.now(), this.#o.metrics?.limited);
    if (refused !== undefined) {
      job.active = false;
      this.#o.answer(ctx, refused);
      return job;
    }
    this.#active++;
    this.#place(job);
    return job;
  }

  /** The client left: leave the queue, place no more (an attempt in flight is the transport's to abort). */
  cancel(handle: RouteJob<T>): void {
    const job = handle as Job<T>;
    job.cancelled = true;
    if (this.#queue.remove(job)) this.#close(job);
  }

  stop(): void {
    this.#stopSweep();
  }

  #place(job: Job<T>): void {
    if (job.cancelled) return this.#close(job);
    const o = this.#o;
    const now = o.clock.now();
    const whole: PlacementRequest = {
      info: job.info,
      endpoint: job.info.kind,
      key: job.key,
      body: job.body,
      exclude: job.exclude,
      ...(job.missed !== undefined ? { missed: job.missed } : {}),
      ...(job.last?.kind === 'rejected' && job.last.transfer !== undefined ? { transfer: job.last.transfer } : {}),
      now,
    };
    const seconds = (t: number): void => o.metrics?.placementSeconds?.(t);
    const place = (r: PlacementRequest) => placePairTimed(this.policy, r, this.view, this.local, this.config, seconds);
    const { preq, placement, pd } = placeOnSide(this.#tenancy, job, whole, now, place, o.metrics);
    if (placementChannel.hasSubscribers) placementChannel.publish({ router: this.id, request: preq, placement });
    const replica = placement.replica;
    if (replica === undefined) return this.#noRoom(job, placement.branch, now);
    if (this.#tenancy && overSlo(this.#tenancy, job, placement, pd?.prefill, this.local, this.config, o.metrics, now))
      return this.#noRoom(job, 'saturated', now);
    const route = routeOf(placement, attemptKind(job), pd);
    o.metrics?.placed(route);
    const expected = predicted(this.local, replica, this.config, job.info.promptTokens);
    const ticket = dispatchPlaced(this.local, placement, job.info, now);
    const leg = openPrefillLeg(this.policy, this.local, o.clock, preq, pd, replica);
    if (leg === undefined) notifyDispatch(this.policy, preq, replica, this.local);
    // The last attempt carries no queue limit: an agent refusing it would lose the request.
    const limit = job.attempt < this.config.maxAttempts - 1 ? placement.queueLimit : undefined;
    o.send(
      {
        ctx: job.ctx,
        info: job.info,
        replica,
        branch: placement.branch,
        route,
        attempt: job.attempt,
        expectedCached: expected,
        ...(limit !== undefined ? { queueLimit: limit } : {}),
        ...(job.who !== undefined ? { band: job.who.band } : {}),
        ...(job.rateHeaders !== undefined ? { headers: job.rateHeaders } : {}),
        ...(leg !== undefined ? { prefill: leg.replica, prefillDone: leg.done } : {}),
        ...(pd?.transfer !== undefined ? { transfer: pd.transfer } : {}),
      },
      (r) => {
        leg?.done(false);
        this.#ended(job, preq, replica, ticket, limit, r, leg?.replica, expected);
      },
    );
  }

  /** No replica now: wait for room, or fail. */
  #noRoom(job: Job<T>, branch: 'saturated' | 'no-replica', now: number): void {
    const metrics = this.#o.metrics;
    const last = job.last;
    if (branch === 'saturated' || last?.kind === 'rejected') {
      if (job.deadline === 0) {
        metrics?.placed(routeOf(SATURATED, attemptKind(job)));
        job.deadline = now + this.config.queueTimeoutMs;
      }
      const left = job.deadline - now;
      if (left > 0 && this.#queue.add(job, left)) return;
      return this.#answer(job, { code: 'fleet_saturated', retryAfter: true });
    }
    metrics?.placed(routeOf(NO_REPLICA, attemptKind(job)));
    if (last === undefined) return this.#answer(job, { code: 'no_replica', retryAfter: true });
    this.#answer(job, {
      code: 'upstream_error',
      message: `No replica could take the request (last: ${failureText(last)}).`,
      retryAfter: true,
    });
  }

  /** An attempt ended (`limit`: its queue limit; `expected`: its predicted cached tokens): close its dispatch; before the first byte, try another replica. */
  #ended(
    job: Job<T>,
    preq: PlacementRequest,
    replica: Replica,
    ticket: Ticket,
    limit: number | undefined,
    r: SendResult,
    prefill: Replica | undefined,
    expected: number,
  ): void {
    const [metrics, now] = [this.#o.metrics, this.#o.clock.now()];
    this.local.complete(ticket, now);
    this.local.refusals.heard(replica, r, now, this.view.stateTtlMs);
    this.#queue.wake();
    notifyComplete(this.policy, preq, replica, outcomeOf(r));
    // A transfer's prefill leg that failed is that replica's failure: judged, excluded and retried as one.
    const at =
      prefill !== undefined && r.kind !== 'done' && r.kind !== 'timeout' && r.leg === 'prefill' ? prefill : replica;
    this.#judge(job, at, r);
    if (prefill !== undefined && at !== prefill) this.outliers.success(prefill.id);
    if (r.kind === 'done') {
      this.receipts.note(replica.id, expected, job.info.promptTokens, r.usage);
      if (r.error !== undefined) metrics?.upstreamError(r.error);
      return this.#close(job, r.usage);
    }
    metrics?.upstreamError(r.kind);
    if (r.kind === 'timeout') return this.#answer(job, { code: 'upstream_timeout', retryAfter: false });
    job.last = r;
    // A decode leg refused after its prefill: the decode pool is full, the request is not failing. It spends no
    // attempt and waits for room as a saturated one, until queueTimeoutMs from its first wait (pair.ts step 5).
    if (r.kind === 'rejected' && r.transfer !== undefined) return this.#noRoom(job, 'saturated', now);
    job.attempt++;
    if (r.kind === 'reset' || r.kind === 'failed') job.crashes++;
    if (job.attempt >= this.config.maxAttempts) {
      if (r.kind === 'rejected')
        return this.#answer(job, {
          code: 'fleet_saturated',
          message: 'Every replica tried refused the request.',
          retryAfter: true,
        });
      return this.#answer(job, {
        code: 'upstream_error',
        message: `Replicas tried: ${job.attempt}; last failure: ${failureText(r)}.`,
        retryAfter: true,
      });
    }
    (job.exclude ??= new Set()).add(at.id);
    if (r.kind === 'rejected' && r.queued !== undefined) {
      this.local.noteQueued(at, r.queued);
      if (limit !== undefined) {
        job.missed = Math.max(0, r.queued - limit);
        metrics?.missed?.(job.missed);
      }
    }
    if (r.kind === 'rejected') {
      metrics?.retried();
      return this.#place(job);
    }
    if (job.crashes >= CRASH_LIMIT) return this.#deny(job, 'crashes');
    job.slotDeadline = this.#o.clock.now() + this.config.queueTimeoutMs;
    this.#retryWithSlot(job);
  }

  /**
   * Retry a failed request once the retry budget has a slot for it. Over
   * budget it waits in the router queue (woken by completions, which free
   * slots) until queueTimeoutMs: a burst of failures waits a moment instead
   * of failing, while retries in flight stay within the budget.
   */
  #retryWithSlot(job: Job<T>): void {
    if (job.cancelled) return this.#close(job);
    if (this.#retrySlot(job)) {
      job.slotDeadline = 0;
      this.#o.metrics?.retried();
      return this.#place(job);
    }
    const left = job.slotDeadline - this.#o.clock.now();
    if (left > 0 && this.#queue.add(job, left)) return;
    this.#deny(job, 'budget');
  }

  #deny(job: Job<T>, why: RetryDenial): void {
    this.#o.metrics?.retryDenied?.(why);
    const reason = why === 'crashes' ? `it failed on ${job.crashes} replicas` : 'the retry budget stayed spent';
    const message = `Not retried: ${reason}; last failure: ${job.last === undefined ? 'none' : failureText(job.last)}.`;
    this.#answer(job, { code: 'upstream_error', message, retryAfter: true });
  }

  /** Tell the outlier detector how the replica did; the agent's own refusals and client aborts say nothing about it. */
  #judge(job: Job<T>, replica: Replica, r: SendResult): void {
    const failure = failureOf(r);
    if (failure === undefined) {
      if (r.kind === 'done' && r.outcome !== 'aborted' && r.error === undefined) this.outliers.success(replica.id);
      return;
    }
    const group = this.view.group(job.info.model, job.info.adapter)?.members ?? [];
    const ms = this.outliers.failure(replica, failure, group, this.#o.clock.now());
    if (ms > 0) this.#o.metrics?.ejected?.(replica.id, ms);
  }

  /** Does the retry budget let this failed request try again? Takes a slot, kept until the request ends. */
  #retrySlot(job: Job<T>): boolean {
    if (job.retrying) return true;
    const c = this.config;
    if (this.#retrying >= Math.max(c.retryBudgetMin, (this.#active * c.retryBudgetPercent) / 100)) return false;
    job.retrying = true;
    this.#retrying++;
    return true;
  }

  #answer(job: Job<T>, e: RouteError): void {
    this.#close(job);
    this.#o.answer(job.ctx, e);
  }

  /** The request ended (answered, finished or cancelled): it leaves the active count and frees its tenant's claim, once. */
  #close(job: Job<T>, usage?: EngineUsage): void {
    if (!job.active) return;
    job.active = false;
    this.#active--;
    if (job.retrying) this.#retrying--;
    if (this.#tenancy !== undefined) endJob(this.#tenancy, job, usage, this.#o.clock.now());
  }

  /** The full fair queue pushed a waiter out for a higher band's request. */
  readonly #shed = (job: Job<T>): void => {
    if (job.who !== undefined) this.#o.metrics?.shed?.(job.who.band);
    const message = 'Shed for a request of a higher priority band.';
    this.#answer(job, { code: 'fleet_saturated', message, retryAfter: true });
  };

  #sweepEvery(ms: number): () => void {
    let cancel = (): void => {};
    const tick = (): void => {
      const now = this.#o.clock.now();
      this.view.sweep(now);
      this.local.prune(now);
      this.outliers.retain(this.view.replicas);
      this.receipts.retain(this.view.replicas);
      this.#o.onSweep?.();
      cancel = this.#o.clock.schedule(ms, tick);
    };
    cancel = this.#o.clock.schedule(ms, tick);
    return () => cancel();
  }
}
