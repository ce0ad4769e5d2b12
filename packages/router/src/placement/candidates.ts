/**
 * The candidate table: everything a policy may read about one request's
 * candidates, built once per request before any policy looks at it.
 *
 * Steps: take the request's (model, adapter) group; keep the members
 * `eligible` admits (and, for one leg of a disaggregated request, those
 * whose role serves it: PlacementRequest.without; with an interactive
 * reserve in force, those of the request's side: reserve.ts), in group order, less those this router holds full
 * since an agent's refusal (the refusal rule, core/refusals.ts); per row, the published load (read from
 * the view's columns by slot, not from each replica's state object) plus the
 * work this router sent since that report (and what a stale refusal since
 * said other routers queued there, and for a policy that asks, the work
 * other routers likely sent since: `expected`), weight, KV free tokens,
 * prefill queue and this router's in-flight count; sums of load and weight; how many
 * routers' worth of traffic the fleet carries per request of this router's
 * (LocalState.routersEstimate over the rows' published and own in-flight
 * requests). Then
 * warmth: the matched chain depth per row from the digest index and,
 * separately, from this router's optimistic overlay.
 * Complexity: O(group members) for the rows + O(matched depth + holders) for
 * each warmth scan; a ring walk is O(log P) + the steps to the first member
 * a policy accepts.
 * Trade-off: a router's tables reuse one store (rows, the slot index, the
 * warmth arrays), overwritten by its next request: at 1,000 replicas fresh
 * row objects are a large share of a table's cost (docs/SCALE.md). So a table
 * is valid until the same router places its next request — policies are
 * pure and read it only within select — and two policies can still read one
 * table.
 */
import { expectedSince } from '@warmpath/shared/wire';
import { endpointBit } from '../fleet/published.ts';
import type { FleetView, Replica } from '../fleet/view.ts';
import { eligibleHere } from './eligible.ts';
import { reservedSlots, sharedSlot, sharedTakes } from './reserve.ts';
import type { LocalState } from '../core/local.ts';
import type { Candidate, CandidateTable, PlacementRequest, Warmth } from './types.ts';

export type { Candidate, CandidateTable, Warmth } from './types.ts';

/** The longest report age the expected work of other routers extrapolates over, ms (shared protocol.ts). */
export { MAX_EXPECT_AGE_MS } from '@warmpath/shared/wire';

/** A row as the table's builder writes it. */
type Row = { -readonly [K in keyof Candidate]: Candidate[K] };

/** One router's reused table storage (keyed by its LocalState). */
interface Store {
  /** Row objects, overwritten in place by each build. */
  readonly pool: Row[];
  /** The rows of the current table: the first `length` of pool. */
  readonly rows: Candidate[];
  rowOfSlot: Int32Array;
  /** Slots the current rows occupy in rowOfSlot (reset by the next build). */
  readonly slots: number[];
  readonly digest: number[];
  readonly gpu: number[];
  readonly overlay: number[];
  readonly warm: number[];
}

const stores = new WeakMap<LocalState, Store>();

function storeOf(local: LocalState, slots: number): Store {
  let s = stores.get(local);
  if (s === undefined) {
    s = {
      pool: [],
      rows: [],
      rowOfSlot: new Int32Array(64).fill(-1),
      slots: [],
      digest: [],
      gpu: [],
      overlay: [],
      warm: [],
    };
    stores.set(local, s);
  }
  for (const slot of s.slots) s.rowOfSlot[slot] = -1;
  s.slots.length = 0;
  s.rows.length = 0;
  if (s.rowOfSlot.length < slots) s.rowOfSlot = new Int32Array(Math.max(slots, 2 * s.rowOfSlot.length)).fill(-1);
  return s;
}

/**
 * The table for `req` (eligibility is applied here, once), or undefined when
 * no replica is eligible. `expectOthers`: fill Candidate.expected, the work
 * other routers likely sent since each report, and count it in the queue.
 * N is this router's last estimate (the one made at its previous request).
 */
