/**
 * Runs DES jobs (one policy on one plan) in worker threads: up to `size` at
 * once, each under a heap limit, so one policy that exhausts its memory (or
 * throws) is reported as failed while every other result is kept.
 *
 * Steps: a job names its workload (scenario, seed, rate, duration, trace, L4)
 * rather than carrying the plan: the worker rebuilds the plan itself (plans
 * are deterministic) and keeps the last one, so jobs on the same workload
 * reuse it. A worker that dies is replaced; its job settles as a failure.
 * Jobs run through `runShared` take their requests' descriptions from the
 * parent, which describes each workload once (des/prepared-feed.ts).
 * Complexity: one plan build per (worker, workload) change. Trade-off: a job
 * cannot share memory with the parent, so descriptions are copied to each
 * worker and results (not requests) cross back.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { GossipModel } from './des/gossip.ts';
import type { DesGroups } from './des/run.ts';
import { routerConfig } from '@warmpath/router';
import { type FeedId, type PreparedBatch, PreparedFeed } from './des/prepared-feed.ts';
import type { L4Mode } from './l4.ts';
import type { PlannedRequest } from './loadgen.ts';
import type { PolicyResult } from './report.ts';
import { DEFAULT_MODEL, SCENARIOS } from './scenarios.ts';
import type { KvSharing } from './tiers.ts';

export interface DesJob {
  scenario: string;
  seed: number;
  /** Arrival rate and duration (0 = the scenario's). */
  rate: number;
  duration: number;
  trace?: string | undefined;
  replicas: number;
  routers: number;
  l4: L4Mode;
  policy: string;
  routerOverrides?: Record<string, string> | undefined;
  agentOverrides?: Record<string, string> | undefined;
  /** DES gossip: delay distribution and loss (des/gossip.ts); default DEFAULT_GOSSIP. */
  gossip?: GossipModel | undefined;
  /** Host-memory KV tier of each replica, × its GPU KV (0 or absent = off). */
  cpuKvRatio?: number | undefined;
  /** A disaggregated fleet P:D (des/pd.ts); absent = aggregated. */
  pd?: string | undefined;
  /** DES model groups and the groups each router serves (des/run.ts DesGroups); absent: one group. */
  groups?: DesGroups | undefined;
  /** KV sharing between replicas (absent = off). */
  kvSharing?: KvSharing | undefined;
  /** Every router's tenants file, its text (absent: one default tenant). */
  tenants?: string | undefined;
}

/** What identifies a job's plan, whatever its policy, routers and L4 (they share descriptions: prepared-feed.ts). */
export function workloadKey(j: Pick<DesJob, 'scenario' | 'seed' | 'rate' | 'duration' | 'trace'>): string {
  return JSON.stringify([j.scenario, j.seed, j.rate, j.duration, j.trace ?? null]);
}

/** The plan a job's worker builds, before the L4 assignment (which does not reorder it), and the duration it spans by default, s. */
export function planFor(j: Pick<DesJob, 'scenario' | 'seed' | 'rate' | 'duration' | 'trace'>): {
  plan: PlannedRequest[];
  duration: number;
} {
  const scenario = SCENARIOS[j.scenario];
  if (scenario === undefined) throw new Error(`unknown scenario "${j.scenario}"`);
  const duration = j.duration > 0 ? j.duration : scenario.defaults.duration;
  const rate = j.rate > 0 ? j.rate : scenario.defaults.rate;
  return { plan: scenario.build({ seed: j.seed, rate, duration, model: DEFAULT_MODEL, trace: j.trace }), duration };
}

/** Parent → worker: a job (with the feed it will be streamed, if any), or a batch of a job's feed. */
export type ToWorker = { seq: number; job: DesJob; feed?: FeedId } | { seq: number; batch: PreparedBatch };

export type JobOutcome =
  | { ok: true; job: DesJob; result: PolicyResult; seconds: number }
  | { ok: false; job: DesJob; error: string; seconds: number };

/** Heap per worker, MiB: generous for one policy's run, small enough that two fit on a CI machine. */
export const WORKER_HEAP_MB = 4_096;

