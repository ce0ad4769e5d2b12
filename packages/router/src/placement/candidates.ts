/**
 * The candidate table: everything a policy may read about one request's
 * candidates, built once per request before any policy looks at it.
 *
 * Steps: take the request's (model, adapter) group; keep the members
 * `eligible` admits, in group order; per row, the published load (read from
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
 * Trade-off: rows are plain objects built afresh per request — a few
 * microseconds per hundred replicas — so a policy cannot leave state in them
 * and two policies can read one table.
 */
import { endpointBit } from '../fleet/published.ts';
import type { FleetView, Replica } from '../fleet/view.ts';
import { eligibleHere } from './eligible.ts';
import type { LocalState } from './local.ts';
import type { Candidate, CandidateTable, PlacementRequest, Warmth } from './types.ts';

export type { Candidate, CandidateTable, Warmth } from './types.ts';

/** The longest report age the expected work of other routers extrapolates over, ms. */
export const MAX_EXPECT_AGE_MS = 1_000;

/**
 * The table for `req` (eligibility is applied here, once), or undefined when
 * no replica is eligible. `expectOthers`: fill Candidate.expected, the work
 * other routers likely sent since each report, and count it in the queue.
 * N is this router's last estimate (the one made at its previous request).
 */
export function buildCandidates(req: PlacementRequest, view: FleetView, local: LocalState, expectOthers = false): CandidateTable | undefined {
  const g = view.group(req.info.model, req.info.adapter);
  if (g === undefined) return undefined;
  const rows: Candidate[] = [];
  // Slot-indexed rather than a Map by id: a few µs instead of tens at hundreds of replicas.
  const rowOfSlot = new Array<number>(view.bySlot.length).fill(-1);
  let totalLoad = 0;
  let totalWeight = 0;
  let published = 0;
  let own = 0;
  const c = view.columns;
  // The share of the fleet's traffic that is not this router's, by the last estimate (0 with one router).
  const othersShare = expectOthers ? 1 - 1 / Math.max(1, Math.round(local.routers)) : 0;
  const bit = endpointBit(req.endpoint);
  const slots = g.memberSlots;
  for (let m = 0; m < slots.length; m++) {
    // `eligible`, in two halves: the published state's from the columns, then the request's and this router's.
    const slot = slots[m]!;
    if (!view.placeable(slot, bit, req.now)) continue;
    const r = g.members[m]!;
    if (!eligibleHere(r, req, local)) continue;
    const f = local.figures(r);
    const added = f.added;
    const prefill = c.prefillTokens[slot]!;
    // What an agent's stale refusal said is queued there beyond this view: other routers' work, until the next report.
    const unseen = Math.max(0, f.queued - prefill - added);
    const expected = othersShare > 0 ? (othersShare * c.arrival[slot]! * Math.min(MAX_EXPECT_AGE_MS, Math.max(0, req.now - r.reportAt))) / 1000 : 0;
    const load = c.inflightTokens[slot]! + added + unseen;
    const kv = c.kvTokens[slot]!;
    const weight = c.weight[slot]!;
    rowOfSlot[slot] = rows.length;
    rows.push({
      replica: r,
      load,
      added,
      weight,
      kvFree: kv <= 0 ? Infinity : kv - c.kvUsedTokens[slot]! - added,
      queue: prefill + added + unseen + expected,
      inflight: f.inflight,
      expected,
    });
    totalLoad += load;
    totalWeight += weight;
    published += c.inflight[slot]!;
    own += f.reported;
  }
  if (rows.length === 0) return undefined;
  const routers = local.routersEstimate(published, own, req.now);
  return { rows, totalLoad, totalWeight, routers, ring: g.ring, members: g.byId, ringSlots: g.ringSlots, rowOfSlot };
}

/** Warmth of every row: one scan of the digest index, one of the overlay. */
export function scanWarmth(req: PlacementRequest, table: CandidateTable, view: FleetView, local: LocalState): Warmth {
  const n = table.rows.length;
  const digest = new Array<number>(n).fill(0);
  const overlay = new Array<number>(n).fill(0);
  const hashes = req.info.hashes;
  view.scanWarmth(hashes);
  for (const slot of view.warmSlots) {
    const i = table.rowOfSlot[slot] ?? -1;
    if (i >= 0) digest[i] = view.depthOf(slot);
  }
  local.scanOverlay(hashes, req.now);
  for (const slot of local.overlaySlots) {
    const i = table.rowOfSlot[slot] ?? -1;
    if (i >= 0) overlay[i] = local.overlayDepthOf(slot);
  }
  return { digest, overlay };
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
export function firstInRing(table: CandidateTable, key: bigint, ok: (i: number) => boolean): { i: number; rank: number } | undefined {
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
