/**
 * A plan described once, on the main thread, for every DES worker that runs
 * it. Describing a request hashes its whole prompt (the router's chunk chain
 * and the engine's blocks): on the Mooncake trace, 60 KB per request, it was
 * a third of a worker's time, done again by every worker and by the
 * references. Now the main thread describes each request once, in arrival
 * order, and streams batches to the workers while they simulate; a worker
 * waits only when its simulated time catches up with the stream.
 *
 * Steps: PreparedFeed (main) describes in arrival order and hands each
 * batch to every subscribed job, replaying earlier batches to a job that
 * starts later; PreparedInbox (worker) holds what has arrived and tells the
 * run whether every request due by a given plan time is there.
 * Complexity: one description per request per workload, whatever the number
 * of policies, router counts and L4 modes (they share descriptions: the L4
 * assignment does not reorder the plan). Trade-off: a batch is copied to each
 * worker (structured clone), and both threads hold the descriptions.
 */
import type { PlannedRequest } from '../loadgen.ts';
import { describeSettingsKey, prepare, type DescribeSettings, type Prepared } from './request.ts';

/** Requests per batch: small enough that a worker starts early, large enough that messages are few. */
export const BATCH_SIZE = 500;

/** One batch: requests by plan index, in arrival order. */
export interface PreparedBatch {
  /** The workload and describe settings the batch belongs to (keyOf its FeedId). */
  readonly key: string;
  /** Requests in the whole plan. */
  readonly total: number;
  readonly items: ReadonlyArray<readonly [number, Prepared]>;
  /** Every request planned before this time (ms) has been sent, in this batch or an earlier one. */
  readonly through: number;
  readonly done: boolean;
}

/** What a job names of its feed: the worker checks its own plan and settings against it. */
export interface FeedId {
  /** What identifies the plan (scenario, seed, rate, duration, trace). */
  readonly workload: string;
  /** describeSettingsKey of the settings it was described with. */
  readonly settings: string;
}

const keyOf = (id: FeedId): string => `${id.workload}|${id.settings}`;

/** Main side: describes a plan in arrival order and feeds every subscriber. */
export class PreparedFeed {
  readonly id: FeedId;
  readonly #settings: DescribeSettings;
  /** Batches so far, for subscribers still to come (dropped once the last expected one has come). */
  #batches: PreparedBatch[] = [];
  readonly #subscribers = new Set<(b: PreparedBatch) => void>();
  #expected: number;

  /**
   * `workload`: what identifies the plan (scenario, seed, rate, duration,
   * trace), so a worker can check it built the same one. `subscribers`: how
   * many will subscribe, if known (the batches are kept until the last has).
   */
  constructor(workload: string, settings: DescribeSettings, subscribers = Infinity) {
    this.id = { workload, settings: describeSettingsKey(settings) };
    this.#settings = settings;
    this.#expected = subscribers;
  }

  /** `send` gets every batch so far, then each new one, until the returned function is called. */
  subscribe(send: (b: PreparedBatch) => void): () => void {
    for (const b of this.#batches) send(b);
    if (--this.#expected <= 0) this.#batches = [];
    this.#subscribers.add(send);
    return () => this.#subscribers.delete(send);
  }

  /** Describes every request of `plan` (cached per request by `prepare`, so the references reuse them), BATCH_SIZE at a time. */
  produce(plan: readonly PlannedRequest[], adapters: ReadonlySet<string>): void {
    const settings = this.#settings;
    const order = plan.map((_, i) => i).sort((a, b) => plan[a]!.at - plan[b]!.at || a - b);
    for (let start = 0; start < order.length || start === 0; start += BATCH_SIZE) {
      const end = Math.min(order.length, start + BATCH_SIZE);
      const items = order.slice(start, end).map((i) => [i, prepare(plan[i]!, adapters, settings)] as const);
      const done = end === order.length;
      // Requests at the batch's last time may continue in the next batch: only earlier ones are complete.
      const through = done ? Infinity : plan[order[end - 1]!]!.at;
      const b: PreparedBatch = { key: keyOf(this.id), total: plan.length, items, through, done };
      if (this.#expected > 0) this.#batches.push(b);
      for (const send of this.#subscribers) send(b);
      if (done) break;
    }
  }
}

/** Worker side: the descriptions received so far for one run. */
export class PreparedInbox {
  /** describeSettingsKey of the descriptions: a run with other settings describes for itself. */
  readonly settings: string;
  readonly #key: string;
  readonly #items: Array<Prepared | undefined>;
  #through = -Infinity;
  #error: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(id: FeedId, plan: readonly PlannedRequest[]) {
    this.settings = id.settings;
    this.#key = keyOf(id);
    this.#items = new Array<Prepared | undefined>(plan.length);
  }

  /** Takes a batch. One that describes another plan (the worker built a different one) fails the run at its next wait. */
  add(b: PreparedBatch): void {
    if (b.key !== this.#key || b.total !== this.#items.length) {
      this.#error ??= new Error(
        `prepared requests for another plan (${b.key}, ${b.total} requests; this run: ${this.#key}, ${this.#items.length})`,
      );
      this.#wake?.();
      return;
    }
    for (const [i, p] of b.items) this.#items[i] = p;
    this.#through = b.through;
    this.#wake?.();
  }

  /** Request i's description, once received (then released: a run reads each once). */
  take(i: number): Prepared | undefined {
    const p = this.#items[i];
    this.#items[i] = undefined;
    return p;
  }

  /** Has every request planned to arrive by `at` (plan ms) been received? */
  ready(at: number): boolean {
    return this.#error === undefined && at < this.#through;
  }

  /** Resolves once `ready(at)`; rejects if a batch for another plan came. */
  async until(at: number): Promise<void> {
    for (;;) {
      if (this.#error !== undefined) throw this.#error;
      if (this.ready(at)) break;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    this.#wake = undefined;
  }
}