export class DesPool {
  readonly size: number;
  readonly #heapMb: number;
  readonly #idle: Worker[] = [];
  readonly #queue: Array<{ job: DesJob; feed: PreparedFeed | undefined; resolve: (o: JobOutcome) => void }> = [];
  #workers = 0;
  #seq = 0;

  constructor(size = Math.max(1, Math.min(2, availableParallelism())), heapMb = WORKER_HEAP_MB) {
    this.size = size;
    this.#heapMb = heapMb;
  }

  /** Runs `job`; with `feed` (describing the job's workload), the worker takes its descriptions from it. */
  run(job: DesJob, feed?: PreparedFeed): Promise<JobOutcome> {
    if (feed !== undefined && feed.id.workload !== workloadKey(job))
      throw new Error(`feed for ${feed.id.workload} given to a job on ${workloadKey(job)}`);
    return new Promise((resolve) => {
      this.#queue.push({ job, feed, resolve });
      this.#next();
    });
  }

  #next(): void {
    if (this.#queue.length === 0) return;
    let w = this.#idle.pop();
    if (w === undefined) {
      if (this.#workers >= this.size) return;
      this.#workers++;
      w = new Worker(new URL('./pool-worker.ts', import.meta.url), {
        resourceLimits: { maxOldGenerationSizeMb: this.#heapMb },
      });
    }
    const { job, feed, resolve } = this.#queue.shift()!;
    const worker = w;
    const seq = ++this.#seq;
    const post = (m: ToWorker): void => worker.postMessage(m);
    let unsubscribe = (): void => {};
    const started = performance.now();
    const seconds = () => Math.round((performance.now() - started) / 100) / 10;
    // Our own listeners only: removeAllListeners() would also drop the Worker's internal
    // ones, after which its messages are never delivered again.
    const onMessage = (m: { result?: PolicyResult; error?: string }): void =>
      settle(
        m.result !== undefined
          ? { ok: true, job, result: m.result, seconds: seconds() }
          : { ok: false, job, error: m.error ?? 'unknown error', seconds: seconds() },
        true,
      );
    const onError = (err: Error & { code?: string }): void =>
      settle(
        {
          ok: false,
          job,
          error:
            err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `out of memory (heap limit ${this.#heapMb} MiB)` : err.message,
          seconds: seconds(),
        },
        false,
      );
    const onExit = (code: number): void =>
      settle({ ok: false, job, error: `worker exited with code ${code}`, seconds: seconds() }, false);
    let settled = false;
    const settle = (o: JobOutcome, alive: boolean): void => {
      if (settled) return;
      settled = true;
      unsubscribe();
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      if (alive) this.#idle.push(worker);
      else {
        this.#workers--;
        void worker.terminate();
      }
      resolve(o);
      this.#next();
    };
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    post({ seq, job, ...(feed !== undefined ? { feed: feed.id } : {}) });
    if (feed !== undefined) unsubscribe = feed.subscribe((batch) => post({ seq, batch }));
  }

  /**
   * Runs jobs on one workload (same scenario, seed, rate, duration, trace;
   * any policies, routers, L4), describing its plan once on this thread
   * (prepared-feed.ts) after submitting them, so that the workers already
   * running some take the descriptions as they come. `plan`: the workload's
   * plan, if the caller has it. Returns the outcomes and the plan (whose
   * descriptions `prepare` now has cached, for the references).
   */
  runShared(
    jobs: readonly DesJob[],
    plan?: readonly PlannedRequest[],
  ): { outcomes: Array<Promise<JobOutcome>>; plan: readonly PlannedRequest[] } {
    if (jobs.length === 0) return { outcomes: [], plan: plan ?? [] };
    const settings = routerConfig();
    const feed = new PreparedFeed(workloadKey(jobs[0]!), settings, jobs.length);
    const outcomes = jobs.map((j) => this.run(j, feed));
    const p = plan ?? planFor(jobs[0]!).plan;
    feed.produce(p, new Set(SCENARIOS[jobs[0]!.scenario]!.fleet.adapters ?? []));
    return { outcomes, plan: p };
  }

  /** Stops the idle workers; call once every job has settled (until then, workers keep the process alive). */
  async close(): Promise<void> {
    await Promise.all(this.#idle.splice(0).map((w) => w.terminate()));
  }
}
