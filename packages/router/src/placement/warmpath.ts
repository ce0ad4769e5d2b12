/**
 * Warmpath placement (DESIGN.md §4): cache-aware consistent hashing with
 * bounded loads, in work units (tokens).
 *
 * Steps:
 *  0. candidates = eligible replicas of the (model, adapter) group; load(r) =
 *     published inflightTokens + this router's work sent since that report;
 *     warmth(r) = longest matched chain prefix in r's digest (index) or in the
 *     optimistic overlay of this router's recent dispatches.
 *     Bound: withinBound in units of this request's work u = promptTokens +
 *     maxTokens (load/u, 1, Σload/u, weight share, c), or load + u under a
 *     floor (boundFloorTokens × weight) — an almost idle replica is never "full".
 *     Headroom: kvTokens − kvUsed − own recent work ≥ uncached prompt + maxTokens.
 *  1. warm: the warmest candidate within the bound with headroom; ties →
 *     adapter tier (hot > free slot > evict), then ring order of the key.
 *  2. ring/spill: the first candidate in the key's ring order within the bound
 *     with headroom — `ring` if it is the first candidate in that order, else
 *     `spill` (deterministic, so a hot prefix grows onto a stable set).
 *     With an adapter: adapter-hot (hot replicas in key ring order), else the
 *     adapter's own ring (keyed by the adapter): first with a free slot, else
 *     first at all → adapter-home / adapter-spill, so adapters do not thrash.
 *  3. least-loaded: lowest load/weight among candidates with headroom.
 *  4. saturated (the router queues, then answers 429); no candidates → no-replica.
 * Embeddings have no prefix reuse: least-loaded directly.
 * Complexity: O(candidates) for loads + O(matched depth + holders) for warmth
 * + a ring walk that stops at the first admissible member (O(log P) + a few
 * steps typically).
 * Trade-off: the bound caps any replica at c × its share of the fleet's work,
 * giving up some cache hits to keep tail latency; c = 1.25 spills early, a
 * larger c keeps more hits on hot replicas.
 */
import { hashString, withinBound } from '@warmpath/shared';
import type { FleetView, Group, Replica } from '../fleet/view.ts';
import { candidates } from './eligible.ts';
import type { LocalState } from './local.ts';
import { NO_REPLICA, SATURATED, type Placement, type PlacementRequest, type Policy, type PolicyOptions } from './types.ts';

const TIER_EVICT = 0;
const TIER_FREE = 1;
const TIER_HOT = 2;

export function adapterTier(r: Replica, adapter: string): number {
  if (adapter === '') return TIER_HOT;
  const s = r.state;
  if (s.hotAdapters.includes(adapter)) return TIER_HOT;
  return s.hotAdapters.length < s.capacity.adapterSlots ? TIER_FREE : TIER_EVICT;
}