export function buildCandidates(
  req: PlacementRequest,
  view: FleetView,
  local: LocalState,
  expectOthers = false,
): CandidateTable | undefined {
  const g = view.group(req.info.model, req.info.adapter);
  if (g === undefined) return undefined;
  const store = storeOf(local, view.bySlot.length);
  const rows = store.rows;
  // Slot-indexed rather than a Map by id: a few µs instead of tens at hundreds of replicas.
  const rowOfSlot = store.rowOfSlot;
  let totalLoad = 0;
  let totalWeight = 0;
  let published = 0;
  let own = 0;
  const c = view.columns;
  // The share of the fleet's traffic that is not this router's, by the last estimate (0 with one router).
  const othersShare = expectOthers ? 1 - 1 / Math.max(1, Math.round(local.routers)) : 0;
  const bit = endpointBit(req.endpoint);
  const slots = g.memberSlots;
  const members = g.members;
  // Nothing of this request's or this router's excludes a replica (the common case): skip eligibleHere.
  const anyone =
    (req.exclude === undefined || req.exclude.size === 0) && local.ejected === 0 && req.without === undefined;
  const endpoints = c.endpoints;
  const receivedAt = c.receivedAt;
  const now = req.now;
  const ttl = view.stateTtlMs;
  const { reserved, onReserved, shared } = sidesOf(req, g.ring, g.ringSlots);
  for (let m = 0; m < slots.length; m++) {
    // `eligible`, in two halves: FleetView.placeable (its common case, a current state, read here from the columns), then the request's and this router's.
    const slot = slots[m]!;
    if ((endpoints[slot]! & bit) === 0 || (now - receivedAt[slot]! > ttl && !view.placeable(slot, bit, now))) continue;
    const r = members[m]!;
    if (reserved !== undefined && reserved.has(slot) !== onReserved && (slot !== shared || !lendable(req, c, local, r)))
      continue;
    if (!anyone && !eligibleHere(r, req, local)) continue;
    const reportAt = c.reportAt[slot]!;
    // Refused since its last report (the refusal rule, core/refusals.ts): full until it says otherwise.
    if (local.refusals.holds(r, now)) continue;
    const f = local.figures(r, slot, reportAt);
    const added = f.added;
    const prefill = c.prefillTokens[slot]!;
    // What an agent's stale refusal said is queued there beyond this view: other routers' work, until the next report.
    const unseen = Math.max(0, f.queued - prefill - added);
    const expected = othersShare > 0 ? expectedSince(othersShare * c.arrival[slot]!, req.now - reportAt) : 0;
    const load = c.inflightTokens[slot]! + added + unseen;
    const kv = c.kvTokens[slot]!;
    const weight = c.weight[slot]!;
    rowOfSlot[slot] = rows.length;
    store.slots.push(slot);
    let row = store.pool[rows.length];
    if (row === undefined) {
      row = { replica: r, load: 0, added: 0, weight: 0, kvFree: 0, queue: 0, inflight: 0, expected: 0, recent: 0 };
      store.pool.push(row);
    }
    row.replica = r;
    row.load = load;
    row.added = added;
    row.weight = weight;
    row.kvFree = kv <= 0 ? Infinity : kv - c.kvUsedTokens[slot]! - f.addedKv;
    row.queue = prefill + added + unseen + expected;
    row.inflight = f.inflight;
    row.expected = expected;
    row.recent = c.recent[slot]!;
    rows.push(row);
    totalLoad += load;
    totalWeight += weight;
    published += c.inflight[slot]!;
    own += f.reported;
  }
  if (rows.length === 0) return undefined;
  const routers = local.routersEstimate(published, own, req.now);
  return { rows, totalLoad, totalWeight, routers, ring: g.ring, members: g.byId, ringSlots: g.ringSlots, rowOfSlot };
}

/**
 * With an interactive reserve in force, the reserved replicas' slots, whether the request's side is
 * theirs, and the slot of the shared replica a lower-band request may also use (reserve.ts; -1: none).
 */
