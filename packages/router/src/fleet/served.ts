/**
 * The model groups a router serves (`--models`; docs/OPERATIONS.md,
 * "Splitting routers by model group"): every group (`*`, the default), or a
 * list of group names — an agent's `--group`, else its base model
 * (protocol.ts groupOf). A router subscribes to its groups' gossip topics
 * only (shared/gossip/groups.ts); its fleet view drops any other group's
 * state as well (a state relayed on the wrong topic, or fed directly as in
 * the simulator), so it never pulls their snapshots or places on them.
 * Names, not globs: a gossip topic is an exact name, so a router must know
 * each group it subscribes to.
 */
import type { GossipNode } from '@warmpath/shared/gossip';
import { groupOf, type ReplicaState } from '@warmpath/shared/wire';
import type { ReplicaView } from './replica.ts';

/** The selector meaning every group. */
export const EVERY_GROUP = '*';

export class ServedGroups {
  /** Serves every group (behaves as a router before groups existed). */
  readonly all: boolean;
  /** The groups served, when not all. */
  readonly names: readonly string[];
  readonly #names: ReadonlySet<string>;

  constructor(selector: readonly string[] = [EVERY_GROUP]) {
    const names = [...new Set(selector.map((s) => s.trim()).filter((s) => s !== ''))];
    this.all = names.length === 0 || names.includes(EVERY_GROUP);
    this.names = Object.freeze(this.all ? [] : names);
    this.#names = new Set(this.names);
  }

  /** Does this router hold the state's group? */
  holds(s: Pick<ReplicaState, 'group' | 'models'>): boolean {
    if (this.all) return true;
    const group = groupOf(s);
    return group !== undefined && this.#names.has(group);
  }

  /** The gossip node's `groups` option: undefined for every group. */
  get gossipGroups(): readonly string[] | undefined {
    return this.all ? undefined : this.names;
  }

  /** What a client asking for a model no replica of these groups serves is told. */
  notServed(model: string): string {
    return (
      `The model "${model}" is not served by this router: it holds only the model groups ${this.names.map((n) => JSON.stringify(n)).join(', ')} (--models). ` +
      'Send the request to a router that serves its group, or to one serving every group.'
    );
  }
}

/**
 * Which model groups a router holds, for /warmpath/v1/fleet and the status
 * page: `all` (it serves every group), `served` (the groups it was given,
 * empty when all) and `held` (the groups of the replicas its view holds).
 */
export function groupsJson(
  served: ServedGroups,
  replicas: Iterable<ReplicaView>,
): { all: boolean; served: string[]; held: string[] } {
  const held = new Set<string>();
  for (const r of replicas) {
    const group = groupOf(r.state);
    if (group !== undefined) held.add(group);
  }
  return { all: served.all, served: [...served.names], held: [...held].sort() };
}

/** How often a router serving every group joins the topics of groups its view learned of, ms. */
export const GROUP_JOIN_INTERVAL_MS = 1_000;

/**
 * A router serving every group joins the gossip topic of each group its
 * view holds a replica of (learned from states on the fleet topic), so that
 * it relays them to the group's own routers (shared/gossip/groups.ts).
 * O(replicas) a second. Returns the stop.
 */
export function followGroups(
  node: Pick<GossipNode, 'groups' | 'joinGroup'>,
  replicas: () => Iterable<ReplicaView>,
): () => void {
  const join = (): void => {
    const seen = new Set(node.groups());
    for (const r of replicas()) {
      const group = groupOf(r.state);
      if (group !== undefined && !seen.has(group)) {
        seen.add(group);
        node.joinGroup(group);
      }
    }
  };
  const timer = setInterval(join, GROUP_JOIN_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