export function createWarmpathPolicy(opts: PolicyOptions): Policy {
  const tokensPerChunk = opts.chunkChars / opts.charsPerToken;
  const c = opts.loadFactor;
  const floor = opts.boundFloorTokens ?? 0;
  const cands: Replica[] = [];
  // Per-slot scratch, valid during one place() call.
  let load = new Float64Array(64);
  let added = new Float64Array(64);
  let depth = new Int32Array(64);
  let mark = new Uint8Array(64);
  const adapterKeys = new Map<string, bigint>();

  function ensure(slots: number): void {
    if (load.length >= slots) return;
    const n = Math.max(slots, load.length * 2);
    load = new Float64Array(n);
    added = new Float64Array(n);
    depth = new Int32Array(n);
    mark = new Uint8Array(n);
  }

  function place(req: PlacementRequest, view: FleetView, local: LocalState): Placement {
    const info = req.info;
    const g = view.group(info.model, info.adapter);
    if (g === undefined) return NO_REPLICA;
    candidates(req, view, local, cands);
    if (cands.length === 0) return NO_REPLICA;
    ensure(view.bySlot.length);
    for (const r of g.members) mark[r.slot] = 0;

    let total = 0;
    let weight = 0;
    for (const r of cands) {
      const a = local.addedTokens(r);
      const l = r.state.load.inflightTokens + a;
      added[r.slot] = a;
      load[r.slot] = l;
      total += l;
      weight += r.state.capacity.weight;
    }
    // The bound is counted in units of this request's work, so its ceil() admits at least one
    // request of this size (as the count-based rule does); below the floor a replica is not busy at all.
    const unit = Math.max(1, info.promptTokens + info.maxTokens);
    const within = (r: Replica): boolean => {
      const l = load[r.slot]!;
      const w = r.state.capacity.weight;
      return l + unit <= floor * w || withinBound(l / unit, 1, total / unit, w / weight, c);
    };
    const work = (r: Replica): number => Math.max(0, info.promptTokens - Math.floor(depth[r.slot]! * tokensPerChunk)) + info.maxTokens;
    const headroom = (r: Replica): boolean => {
      const kv = r.state.capacity.kvTokens;
      return kv <= 0 || kv - r.state.load.kvUsedTokens - added[r.slot]! >= work(r);
    };

    if (info.kind === 'embedding') {
      for (const r of cands) depth[r.slot] = 0;
      return leastLoaded(info.adapter, load, work, headroom);
    }

    // Warmth: digest index and optimistic overlay, both O(matched depth).
    view.scanWarmth(info.hashes);
    local.scanOverlay(info.hashes, req.now);
    let best = 0;
    let ties = 0;
    let bestTier = -1;
    for (const r of cands) {
      const d = Math.max(view.depthOf(r.slot), local.overlayDepthOf(r.slot));
      depth[r.slot] = d;
    }
    // 1. warm
    for (const r of cands) {
      const d = depth[r.slot]!;
      if (d === 0 || d < best || !within(r) || !headroom(r)) continue;
      const tier = adapterTier(r, info.adapter);
      if (d > best || tier > bestTier) {
        best = d;
        bestTier = tier;
        ties = 0;
      } else if (tier < bestTier) continue;
      ties++;
    }
    if (best > 0) {
      let only: Replica | undefined;
      for (const r of cands) {
        const hit = depth[r.slot] === best && adapterTier(r, info.adapter) === bestTier && within(r) && headroom(r);
        mark[r.slot] = hit ? 1 : 0;
        if (hit) only = r;
      }
      if (ties === 1 && only !== undefined) return { replica: only, branch: 'warm', work: work(only) };
      for (const m of g.ring.walk(req.key)) {
        const r = g.byId.get(m.id);
        if (r !== undefined && mark[r.slot] === 1) return { replica: r, branch: 'warm', work: work(r) };
      }
      if (only !== undefined) return { replica: only, branch: 'warm', work: work(only) }; // not on the ring (weight changed mid-flight)
    }

    // 2. ring order within the bound
    for (const r of cands) mark[r.slot] = 2; // candidate marker for ring walks
    if (info.adapter === '') {
      const hit = walk(g, req.key, mark, (r) => within(r) && headroom(r));
      if (hit !== undefined) return { replica: hit.r, branch: hit.rank === 0 ? 'ring' : 'spill', work: work(hit.r) };
    } else {
      const hot = walk(g, req.key, mark, (r) => adapterTier(r, info.adapter) === TIER_HOT && within(r) && headroom(r));
      if (hot !== undefined) return { replica: hot.r, branch: 'adapter-hot', work: work(hot.r) };
      let akey = adapterKeys.get(info.adapter);
      if (akey === undefined) {
        akey = hashString(`adapter\u0000${info.model}\u0000${info.adapter}`);
        if (adapterKeys.size > 10_000) adapterKeys.clear();
        adapterKeys.set(info.adapter, akey);
      }
      const free = walk(g, akey, mark, (r) => adapterTier(r, info.adapter) >= TIER_FREE && within(r) && headroom(r));
      const any = free ?? walk(g, akey, mark, (r) => within(r) && headroom(r));
      if (any !== undefined) return { replica: any.r, branch: any.rank === 0 ? 'adapter-home' : 'adapter-spill', work: work(any.r) };
    }

    // 3. least-loaded with headroom
    return leastLoaded(info.adapter, load, work, headroom);
  }

  function leastLoaded(adapter: string, load: Float64Array, work: (r: Replica) => number, headroom: (r: Replica) => boolean): Placement {
    let pick: Replica | undefined;
    let pickLoad = Infinity;
    let pickTier = -1;
    for (const r of cands) {
      if (!headroom(r)) continue;
      const l = load[r.slot]! / r.state.capacity.weight;
      const tier = adapterTier(r, adapter);
      if (l < pickLoad || (l === pickLoad && tier > pickTier)) {
        pick = r;
        pickLoad = l;
        pickTier = tier;
      }
    }
    return pick === undefined ? SATURATED : { replica: pick, branch: 'least-loaded', work: work(pick) };
  }

  return {
    name: 'warmpath',
    place,
    onDispatch(req, replica, local) {
      if (req.endpoint !== 'embedding' && req.info.hashes.length > 0) local.overlayAdd(req.info.hashes, replica.slot, req.now);
    },
  };
}

/**
 * The first replica in the ring order of `key` that is a candidate (mark 2)
 * and passes `ok`; rank counts candidates passed over (0 = the first candidate
 * in ring order, the key's home).
 */
function walk(g: Group, key: bigint, mark: Uint8Array, ok: (r: Replica) => boolean): { r: Replica; rank: number } | undefined {
  let rank = 0;
  for (const m of g.ring.walk(key)) {
    const r = g.byId.get(m.id);
    if (r === undefined || mark[r.slot] !== 2) continue;
    if (ok(r)) return { r, rank };
    rank++;
  }
  return undefined;
}