function sidesOf(
  req: PlacementRequest,
  ring: CandidateTable['ring'],
  ringSlots: Int32Array,
): { reserved: ReadonlySet<number> | undefined; onReserved: boolean; shared: number } {
  const reserved = req.reserve === undefined ? undefined : reservedSlots(ring, ringSlots, req.reserve.share);
  const onReserved = req.reserve?.side === 'reserved';
  const lends = !onReserved && reserved !== undefined && req.reserve?.lowerSlots !== undefined;
  return { reserved, onReserved, shared: lends ? sharedSlot(reserved) : -1 };
}

/** Whether the reserve's shared replica takes this lower-band request now (reserve.ts, sharedTakes). */
function lendable(req: PlacementRequest, c: FleetView['columns'], local: LocalState, r: Replica): boolean {
  const reportAt = c.reportAt[r.slot]!;
  const f = local.figures(r, r.slot, reportAt);
  const queued = Math.max(c.prefillTokens[r.slot]! + f.added, f.queued);
  return sharedTakes(req.reserve!, r.state.load.lowerInflight ?? 0, reportAt, queued, r.id);
}

/** Warmth of every row: one scan of the digest index, one of the overlay. */
export function scanWarmth(req: PlacementRequest, table: CandidateTable, view: FleetView, local: LocalState): Warmth {
  const n = table.rows.length;
  const store = stores.get(local)!;
  const digest = store.digest;
  const gpu = store.gpu;
  const overlay = store.overlay;
  const warm = store.warm;
  digest.length = gpu.length = overlay.length = n;
  warm.length = 0;
  digest.fill(0);
  gpu.fill(0);
  overlay.fill(0);
  const hashes = req.info.hashes;
  view.scanWarmth(hashes);
  for (const slot of view.warmSlots) {
    const i = table.rowOfSlot[slot] ?? -1;
    if (i < 0) continue;
    digest[i] = view.depthOf(slot);
    gpu[i] = view.depthOf(slot, hashes);
    if (digest[i] > 0) warm.push(i);
  }
  local.scanOverlay(hashes, req.now);
  for (const slot of local.overlaySlots) {
    const i = table.rowOfSlot[slot] ?? -1;
    if (i < 0) continue;
    overlay[i] = local.overlayDepthOf(slot);
    if (overlay[i] > 0 && digest[i] === 0) warm.push(i);
  }
  return { digest, gpu, overlay, warm };
}

/** The row of the replica with this id, or -1 when it is not a candidate. */
export function rowOf(table: CandidateTable, id: string): number {
  const r = table.members.get(id);
  return r === undefined ? -1 : (table.rowOfSlot[r.slot] ?? -1);
}

/**
 * The first row in the ring order of `key` (the key's preference list among
 * the candidates) that `ok` accepts, and its rank: how many candidates it
 * passed over (0 = the key's home among them).
 */
export function firstInRing(
  table: CandidateTable,
  key: bigint,
  ok: (i: number) => boolean,
): { i: number; rank: number } | undefined {
  let rank = 0;
  const next = table.ring.cursor(key);
  for (let m = next(); m >= 0; m = next()) {
    const i = table.rowOfSlot[table.ringSlots[m]!] ?? -1;
    if (i < 0) continue;
    if (ok(i)) return { i, rank };
    rank++;
  }
  return undefined;
}

/**
 * Matched depth (chunks) of `replica` in this router's last warmth scan:
 * the deeper of digest and overlay (the prediction a receipt carries,
 * core/receipts.ts). Valid until the router places its next request, like
 * the table; 0 when the replica was not a candidate.
 */
export function scannedDepth(local: LocalState, replica: { readonly slot: number }): number {
  const s = stores.get(local);
  if (s === undefined) return 0;
  const i = s.rowOfSlot[replica.slot] ?? -1;
  if (i < 0 || i >= s.digest.length) return 0;
  return Math.max(s.digest[i]!, s.overlay[i]!);
}
