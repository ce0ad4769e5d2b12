/**
 * The DES pool's worker: builds (or reuses) the job's plan, runs one policy,
 * posts the result or the error. A job with a feed takes its requests'
 * descriptions from the batches that follow it (prepared-feed.ts).
 */
import { parentPort } from 'node:worker_threads';
import { runDes } from './des/run.ts';
import { assignRouters } from './l4.ts';
import { lastArrivalMs, type PlannedRequest } from './loadgen.ts';
import { type FeedId, PreparedInbox } from './des/prepared-feed.ts';
import { planFor, type DesJob, type ToWorker } from './pool.ts';
import { SCENARIOS } from './scenarios.ts';

let last: { key: string; plan: PlannedRequest[]; spanS: number } | undefined;

function planOf(job: DesJob): { plan: PlannedRequest[]; spanS: number } {
  const key = JSON.stringify([job.scenario, job.seed, job.rate, job.duration, job.trace, job.routers, job.l4]);
  if (last?.key === key) return last;
  const { plan: built, duration } = planFor(job);
  const plan = assignRouters(built, job.routers, job.l4, job.seed);
  last = { key, plan, spanS: Math.max(duration, lastArrivalMs(plan) / 1000) };
  return last;
}

/** The running job's number and inbox: a batch for an earlier job (one that failed before reading it) is dropped. */
let current: { seq: number; inbox: PreparedInbox | undefined } | undefined;

parentPort!.on('message', (m: ToWorker) => {
  if ('batch' in m) {
    if (m.seq === current?.seq) current.inbox?.add(m.batch);
    return;
  }
  current = { seq: m.seq, inbox: undefined };
  void runJob(m.job, current, m.feed);
});

async function runJob(
  job: DesJob,
  slot: { inbox: PreparedInbox | undefined },
  feed: FeedId | undefined,
): Promise<void> {
  try {
    const named = SCENARIOS[job.scenario];
    if (named === undefined) throw new Error(`unknown scenario "${job.scenario}"`);
    const ratio = job.cpuKvRatio ?? 0;
    const tiers = {
      ...(ratio > 0 ? { cpuKvRatio: ratio } : {}),
      ...(job.kvSharing ? { kvSharing: job.kvSharing } : {}),
    };
    const scenario = Object.keys(tiers).length > 0 ? { ...named, fleet: { ...named.fleet, ...tiers } } : named;
    const { plan, spanS } = planOf(job);
    // Made before the first await, so that no batch arrives before it.
    if (feed !== undefined) slot.inbox = new PreparedInbox(feed, plan);
    const result = await runDes({
      scenario,
      plan,
      policy: job.policy,
      replicas: job.replicas > 0 ? job.replicas : scenario.fleet.replicas,
      routers: job.routers,
      durationS: spanS,
      seed: job.seed,
      ...(job.routerOverrides !== undefined ? { routerOverrides: job.routerOverrides } : {}),
      ...(job.agentOverrides !== undefined ? { agentOverrides: job.agentOverrides } : {}),
      ...(job.gossip !== undefined ? { gossip: job.gossip } : {}),
      ...(job.pd !== undefined ? { pd: job.pd } : {}),
      ...(job.groups !== undefined ? { groups: job.groups } : {}),
      ...(job.tenants !== undefined ? { tenants: { file: job.tenants, shared: true } } : {}),
      ...(slot.inbox !== undefined ? { prepared: slot.inbox } : {}),
    });
    parentPort!.postMessage({ result });
  } catch (err) {
    parentPort!.postMessage({ error: (err as Error)?.stack ?? String(err) });
  }
}
