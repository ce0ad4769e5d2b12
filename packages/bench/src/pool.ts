/**
 * Runs DES jobs (one policy on one plan) in worker threads: up to `size` at
 * once, each under a heap limit, so one policy that exhausts its memory (or
 * throws) is reported as failed while every other result is kept.
 *
 * Steps: a job names its workload (scenario, seed, rate, duration, trace, L4)
 * rather than carrying the plan: the worker rebuilds the plan itself (plans
 * are deterministic) and keeps the last one, so jobs on the same workload
 * reuse it. A worker that dies is replaced; its job settles as a failure.
 * Complexity: one plan build per (worker, workload) change. Trade-off: a job
 * cannot share memory with the parent, so results (not requests) cross back.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { GossipModel } from './des/gossip.ts';
import type { L4Mode } from './l4.ts';
import type { PolicyResult } from './report.ts';

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
}

export type JobOutcome = { ok: true; job: DesJob; result: PolicyResult; seconds: number } | { ok: false; job: DesJob; error: string; seconds: number };

/** Heap per worker, MiB: generous for one policy's run, small enough that two fit on a CI machine. */
export const WORKER_HEAP_MB = 4_096;

export class DesPool {
  readonly size: number;
  readonly #heapMb: number;
  readonly #idle: Worker[] = [];
  readonly #queue: Array<{ job: DesJob; resolve: (o: JobOutcome) => void }> = [];
  #workers = 0;

  constructor(size = Math.max(1, Math.min(2, availableParallelism())), heapMb = WORKER_HEAP_MB) {
    this.size = size;
    this.#heapMb = heapMb;
  }

  run(job: DesJob): Promise<JobOutcome> {
    return new Promise((resolve) => {
      this.#queue.push({ job, resolve });
      this.#next();
    });
  }

  #next(): void {
    if (this.#queue.length === 0) return;
    let w = this.#idle.pop();
    if (w === undefined) {
      if (this.#workers >= this.size) return;
      this.#workers++;
      w = new Worker(new URL('./pool-worker.ts', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: this.#heapMb } });
    }
    const { job, resolve } = this.#queue.shift()!;
    const worker = w;
    const started = performance.now();
    const seconds = () => Math.round((performance.now() - started) / 100) / 10;
    // Our own listeners only: removeAllListeners() would also drop the Worker's internal
    // ones, after which its messages are never delivered again.
    const onMessage = (m: { result?: PolicyResult; error?: string }): void =>
      settle(m.result !== undefined ? { ok: true, job, result: m.result, seconds: seconds() } : { ok: false, job, error: m.error ?? 'unknown error', seconds: seconds() }, true);
    const onError = (err: Error & { code?: string }): void =>
      settle({ ok: false, job, error: err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `out of memory (heap limit ${this.#heapMb} MiB)` : err.message, seconds: seconds() }, false);
    const onExit = (code: number): void => settle({ ok: false, job, error: `worker exited with code ${code}`, seconds: seconds() }, false);
    let settled = false;
    const settle = (o: JobOutcome, alive: boolean): void => {
      if (settled) return;
      settled = true;
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
    worker.postMessage(job);
  }

  /** Stops the idle workers; call once every job has settled (until then, workers keep the process alive). */
  async close(): Promise<void> {
    await Promise.all(this.#idle.splice(0).map((w) => w.terminate()));
  }
}
