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
 *     maxTokens (load/u, 1, Σload/u, weight share, c), or a load under the
 *     floor max(boundFloorTokens, min(2u, 32 × boundFloorTokens)) × weight — a replica with little work is
 *     never "full", and the floor grows with the request (measured on the
 *     Mooncake trace: 15k-token prompts spilled off warm replicas without it).
 *     Headroom: kvTokens − kvUsed − own recent work ≥ uncached prompt + maxTokens.
 *  1. warm: the deepest match within the bound with headroom; ties →
 *     adapter tier (hot > free slot > evict), then, for an explicit routing
 *     key, the key's ring order (so every router sends a fan-out's
 *     simultaneous calls to one replica) — or, when less than half the
 *     prompt is warm anywhere (a new task), the least-loaded tied replica;
 *     else the shortest prefill queue (published prefillTokens + this
 *     router's work since) per weight, then id — a prefix warm everywhere (a
 *     system prompt) spreads evenly.
 *     An adapter request whose warm choice lacks the adapter goes to a replica
 *     with the adapter hot within HARD_BOUND × c instead (`adapter-hot`).
 *     balance: when that prefix is warm on several replicas, the chosen one is
 *     over its share of the fleet's work and a replica is under its share by
 *     c, the first such replica in key ring order takes it (`balance`; not
 *     with a routing key) — the warm set grows instead of a replica idling.
 *  2. ring/spill: the first candidate in the key's ring order within the bound
 *     with headroom — `ring` if it is the first candidate in that order, else
 *     `spill` (deterministic, so a hot prefix grows onto a stable set); without
 *     a routing key, the next admissible member takes it when its published
 *     prefill queue is shorter (two choices on the ring, alike on every router).
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
import { hashString, underFloor, withinBound } from '@warmpath/shared/wire';
import type { FleetView, Group, Replica } from '../fleet/view.ts';
import { eligible } from './eligible.ts';
import type { LocalState } from './local.ts';
import { NO_REPLICA, SATURATED, type Branch, type Placement, type PlacementRequest, type Policy, type PolicyOptions } from './types.ts';

/** The best warm candidate of one scan: candidate index (-1: none), its depth, tier and queue. */
interface Choice {
  depth: number;
  tier: number;
  i: number;
  queue: number;
}

function resetChoice(t: Choice): void {
  t.depth = 0;
  t.tier = -1;
  t.i = -1;
  t.queue = Infinity;
}

