/**
 * Groups, rings and model names: which replicas serve a (model, adapter), the
 * consistent-hash ring over the live ones, and what a requested model name
 * resolves to (a base model, or an adapter with its base).
 *
 * Steps: membership changes (join, forget, liveness, weight, model, adapter or
 * endpoint lists, chunk mismatch) mark the groups dirty; the next read
 * rebuilds every group whole: members sorted by id, and a ring reused when
 * its live members and weights are unchanged.
 * Complexity: reads O(1); a rebuild O(P log P + P × (models + adapters)) for P
 * replicas, paid once per membership change, never per load update.
 * Trade-off: a whole rebuild is simpler than incremental group edits and is
 * rare next to the load-only updates that dominate gossip.
 */
import { HashRing, type Endpoint, type ModelRef, type ReplicaState } from '@warmpath/shared/wire';
import type { ReplicaView } from './replica.ts';

export interface Group {
  /** Every known, chunk-matching replica serving (model, adapter), sorted by id. */
  readonly members: readonly ReplicaView[];
  /** members[i].slot, for column reads without touching the record. */
  readonly memberSlots: Int32Array;
  /** Ring over the live members (rebuilt only when that set or weights change). */
  readonly ring: HashRing;
  /** id → member, to map ring ids back to replicas. */
  readonly byId: ReadonlyMap<string, ReplicaView>;
  /** Ring member index (ring.members) → that replica's slot: a ring walk without an id lookup per step. */
  readonly ringSlots: Int32Array;
}

const MODEL_SEP = '\u0000';

export class Groups {
  /** Bumped whenever any group or ring is rebuilt; caches key on it. */
  epoch = 0;
  readonly #replicas: ReadonlyMap<string, ReplicaView>;
  #groups = new Map<string, Group>();
  #models = new Map<string, ModelRef>();
  #dirty = true;

  /** `replicas` is read (never written) at each rebuild. */
  constructor(replicas: ReadonlyMap<string, ReplicaView>) {
    this.#replicas = replicas;
  }

  /** Membership changed: rebuild on the next read. */
  markDirty(): void {
    this.#dirty = true;
  }

  /** The replicas serving (model, adapter) and their ring; undefined if none is known. */
  group(model: string, adapter: string): Group | undefined {
    if (this.#dirty) this.#rebuild();
    return this.#groups.get(model + MODEL_SEP + adapter);
  }

  /** Requested model name → (base, adapter), over every known replica; undefined = unknown. */
  resolveModel(name: string): ModelRef | undefined {
    if (this.#dirty) this.#rebuild();
    return this.#models.get(name);
  }

  /** The fleet's models: bases, and adapters with their parent. */
  models(): ModelRef[] {
    if (this.#dirty) this.#rebuild();
    return [...this.#models.entries()].map(([name, ref]) => (ref.adapter === '' ? { model: name, adapter: '' } : ref));
  }

  /** Does any replica serving (model, adapter) offer this endpoint? */
  supports(model: string, adapter: string, endpoint: Endpoint): boolean {
    const g = this.group(model, adapter);
    return g !== undefined && g.members.some((r) => r.state.endpoints.includes(endpoint));
  }

  #rebuild(): void {
    this.#dirty = false;
    this.epoch++;
    const lists = new Map<string, ReplicaView[]>();
    const models = new Map<string, ModelRef>();
    for (const r of this.#replicas.values()) {
      if (r.chunkMismatch) continue;
      const base = r.state.models[0];
      for (const m of r.state.models) {
        push(lists, m + MODEL_SEP, r);
        if (!models.has(m)) models.set(m, { model: m, adapter: '' });
      }
      for (const a of r.state.adapters) {
        if (base === undefined) continue;
        for (const m of r.state.models) push(lists, m + MODEL_SEP + a, r);
        if (!models.has(a)) models.set(a, { model: base, adapter: a });
      }
    }
    const old = this.#groups;
    const groups = new Map<string, Group>();
    for (const [key, members] of lists) {
      members.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const live = members.filter((r) => r.live);
      const prev = old.get(key);
      // Reuse the old ring when its membership and weights are unchanged (load-only changes never reach here).
      const ring =
        prev !== undefined && sameRing(prev.ring, live)
          ? prev.ring
          : new HashRing(live.map((r) => ({ id: r.id, weight: r.state.capacity.weight })));
      const byId = new Map(members.map((r) => [r.id, r]));
      groups.set(key, {
        members,
        memberSlots: Int32Array.from(members, (r) => r.slot),
        ring,
        byId,
        ringSlots: Int32Array.from(ring.members, (m) => byId.get(m.id)!.slot),
      });
    }
    this.#groups = groups;
    this.#models = models;
  }
}

/** Does a state change alter membership (so groups or rings must be rebuilt)? */
export function membershipChanged(prev: ReplicaState, next: ReplicaState): boolean {
  return (
    prev.capacity.weight !== next.capacity.weight ||
    !sameList(prev.models, next.models) ||
    !sameList(prev.adapters, next.adapters) ||
    !sameList(prev.endpoints, next.endpoints)
  );
}

function push(m: Map<string, ReplicaView[]>, key: string, r: ReplicaView): void {
  const l = m.get(key);
  if (l === undefined) m.set(key, [r]);
  else if (l[l.length - 1] !== r) l.push(r);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameRing(ring: HashRing, live: readonly ReplicaView[]): boolean {
  if (ring.members.length !== live.filter((r) => r.state.capacity.weight > 0).length) return false;
  const w = new Map(ring.members.map((m) => [m.id, m.weight]));
  for (const r of live) if (r.state.capacity.weight > 0 && w.get(r.id) !== r.state.capacity.weight) return false;
  return true;
}
