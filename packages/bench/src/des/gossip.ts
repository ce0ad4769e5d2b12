/**
 * How the simulator's gossip delivers one agent's state message to one
 * router: a delay drawn from a distribution, or a loss.
 *
 * Delay distributions, written `name:a:b` (ms):
 *  - `uniform:min:max` — min + U(0, max − min). The default, `uniform:5:20`,
 *    is what every published DES figure used (one gossipsub hop on a LAN).
 *  - `exp:base:mean` — base + an exponential tail with the given mean over
 *    base: most messages near the base, a few late (a queue on a busy relay).
 *  - `lognormal:p50:p99` — a lognormal with that median and 99th percentile
 *    (σ = ln(p99 / p50) / 2.326): a long, heavy tail (a mesh of routers that
 *    relays across a WAN or under load).
 *  - `batch:W` — the routers' batched relay (docs/GOSSIP.md, "Batches"): a
 *    state reaches its agent's first-hop router after a hop, which applies it
 *    at once; the others get it a hop after that router's next window edge
 *    (windows of W ms, each router at a phase of its own). Each hop is
 *    U(HOP_MIN_MS, HOP_MAX_MS), two hops spanning the default's range; an
 *    agent's first hop is one router (dealt in turn as agents first
 *    publish) at one latency for the run, and its states reach each router
 *    in the order it sent them, as one relay keeps them. The window is always waited (a quiet router's
 *    state would go at once: an upper bound on the delay at a fleet's
 *    cadence).
 * Loss: each (message, router) pair is lost with probability `loss`,
 * independently; a router that misses a message sees a gap in the digest
 * deltas and pulls the snapshot, and sees the replica's load only at its
 * next message. Messages may arrive out of order (each draw is independent,
 * but for `batch`); the older one is then superseded, as gossipsub over
 * several mesh paths does.
 * Complexity: O(1) per delivery; one or two draws per delivery from the run's
 * stream, and none for loss when `loss` is 0 (so the default keeps the
 * stream, hence every published figure, unchanged).
 */

export interface GossipModel {
  /** The delay spec as given (recorded in results). */
  readonly delay: string;
  /** Probability a given router misses a given message, 0–1. */
  readonly loss: number;
}

export const DEFAULT_GOSSIP: GossipModel = Object.freeze({ delay: 'uniform:5:20', loss: 0 });

/** z of the standard normal's 99th percentile. */
const Z99 = 2.326;

/** The median of a delay spec's distribution, ms (for plotting against); throws as delaySampler does. */
export function delayMedianMs(spec: string): number {
  delaySampler(spec, Math.random);
  const [name, a, b] = spec.split(':');
  if (name === 'batch') return 2 * HOP_MEAN_MS + Number(a) / 2;
  if (name === 'uniform') return (Number(a) + Number(b)) / 2;
  if (name === 'exp') return Number(a) + (Number(b) - Number(a)) * Math.LN2;
  return Number(a);
}

/** A delay sampler over `random` (uniform in [0, 1)), ms; throws a message naming what is acceptable. */
export function delaySampler(spec: string, random: () => number): () => number {
  const [name, ...rest] = spec.split(':');
  const args = rest.map(Number);
  const bad = (why: string): Error =>
    new Error(
      `gossip delay "${spec}": ${why}; expected uniform:min:max, exp:base:mean, lognormal:p50:p99 or batch:window (ms)`,
    );
  if (name === 'batch') {
    const w = args[0]!;
    if (args.length !== 1 || !(w > 0 && Number.isFinite(w))) throw bad('one positive window after batch');
    return () => hop(random) + random() * w + hop(random);
  }
  if (args.length !== 2 || args.some((x) => !Number.isFinite(x) || x < 0))
    throw bad('two non-negative numbers after the name');
  const [a, b] = args as [number, number];
  switch (name) {
    case 'uniform':
      if (b < a) throw bad('max below min');
      return () => a + random() * (b - a);
    case 'exp':
      if (b < a) throw bad('mean below base');
      return () => a - (b - a) * Math.log(1 - random());
    case 'lognormal': {
      if (a <= 0 || b < a) throw bad('need 0 < p50 ≤ p99');
      const mu = Math.log(a);
      const sigma = Math.log(b / a) / Z99;
      // Box–Muller: one standard normal from two uniforms.
      return () => Math.exp(mu + sigma * Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random()));
    }
    default:
      throw bad(`unknown distribution "${name}"`);
  }
}

/** One hop of the batched relay, ms: U(HOP_MIN_MS, HOP_MAX_MS). */
const HOP_MIN_MS = 2.5;
const HOP_MAX_MS = 10;
const HOP_MEAN_MS = (HOP_MIN_MS + HOP_MAX_MS) / 2;
const hop = (random: () => number): number => HOP_MIN_MS + random() * (HOP_MAX_MS - HOP_MIN_MS);

/**
 * Each replica's first-hop router: the one its agent hands its states to, which
 * packs them into its batches (the others learn them vouched for by it).
 * Replicas take the routers in turn, in the order they first publish.
 */
export function firstHops(routers: { readonly length: number }): (replica: string) => number {
  const of = new Map<string, number>();
  return (replica) => {
    let f = of.get(replica);
    if (f === undefined) of.set(replica, (f = of.size % routers.length));
    return f;
  };
}

/** When a replica's state published at `now` reaches router `router`: the delay, ms. */
export type Delivery = (replica: string, router: number, now: number) => number;

/**
 * The delay of each (state, router) delivery: `delaySampler`'s draw, or for
 * `batch:W` the relay's path (the header): first hop, window edge, last hop,
 * in order per replica and router.
 */
export function deliverySampler(spec: string, random: () => number, routers: { readonly length: number }): Delivery {
  const delay = delaySampler(spec, random);
  if (!spec.startsWith('batch:')) return () => delay();
  const w = Number(spec.slice('batch:'.length));
  const phases: number[] = [];
  const routerOf = firstHops(routers);
  const firstHop = new Map<string, number>();
  const last = new Map<string, number>();
  return (replica, router, now) => {
    const first = routerOf(replica);
    let ms = firstHop.get(replica);
    if (ms === undefined) firstHop.set(replica, (ms = hop(random)));
    if (first === router) return ms;
    const phase = (phases[first] ??= random() * w);
    const edge = phase + Math.ceil((now + ms - phase) / w) * w;
    const key = `${replica}\u0000${router}`;
    const at = Math.max(edge + hop(random), last.get(key) ?? 0);
    last.set(key, at);
    return at - now;
  };
}

/** Checks a model before a run starts (the CLI's and the worker's errors say the same). */
export function validateGossip(g: GossipModel): GossipModel {
  delaySampler(g.delay, Math.random);
  if (!(g.loss >= 0 && g.loss < 1)) throw new Error(`gossip loss ${g.loss}: expected a probability in [0, 1)`);
  return g;
}
