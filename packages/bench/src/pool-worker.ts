/** The DES pool's worker: builds (or reuses) the job's plan, runs one policy, posts the result or the error. */
import { parentPort } from 'node:worker_threads';
import { runDes } from './des/run.ts';
import { assignRouters } from './l4.ts';
import { lastArrivalMs, type PlannedRequest } from './loadgen.ts';
import type { DesJob } from './pool.ts';
import { DEFAULT_MODEL, SCENARIOS } from './scenarios.ts';

let last: { key: string; plan: PlannedRequest[]; spanS: number } | undefined;

function planOf(job: DesJob): { plan: PlannedRequest[]; spanS: number } {
  const key = JSON.stringify([job.scenario, job.seed, job.rate, job.duration, job.trace, job.routers, job.l4]);
  if (last?.key === key) return last;
  const scenario = SCENARIOS[job.scenario]!;
  const duration = job.duration > 0 ? job.duration : scenario.defaults.duration;
  const rate = job.rate > 0 ? job.rate : scenario.defaults.rate;
  const plan = assignRouters(scenario.build({ seed: job.seed, rate, duration, model: DEFAULT_MODEL, trace: job.trace }), job.routers, job.l4, job.seed);
  last = { key, plan, spanS: Math.max(duration, lastArrivalMs(plan) / 1000) };
  return last;
}

parentPort!.on('message', async (job: DesJob) => {
  try {
    const scenario = SCENARIOS[job.scenario];
    if (scenario === undefined) throw new Error(`unknown scenario "${job.scenario}"`);
    const { plan, spanS } = planOf(job);
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
    });
    parentPort!.postMessage({ result });
  } catch (err) {
    parentPort!.postMessage({ error: (err as Error)?.stack ?? String(err) });
  }
});
