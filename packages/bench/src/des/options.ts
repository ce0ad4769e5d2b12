/**
 * What one discrete-event run takes (run.ts): the scenario and plan, the
 * policy, the fleet's shape and its options, and the hooks tests observe.
 */
import type { Sequence, StepResult } from '@warmpath/sim';
import type { PlannedRequest, RequestResult } from '../loadgen.ts';
import type { Scenario } from '../scenarios.ts';
import type { GossipModel } from './gossip.ts';
import type { PreparedInbox } from './prepared-feed.ts';
import type { DesTenantsOptions } from './tenants.ts';

export interface DesOptions {
  scenario: Scenario;
  plan: PlannedRequest[];
  policy: string;
  replicas: number;
  routers: number;
  durationS: number;
  onProgress?: (done: number, total: number) => void;
  /** Every finished request (analysis, tests). */
  onResult?: (r: RequestResult) => void;
  /** Model groups (docs/DEPLOY.md, "Splitting routers by model group"); default one group, every router serving it. */
  groups?: DesGroups;
  /** Every request an engine accepted, as the engine's sequence, with the request's tag (analysis: admission and first-token times). */
  onSubmitted?: (seq: Sequence, tag: string | undefined) => void;
  /** Every engine step (analysis: its tokens against the budget). */
  onStep?: (replica: string, res: StepResult) => void;
  /** Every refusal an agent answered (tests): which router sent it, to whom, and the report time of the state it placed on. */
  onRefused?: (r: DesRefusal) => void;
  /** One-way network hop (client↔router, router↔agent), ms. */
  hopMs?: number;
  /** How gossip delivers each state message to each router: delay distribution and loss (gossip.ts); default DEFAULT_GOSSIP. */
  gossip?: GossipModel;
  /** Router config overrides (e.g. loadFactor). */
  routerOverrides?: Record<string, unknown>;
  /** Agent config overrides (e.g. publishChangeTokens), for every replica. */
  agentOverrides?: Record<string, unknown>;
  /** Seed of the run's random stream (gossip jitter, scrape phases, randomized policies); default 1. */
  seed?: number;
  /** Descriptions made on the main thread (prepared-feed.ts); without, each request is described here on arrival. */
  prepared?: PreparedInbox;
  /** A tenants file in every router, its limits shared over gossip or not (tenants.ts); default none. */
  tenants?: DesTenantsOptions;
  /** A disaggregated fleet `P:D` (des/pd.ts): P prefill and D decode replicas instead of `replicas`; default aggregated. */
  pd?: string;
}

/**
 * Replicas split into `count` model groups, replica i in `g<i mod count>`
 * (its agent's --group), and the groups each router serves (router i:
 * `routers[i]`, its --models; absent: every group). A router receives only
 * its groups' states, as its gossip topics would carry (gossip.ts has no
 * mesh: each state goes straight to each router holding it).
 */
export interface DesGroups {
  readonly count: number;
  readonly routers?: ReadonlyArray<readonly string[]>;
}

/** One refused attempt, as the router that sent it saw the replica when it placed it. */
export interface DesRefusal {
  readonly router: number;
  readonly replica: string;
  /** The sender's view of the replica when it placed the attempt: its last report's time. */
  readonly reportAt: number;
  /** When the sender placed the attempt, and when, before that, it last heard one of its attempts there run to its end (-Infinity: never). */
  readonly placedAt: number;
  readonly endedBefore: number;
  /** When the agent refused it. */
  readonly at: number;
  readonly reason: string;
  readonly queued: number | undefined;
}
