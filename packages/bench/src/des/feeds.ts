/**
 * How each benchmarked policy is deployed in the simulator: which router
 * policy runs, how its routers learn the engines' state (the feed), and
 * whether the agents' admission control stands between them and the engines.
 * One table (FEEDS), so a policy's signals are a property, not branches
 * through the run.
 *
 * Feeds:
 *  - gossip: Warmpath's own path — the agent scrapes its engine every 250 ms,
 *    publishes on a change placement reads and at its floor (the agent's
 *    `publishIntervalMs`) when quiet, and each router
 *    receives each message after the gossip delay.
 *  - poll: the router reads every engine itself every `everyMs` (llm-d's
 *    endpoint picker scrapes every 50 ms); a reading reaches the router
 *    `delayMs` later.
 *  - events: every engine change (an admission, a step's start and end)
 *    reaches the routers `delayMs` later (the engines' KV events, as
 *    llm-d-precise and Dynamo consume them); `delayMs` 0 is the engines' true
 *    state at every instant (warmpath-instant).
 * A poll or events reading is a scrape and a state message built at the same
 * instant, so a router never drops work sent between a scrape and its report.
 *
 * Names: `<peer>@agents` runs a peer's policy behind Warmpath's agents
 * (gossip feed, admission on) to isolate the policy from its deployment.
 * Complexity: O(1) per lookup.
 * feedHooks wires a feed between the replicas and the routers: a router
 * holds only the states of its model groups (run.ts DesGroups).
 */
import type { RouterCore } from '@warmpath/router';
import type { ReplicaState } from '@warmpath/shared/wire';
import { deliverySampler, firstHops, type GossipModel } from './gossip.ts';
import type { EventQueue } from './queue.ts';
import type { DesReplica } from './replica.ts';
import type { Rec } from './request.ts';

export type Feed =
  | { readonly kind: 'gossip' }
  | { readonly kind: 'poll'; readonly everyMs: number; readonly delayMs: number }
  | { readonly kind: 'events'; readonly delayMs: number };

export interface Deployment {
  /** The router policy run by RouterCore (the oracle's is built by the run, see oracle.ts). */
  readonly routerPolicy: string;
  readonly feed: Feed;
  /** Warmpath's admission control in the agents; off: the engine queues or preempts everything it is sent. */
  readonly admission: boolean;
}

const GOSSIP: Feed = Object.freeze({ kind: 'gossip' });

/** Policies not listed here run as Warmpath deploys them: gossip feed, admission on. */
export const FEEDS = {
  // The price of gossip: warmpath's policy over the engines' true state.
  'warmpath-instant': { routerPolicy: 'warmpath', feed: { kind: 'events', delayMs: 0 }, admission: true },
  // llm-d's endpoint picker scrapes every engine every 50 ms (metrics older than 200 ms are stale).
  'llm-d-approx': { routerPolicy: 'llm-d-approx', feed: { kind: 'poll', everyMs: 50, delayMs: 1 }, admission: false },
  // KV events reach the indexer a few ms after the engine's step (ZMQ on the same network).
  'llm-d-precise': { routerPolicy: 'llm-d-precise', feed: { kind: 'events', delayMs: 3 }, admission: false },
  'dynamo-kv': { routerPolicy: 'dynamo-kv', feed: { kind: 'events', delayMs: 3 }, admission: false },
  // These read only their own in-flight counts: the feed does not matter to their choice.
  'sglang-cache-aware': { routerPolicy: 'sglang-cache-aware', feed: GOSSIP, admission: false },
  'kubeai-prefix-hash': { routerPolicy: 'kubeai-prefix-hash', feed: GOSSIP, admission: false },
} as const satisfies Record<string, Deployment>;

/** Suffix of a peer's policy run behind Warmpath's agents. */
export const BEHIND_AGENTS = '@agents';

/** The peers whose `@agents` variant exists. */
export const PEERS = Object.keys(FEEDS).filter((p) => p !== 'warmpath-instant');

/** Benchmark-only policy names the DES accepts beyond the router's (live mode rejects them). */
export const DES_ONLY_POLICIES = ['warmpath-instant', ...PEERS.map((p) => `${p}${BEHIND_AGENTS}`)] as const;

/** How `policy` (a benchmark policy name) is deployed. The oracle runs warmpath's router config with its own select. */
export function deploymentOf(policy: string): Deployment {
  if (policy.endsWith(BEHIND_AGENTS))
    return { routerPolicy: policy.slice(0, -BEHIND_AGENTS.length), feed: GOSSIP, admission: true };
  const d: Deployment | undefined = (FEEDS as Record<string, Deployment>)[policy];
  return d ?? { routerPolicy: policy === 'oracle' ? 'warmpath' : policy, feed: GOSSIP, admission: true };
}

/** The feed's side of the replicas: how their state messages reach the routers, and when they are built. */
export function feedHooks(
  feed: Feed,
  q: EventQueue,
  routers: ReadonlyArray<RouterCore<Rec>>,
  random: () => number,
  gossip: GossipModel,
) {
  // State bytes delivered to each router (gossip feed).
  const received: number[] = [];
  // Every router but a state's first hop gets it in that router's batch, which names it (the routers heard).
  const firstHop = firstHops(routers);
  const names: string[] = []; // made once per router, not per delivery
  const voucher = (state: ReplicaState, i: number): string | undefined => {
    const f = firstHop(state.replica);
    return f === i ? undefined : (names[f] ??= `router-${f}`);
  };
  const deliver = (state: ReplicaState): void => {
    for (const [i, rt] of routers.entries()) rt.receive(state, voucher(state, i));
  };
  if (feed.kind === 'gossip') {
    const delivery = deliverySampler(gossip.delay, random, routers);
    const loss = gossip.loss;
    const published = (state: ReplicaState, bytes: number): void => {
      for (const [i, rt] of routers.entries()) {
        // Only a router holding the state's model group is on its topic.
        if (!rt.view.served.holds(state)) continue;
        // No draw when nothing is lost: the default keeps the run's random stream.
        if (loss > 0 && random() < loss) continue;
        received[i] = (received[i] ?? 0) + bytes;
        q.after(delivery(state.replica, i, q.now), () => rt.receive(state, voucher(state, i)));
      }
    };
    return {
      received,
      hooks: { published },
      start: (r: DesReplica, scrapeAt: number, publishAt: number) => r.start(scrapeAt, publishAt),
    };
  }
  const published =
    feed.delayMs === 0 ? deliver : (state: ReplicaState): void => void q.after(feed.delayMs, () => deliver(state));
  const poll = (r: DesReplica, everyMs: number): void => {
    r.report();
    q.after(everyMs, () => poll(r, everyMs));
  };
  if (feed.kind === 'poll')
    return {
      received,
      hooks: { published },
      start: (r: DesReplica, scrapeAt: number) => r.start(scrapeAt, undefined, () => poll(r, feed.everyMs)),
    };
  // events: one report per replica per instant, however many changes it saw; and a heartbeat, or an idle replica would go stale.
  const pending = new Set<DesReplica>();
  const changed = (r: DesReplica): void => {
    if (pending.has(r)) return;
    pending.add(r);
    q.after(0, () => {
      pending.delete(r);
      r.report();
    });
  };
  return {
    received,
    hooks: { published, changed },
    start: (r: DesReplica, scrapeAt: number) =>
      r.start(scrapeAt, undefined, () => poll(r, r.core.config.publishIntervalMs)),
  };
}
