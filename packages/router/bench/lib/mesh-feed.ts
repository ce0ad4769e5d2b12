/**
 * Synthetic agents for the full-cadence bench (bench/cadence.ts): a router
 * fed its agents' states at a fleet's cadence without an agent's libp2p
 * node per agent, which is what this host cannot run at that rate.
 *
 * Each agent has a peer id of its own (an Ed25519 identity generated once,
 * keys.ts handoffAgentOf) and sends the state the bench's real agents send
 * (MeshFleet.stateOf: the same fields, digest and static-field cadence,
 * sentAt its creation), handed to its router through the router's first-hop
 * entry point (GossipNode.handOff): judged as direct state under the agent's
 * peer id, applied, batched and flooded as a stream's frame would be.
 *
 * Steps: agents are dealt to this process's routers in turn; `start(hz)`
 * ticks every TICK_MS and hands off the states due since the start (hz ×
 * agents × elapsed): round robin over the agents (`arrivals` 'even': each
 * agent sends one every 1/hz s, the agents spread evenly over that period),
 * or each to an agent drawn at random ('random': each agent's sends a
 * Poisson stream of rate hz, as change-triggered publishing is, more or
 * less). A tick more than MAX_BEHIND_MS late skips what is older (counted):
 * the offered rate then falls short, and the counters say by how much.
 * Digests (`digest`): 'whole', every state a self-contained digest (the
 * fleet's, never a snapshot pull); 'chain', as an agent sends them: a
 * self-contained one first and every WHOLE_EVERY states, in between a delta
 * on the state before (`digestHashes` hashes: the oldest held out, as many
 * new in; HELD_HASHES held), which a first hop may coalesce (shared
 * coalesce.ts).
 * Complexity: O(states) per tick, one state built and encoded each.
 * Trade-off: no Noise, yamux or stream at the first hop: the router's
 * transport for its own agents' states is left out, and the caller, not
 * Noise, names each agent (docs/GOSSIP.md, "At full cadence").
 */
import { randomBytes } from 'node:crypto';
import { generateIdentity, handoffAgentOf, type HandoffAgent } from '@warmpath/shared/gossip';
import { encodeState, type DigestDelta } from '@warmpath/shared/wire';
import type { MeshFleet, MeshRouter } from './mesh-fleet.ts';

/** How the feed's agents send (the header's steps). */
export interface FeedOptions {
  arrivals?: 'even' | 'random' | undefined;
  digest?: 'whole' | 'chain' | undefined;
  /** Hashes a chained delta carries (added + removed). */
  digestHashes?: number | undefined;
}
/** Hashes a chained digest holds. */
const HELD_HASHES = 64;
/** A chained digest is self-contained every this many states, so a router that missed one mends without a pull. */
const WHOLE_EVERY = 50;
/**
 * The i-th hash of agent `agent`'s own sequence: each agent's blocks are its
 * own (a replica's conversations), so no two agents churn the same hash, as
 * a real fleet's private blocks do not (a shared prefix stays held).
 */
const hashAt = (agent: number, i: number): bigint =>
  (((BigInt(agent) << 32n) | BigInt(i + 1)) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
const hashes = (agent: number, from: number, n: number): BigUint64Array =>
  BigUint64Array.from({ length: n }, (_, i) => hashAt(agent, from + i));

/** An agent's chained digest at `seq` (the header's 'chain'): held at seq k, its hashes [k × moved, k × moved + HELD_HASHES). */
function chainedDigest(agent: number, seq: number, perState: number): DigestDelta {
  const moved = Math.max(1, Math.ceil(perState / 2));
  if ((seq - 1) % WHOLE_EVERY === 0)
    return {
      from: -1,
      size: HELD_HASHES,
      added: hashes(agent, seq * moved, HELD_HASHES),
      removed: new BigUint64Array(0),
    };
  const before = (seq - 1) * moved;
  return {
    from: seq - 1,
    size: HELD_HASHES,
    added: hashes(agent, before + HELD_HASHES, moved),
    removed: hashes(agent, before, moved),
  };
}

/** The feed's tick, ms: well inside the 50 ms batch window. */
const TICK_MS = 5;
/** States due longer ago than this are skipped, not sent in a burst, ms. */
const MAX_BEHIND_MS = 1_000;

/** What a feed did so far: states due, handed to a router that took them, refused by a router taking no hand-offs, skipped late. */
export interface FeedCounts {
  due: number;
  handed: number;
  notTaken: number;
  skipped: number;
}

interface Agent {
  readonly name: string;
  readonly number: number;
  readonly id: HandoffAgent;
  readonly router: MeshRouter;
  readonly bootAt: number;
  readonly boot: string;
  seq: number;
}

export class SyntheticFeed {
  readonly counts: FeedCounts = { due: 0, handed: 0, notTaken: 0, skipped: 0 };
  readonly #fleet: MeshFleet;
  readonly #agents: Agent[];
  readonly #o: FeedOptions;
  #next = 0;

  private constructor(fleet: MeshFleet, agents: Agent[], o: FeedOptions) {
    this.#fleet = fleet;
    this.#agents = agents;
    this.#o = o;
  }

  /** `agents` agents named agent-<firstAgent>… dealt to the fleet's routers in turn. */
  static async create(
    fleet: MeshFleet,
    agents: number,
    firstAgent: number,
    o: FeedOptions = {},
  ): Promise<SyntheticFeed> {
    const out: Agent[] = [];
    for (let i = 0; i < agents; i++) {
      out.push({
        name: `agent-${firstAgent + i}`,
        number: firstAgent + i,
        id: handoffAgentOf(await generateIdentity()),
        router: fleet.routers[i % fleet.routers.length]!,
        bootAt: Date.now() - 60_000,
        boot: randomBytes(9).toString('base64url'),
        seq: 0,
      });
    }
    return new SyntheticFeed(fleet, out, o);
  }

  /** The agents' peer ids (the receivers bind each replica to one). */
  peerIds(): string[] {
    return this.#agents.map((a) => a.id.peerId);
  }

  /** Each agent hands off a state every 1/hz s from now; returns the stop function. */
  start(hz: number): () => void {
    const t0 = performance.now();
    let sent = 0;
    const perMs = (hz * this.#agents.length) / 1_000;
    const timer = setInterval(() => {
      const due = Math.floor((performance.now() - t0) * perMs);
      const late = Math.max(0, due - sent - Math.ceil(MAX_BEHIND_MS * perMs));
      this.counts.due += due - sent;
      this.counts.skipped += late;
      sent += late;
      const n = this.#agents.length;
      const random = this.#o.arrivals === 'random';
      for (; sent < due; sent++)
        this.#handOff(this.#agents[random ? Math.floor(Math.random() * n) : this.#next++ % n]!);
    }, TICK_MS);
    return () => clearInterval(timer);
  }

  #handOff(a: Agent): void {
    a.seq++;
    const s = this.#fleet.stateOf(a);
    if (this.#o.digest === 'chain')
      s.digest = chainedDigest(a.number, a.seq, this.#o.digestHashes ?? s.digest.added.length);
    const state = encodeState(s);
    if (a.router.node.handOff(a.id, undefined, state)) this.counts.handed++;
    else this.counts.notTaken++;
  }
}