/** How far over the load bound (× c) a deeper, cheaper warm replica may still be chosen. */
const HARD_BOUND = 2;

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
  const adapterKeys = new Map<string, bigint>();
  // Scratch, valid during one place() call. Per-candidate numbers live in typed
  // arrays so the passes after the first do not chase replica → state pointers.
  let cands: Replica[] = [];
  let load = new Float64Array(64);
  let wt = new Float64Array(64);
  let kvFree = new Float64Array(64);
  let queue = new Float64Array(64);
  let depth = new Int32Array(64);
  let candOf = new Int32Array(64); // slot → candidate index, valid when stampOf[slot] === stamp
  let stampOf = new Uint32Array(64);
  let stamp = 0;
  const warmChoice: Choice = { depth: 0, tier: -1, i: -1, queue: Infinity };
  const hardChoice: Choice = { depth: 0, tier: -1, i: -1, queue: Infinity };

  /** Keeps the deepest match; ties → higher adapter tier, then shorter queue, then lower id. */
  function offer(t: Choice, i: number, d: number, tier: number, qd: number): void {
    if (d < t.depth) return;
    if (d > t.depth || tier > t.tier) {
      t.depth = d;
      t.tier = tier;
    } else if (tier < t.tier || qd > t.queue || (qd === t.queue && cands[i]!.id >= cands[t.i]!.id)) return;
    t.i = i;
    t.queue = qd;
  }

  function ensure(slots: number, members: number): void {
    if (load.length < members) {
      const m = Math.max(members, load.length * 2);
      load = new Float64Array(m);
      wt = new Float64Array(m);
      kvFree = new Float64Array(m);
      queue = new Float64Array(m);
      depth = new Int32Array(m);
      cands = new Array<Replica>(m);
    }
    if (candOf.length < slots) {
      const m = Math.max(slots, candOf.length * 2);
      candOf = new Int32Array(m);
      stampOf = new Uint32Array(m);
      stamp = 0;
    }
  }

  function place(req: PlacementRequest, view: FleetView, local: LocalState): Placement {
    const info = req.info;
    const g = view.group(info.model, info.adapter);
    if (g === undefined) return NO_REPLICA;
    ensure(view.bySlot.length, g.members.length);
    stamp = (stamp + 1) >>> 0;
    if (stamp === 0) {
      stampOf.fill(0);
      stamp = 1;
    }

    // 0. One pass: eligibility, load, weight, KV free space.
    let n = 0;
    let total = 0;
    let weight = 0;
    for (const r of g.members) {
      if (!eligible(r, req, view, local)) continue;
      const s = r.state;
      const a = local.addedTokens(r);
      const l = s.load.inflightTokens + a;
      const kv = s.capacity.kvTokens;
      cands[n] = r;
      load[n] = l;
      wt[n] = s.capacity.weight;
      kvFree[n] = kv <= 0 ? Infinity : kv - s.load.kvUsedTokens - a;
      queue[n] = s.load.prefillTokens + a;
      depth[n] = 0;
      candOf[r.slot] = n;
      stampOf[r.slot] = stamp;
      total += l;
      weight += s.capacity.weight;
      n++;
    }
    if (n === 0) return NO_REPLICA;
    const idx = (r: Replica): number => (stampOf[r.slot] === stamp ? candOf[r.slot]! : -1);

    // The bound is counted in units of this request's work, so its ceil() admits at least one
    // request of this size (as the count-based rule does); below the floor a replica is not busy at all.
    // The floor scales with the request: two requests' worth of work is never "busy".
    const unit = Math.max(1, info.promptTokens + info.maxTokens);
    const within = (i: number, factor = c): boolean =>
      withinBound({ load: load[i]!, weight: wt[i]!, totalLoad: total, totalWeight: weight, cost: unit, factor, floor });
    const work = (i: number): number => Math.max(0, info.promptTokens - Math.floor(depth[i]! * tokensPerChunk)) + info.maxTokens;
    const headroom = (i: number): boolean => kvFree[i]! >= work(i);
    const ok = (i: number): boolean => within(i) && headroom(i);
    const pick = (i: number, branch: Branch): Placement => ({ replica: cands[i]!, branch, work: work(i) });

    if (info.kind === 'embedding') return leastLoaded(n, info.adapter, headroom, pick);

    // Warmth: digest index and optimistic overlay, both O(matched depth + holders).
    view.scanWarmth(info.hashes);
    for (const slot of view.warmSlots) if (stampOf[slot] === stamp) depth[candOf[slot]!] = view.depthOf(slot);
    local.scanOverlay(info.hashes, req.now);
    for (const slot of local.overlaySlots) {
      if (stampOf[slot] !== stamp) continue;
      const i = candOf[slot]!;
      const d = local.overlayDepthOf(slot);
      if (d > depth[i]!) depth[i] = d;
    }

    // 1. warm: the deepest match within the bound with headroom; ties → adapter tier, then the
    // shortest prefill queue (published prefillTokens + this router's work since), then id — so a
    // prefix warm everywhere (a common system prompt) spreads, and every router breaks ties alike.
    // Depth beats queue: measured, trading locality for a shorter queue loses more cache hits
    // (and so prefill capacity) than it saves.
    // One scan of the warm replicas feeds two choices: within the bound (`warm`) and within
    // HARD_BOUND × c (`deeper`: a deeper replica just over the bound still wins when it is
    // cheaper — its prefill queue plus the little it lacks, against the whole remainder
    // elsewhere; without it, a long conversation is re-prefilled on a shallower replica whenever
    // its home is busy). The bound is monotone in c, so every `warm` candidate is a `deeper` one.
    const hardOk = (i: number): boolean => headroom(i) && within(i, c * HARD_BOUND);
    resetChoice(warmChoice);
    resetChoice(hardChoice);
    const consider = (slot: number): void => {
      if (stampOf[slot] !== stamp) return;
      const i = candOf[slot]!;
      const d = depth[i]!;
      if (d === 0 || d < warmChoice.depth || !hardOk(i)) return;
      const tier = adapterTier(cands[i]!, info.adapter);
      const qd = queue[i]! / wt[i]!;
      offer(hardChoice, i, d, tier, qd);
      if (within(i)) offer(warmChoice, i, d, tier, qd);
    };
    for (const slot of view.warmSlots) consider(slot);
    for (const slot of local.overlaySlots) consider(slot);
    // An explicit routing key (a fan-out's calls, a session) breaks ties by the key's ring
    // order instead: every router then sends the key's simultaneous calls to the same
    // replica, before any of them can see the others' work.
    const settle = (t: Choice, admit: (i: number) => boolean): number => {
      if (t.i < 0 || info.routingKey === undefined) return t.i;
      const tied = (i: number) => depth[i] === t.depth && adapterTier(cands[i]!, info.adapter) === t.tier && admit(i);
      if (t.depth * tokensPerChunk < 0.5 * info.promptTokens) {
        // Less than half the prompt is warm anywhere: the key's own history is not on any
        // replica yet (a new task behind a shared system prompt). Its long prefill goes to the
        // least-loaded tied replica, which stalls the fewest running sessions; the key's later
        // calls follow it by depth (fanout, DES, seeds 1–3: TTFT p50 89/98/104 → 85/90/90 ms).
        let best = t.i;
        for (let i = 0; i < n; i++) if (tied(i) && load[i]! / wt[i]! < load[best]! / wt[best]!) best = i;
        return best;
      }
      const home = walk(g, req.key, idx, tied);
      return home?.i ?? t.i;
    };
    const warm = settle(warmChoice, ok);
    const deeper = settle(hardChoice, hardOk);
    const prefillCost = (i: number): number => queue[i]! + Math.max(0, info.promptTokens - depth[i]! * tokensPerChunk);
    // Balance: a prefix warm on several replicas (a system prompt) costs little to warm once
    // more. When the chosen holder is over its share of the fleet's work and some replica is
    // under its share by the factor c, the first such replica in the key's ring order takes the
    // request, and the prefix's warm set grows; without it the bound (c × share) lets the
    // holders absorb everything and a replica the prefix never reached idles (chat, 8
    // replicas: one replica got no request at all; with it, TTFT p50 70 → 59 ms, DES). A
    // prefix warm on one replica only (a session's history) stays home: re-prefilling it
    // elsewhere costs more than it saves; so does a request with an explicit routing key,
    // which asks for affinity (fanout: balancing a fan-out's calls raised its p50 from 89 to
    // 109 ms, DES).
    const balanceTarget = (w: number): number => {
      const share = total / weight;
      if (info.routingKey !== undefined || underFloor({ load: load[w]!, weight: wt[w]!, cost: unit, floor }) || load[w]! / wt[w]! <= share) return -1;
      let holders = 0;
      for (let i = 0; i < n; i++) if (depth[i]! >= depth[w]!) holders++;
      if (holders < 2) return -1;
      const tier = adapterTier(cands[w]!, info.adapter);
      const u = walk(g, req.key, idx, (i) => load[i]! * c < share * wt[i]! && depth[i]! < depth[w]! && headroom(i) && adapterTier(cands[i]!, info.adapter) >= tier);
      return u?.i ?? -1;
    };
    // The key's ring walk, computed at most once (the comparison below and step 2 both need it).
    let ringHit: { i: number; rank: number } | undefined | null = null;
    const ringWalk = () => (ringHit === null ? (ringHit = walk(g, req.key, idx, ok)) : ringHit);
    if (deeper >= 0 && deeper !== warm && depth[deeper]! > (warm >= 0 ? depth[warm]! : 0)) {
      const alt = warm >= 0 ? warm : info.adapter === '' ? (ringWalk()?.i ?? -1) : -1;
      if (alt < 0 || prefillCost(deeper) <= prefillCost(alt)) return pick(deeper, 'warm');
    }
    if (warm >= 0) {
      // An adapter loaded elsewhere beats a warm prefix where it is not: a load costs about
      // 200 ms and may wait for a slot to drain, far more than a short prefix saves. A hot
      // replica up to HARD_BOUND × c over the bound takes it (lora, DES, seeds 1–3: TTFT p99
      // 357/462/254 → 247/322/249 ms, adapter loads 152/141/167 → 155/128/141).
      if (info.adapter !== '' && adapterTier(cands[warm]!, info.adapter) < TIER_HOT) {
        const hot = walk(g, req.key, idx, (i) => adapterTier(cands[i]!, info.adapter) === TIER_HOT && hardOk(i));
        if (hot !== undefined) return pick(hot.i, 'adapter-hot');
      }
      const u = balanceTarget(warm);
      return u >= 0 ? pick(u, 'balance') : pick(warm, 'warm');
    }

    // 2. ring order within the bound
    if (info.adapter === '') {
      const hit = ringWalk();
      if (hit !== undefined) {
        // Two choices on the ring: the next admissible member takes a cold prompt when its
        // published prefill queue is shorter (a request with a routing key keeps to its home).
        // Locality holds — the prefix lands on one of two stable replicas and the digests find
        // it — and a long prompt no longer waits behind another on a busy home (Mooncake trace,
        // DES: TTFT p99 2,313 → 2,083 ms). Published numbers only, so every router decides
        // alike: with this router's own recent work added, 4 routers split prefixes between
        // the two and lost 2.7% of the hit rate of 1 router (38.7 → 37.7%).
        if (info.routingKey === undefined) {
          const next = walk(g, req.key, idx, (i) => i !== hit.i && ok(i));
          const published = (i: number) => cands[i]!.state.load.prefillTokens / wt[i]!;
          if (next !== undefined && published(next.i) < published(hit.i)) return pick(next.i, 'spill');
        }
        return pick(hit.i, hit.rank === 0 ? 'ring' : 'spill');
      }
    } else {
      const hot = walk(g, req.key, idx, (i) => adapterTier(cands[i]!, info.adapter) === TIER_HOT && ok(i));
      if (hot !== undefined) return pick(hot.i, 'adapter-hot');
      let akey = adapterKeys.get(info.adapter);
      if (akey === undefined) {
        akey = hashString(`adapter\u0000${info.model}\u0000${info.adapter}`);
        if (adapterKeys.size > 10_000) adapterKeys.clear();
        adapterKeys.set(info.adapter, akey);
      }
      const any = walk(g, akey, idx, (i) => adapterTier(cands[i]!, info.adapter) >= TIER_FREE && ok(i)) ?? walk(g, akey, idx, ok);
      if (any !== undefined) return pick(any.i, any.rank === 0 ? 'adapter-home' : 'adapter-spill');
    }

    // 3. least-loaded with headroom
    return leastLoaded(n, info.adapter, headroom, pick);
  }

  function leastLoaded(n: number, adapter: string, headroom: (i: number) => boolean, pick: (i: number, b: Branch) => Placement): Placement {
    let best = -1;
    let bestLoad = Infinity;
    let bestTier = -1;
    for (let i = 0; i < n; i++) {
      if (!headroom(i)) continue;
      const l = load[i]! / wt[i]!;
      if (l > bestLoad) continue;
      const tier = adapter === '' ? TIER_HOT : adapterTier(cands[i]!, adapter);
      if (l < bestLoad || tier > bestTier) {
        best = i;
        bestLoad = l;
        bestTier = tier;
      }
    }
    return best < 0 ? SATURATED : pick(best, 'least-loaded');
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
 * The first candidate in the ring order of `key` that passes `ok`; rank counts
 * candidates passed over (0 = the first candidate in ring order, the key's home).
 */
function walk(g: Group, key: bigint, idx: (r: Replica) => number, ok: (i: number) => boolean): { i: number; rank: number } | undefined {
  let rank = 0;
  for (const m of g.ring.walk(key)) {
    const r = g.byId.get(m.id);
    const i = r === undefined ? -1 : idx(r);
    if (i < 0) continue;
    if (ok(i)) return { i, rank };
    rank++;
  }
  return undefined;
}
