/**
 * Prefill/decode pairs (docs/DISAGGREGATION.md): where a request of a
 * disaggregated fleet prefills and where it decodes, decided per request.
 *
 * Steps:
 *  1. Aggregated fleet (no member of the request's group publishes a role
 *     other than `both`): the policy's placement, exactly as without this
 *     module.
 *  2. Prefill: the policy's own placement (warmpath: warmth, prefill queue,
 *     its load bound) over the prefill-capable replicas (`prefill`, `both`).
 *  3. Decode: over the decode-capable replicas (`decode`, `both`) with KV
 *     room for what they lack of the prompt and the output, the least cost of
 *       (load + expected + lacks) / weight + lacks × pdTransferCost × zone,
 *     (expected: the work other routers likely sent since the replica's
 *     report, for a policy that estimates it: Candidate.expected),
 *     where lacks is the prompt tokens the replica does not hold (its
 *     warmth), the tokens the transfer carries, and zone is 0 on the prefill
 *     replica itself, 0.1 within the prefill replica's zone (or when either
 *     zone is unknown), 1 across. What a replica lacks lands in its KV and
 *     stays there for the leg's life, while a decode leg's load counts its
 *     output alone: without it a replica holding the prompt's document and
 *     one that would hold a second copy of it look alike, and the decode
 *     pool's KV, which bounds it, fills with copies.
 *  4. Conditional disaggregation: when the chosen decode replica lacks at
 *     most pdThresholdTokens of the prompt (a short prompt, or its prefix is
 *     already there), it prefills itself: one leg, no transfer. So does a
 *     `both` replica chosen for both legs, or a fleet left with one pool.
 *     By load, one it lacks more of too, when the prefill replica's queue
 *     is longer than its own and this router's ITL budget covers the stall
 *     its chunks cause the streams there (stalls.ts).
 *  5. A decode leg refused after its prefill finished (req.transfer): step 3
 *     alone, given that prefill replica, and the same transfer to the chosen
 *     replica (the prefill is not run again). Such a refusal spends no
 *     attempt and excludes no replica (the refusal rule holds that one full
 *     until its next report): its prompt's KV is computed, only a decode
 *     replica with room is missing, so the request waits in the router's
 *     queue for a change (a report, a completion), as an engine queues a
 *     leg it has no KV for, until queueTimeoutMs from its first wait.
 *     Spending attempts instead shed such a request after a few refusals
 *     within moments, while the pool frees KV within seconds. When no
 *     decode replica has KV room, it waits there too (saturated); with no
 *     decode candidate left, the pair is placed afresh.
 * Complexity: two candidate tables and warmth scans per disaggregated
 * request, O(group members + matched depth); aggregated ones pay one scan of
 * the group's roles.
 * Trade-off: the prefill replica is chosen first (warmth is worth most
 * there) and the decode replica given it; the pair is not optimised jointly.
 * A policy with its own P/D rule (Policy.pd: the benchmark's emulations of
 * the peers' P/D) is paired by that rule instead (placeByRule).
 */
import type { FleetView, Replica } from '../fleet/view.ts';
import type { LocalState, Ticket } from '../core/local.ts';
import type { RequestInfo } from '@warmpath/shared/wire';
import type { Clock } from '@warmpath/shared/runtime';
import { buildCandidates, rowOf, scanWarmth } from './candidates.ts';
import { notifyDispatch, placeRequest } from './place.ts';
import { localPrefill, stallsOf } from './stalls.ts';
import {
  SATURATED,
  type PdRule,
  type Placement,
  type PlacementRequest,
  type Policy,
  type Transferred,
} from './types.ts';

export interface PairSettings {
  readonly pdThresholdTokens: number;
  readonly pdTransferCost: number;
  readonly pdStallShare: number;
  readonly pdChunkTokens: number;
  readonly pdItlTargetMs: number;
  readonly chunkChars: number;
  readonly charsPerToken: number;
}

/** How a disaggregated fleet serves the request: `transfer` (prefill there, KV to the decode replica) or `local` (the decode replica prefills). */
export const PD_MODES = ['transfer', 'local'] as const;
export type PdMode = (typeof PD_MODES)[number];

/** Why: `redecode` (the prefill is done, another decode replica refused its decode leg: step 5), `split` (the prompt is worth a transfer), `short` (the whole prompt is under the threshold), `cached` (the decode replica lacks little of it), `load` (the prefill pool queues longer and the ITL budget allows: stalls.ts), `same` (one `both` replica took both legs), `one-pool` (only one pool has a candidate). */
export type PdReason = 'split' | 'short' | 'cached' | 'load' | 'same' | 'one-pool' | 'redecode';

export interface PdDecision {
  readonly mode: PdMode;
  readonly by: PdReason;
  /** The prefill replica of a transfer. */
  readonly prefill: Replica | undefined;
  /** The replica that answers the client (decodes). */
  readonly decode: Replica;
  /** Prompt tokens the KV transfer carries (0 without one). */
  readonly transferTokens: number;
  /** The prefill leg's work on the prefill replica, tokens. */
  readonly prefillWork: number;
  /** `redecode`: the finished prefill's transfer; no prefill leg is sent. */
  readonly transfer?: Transferred;
}

/** A placement and, in a disaggregated fleet, the pair behind it (placement.replica is the decode replica). */
export interface PairPlacement {
  readonly placement: Placement;
  readonly pd: PdDecision | undefined;
}

/** Does the request's group hold a replica with a prefill or decode role? */
export function disaggregated(view: FleetView, req: PlacementRequest): boolean {
  const g = view.group(req.info.model, req.info.adapter);
  if (g === undefined) return false;
  for (const r of g.members) if (r.state.role === 'prefill' || r.state.role === 'decode') return true;
  return false;
}

/**
 * The request as one leg: members of `role` are no candidates. Not as
 * exclusions: those are replicas already tried, which a policy may read as
 * a refusal (warmpath's retry step) — with the leg's other pool among them
 * every first attempt would look like a retry.
 */
function withoutRole(req: PlacementRequest, role: 'prefill' | 'decode'): PlacementRequest {
  return { ...req, without: role };
}

const zoneOf = (r: Replica): string => r.state.zone ?? '';

/** The zone factor of a transfer from `from` to `to`: none to itself, a tenth within a zone (or unknown), whole across zones. */
function zoneFactor(from: Replica, to: Replica): number {
  if (from.id === to.id) return 0;
  const a = zoneOf(from);
  const b = zoneOf(to);
  return a === '' || b === '' || a === b ? 0.1 : 1;
}

interface DecodePick {
  readonly replica: Replica;
  /** Prompt tokens it lacks. */
  readonly lacks: number;
  /** Has it KV room for the request (in this router's view)? */
  readonly room: boolean;
}

/** Step 3: the decode replica, given the prefill replica (undefined: none). */
function pickDecode(
  req: PlacementRequest,
  view: FleetView,
  local: LocalState,
  prefill: Replica | undefined,
  s: PairSettings,
  expectOthers: boolean,
): DecodePick | undefined {
  const dreq = withoutRole(req, 'prefill');
  const table = buildCandidates(dreq, view, local, expectOthers);
  if (table === undefined) return undefined;
  const warmth = scanWarmth(dreq, table, view, local);
  const info = req.info;
  let best: DecodePick | undefined;
  let bestCost = Infinity;
  let bestRoom = false;
  for (let i = 0; i < table.rows.length; i++) {
    const row = table.rows[i]!;
    const depth = Math.max(warmth.digest[i]!, warmth.overlay[i]!);
    const lacks = Math.max(0, info.promptTokens - (depth * s.chunkChars) / s.charsPerToken);
    const zone = prefill === undefined ? 0 : zoneFactor(prefill, row.replica);
    const cost = (row.load + row.expected + lacks) / row.weight + lacks * s.pdTransferCost * zone;
    // The agent's admission needs room for what is not cached there (admission.ts): the prompt it lacks and the output.
    const room = row.kvFree >= lacks + info.maxTokens;
    // Room first: a replica without KV room for the request only when none has it.
    if ((room && !bestRoom) || (room === bestRoom && cost < bestCost)) {
      best = { replica: row.replica, lacks, room };
      bestCost = cost;
      bestRoom = room;
    }
  }
  return best;
}

/** Step 4: a one-leg decision on `decode` (the prefill placement's work estimate and queue limit were the prefill replica's: dropped). */
function localOn(p: Placement & { replica: Replica }, decode: Replica, by: PdReason): PairPlacement {
  return {
    placement: {
      replica: decode,
      branch: p.branch,
      ...(p.step !== undefined ? { step: p.step } : {}),
      ...(p.by !== undefined ? { by: p.by } : {}),
    },
    pd: { mode: 'local', by, prefill: undefined, decode, transferTokens: 0, prefillWork: 0 },
  };
}

/** The pair for `req` (module header); `placement.replica` is where the client's answer comes from. */
/** placePair, timed when `observe` is given (seconds). */
export function placePairTimed(
  policy: Policy,
  req: PlacementRequest,
  view: FleetView,
  local: LocalState,
  s: PairSettings,
  observe: ((seconds: number) => void) | undefined,
): PairPlacement {
  const t0 = performance.now();
  const placed = placePair(policy, req, view, local, s);
  observe?.((performance.now() - t0) / 1e3);
  return placed;
}

export function placePair(
  policy: Policy,
  req: PlacementRequest,
  view: FleetView,
  local: LocalState,
  s: PairSettings,
): PairPlacement {
  if (!disaggregated(view, req)) return { placement: placeRequest(policy, req, view, local), pd: undefined };
  if (policy.pd !== undefined) return placeByRule(policy, policy.pd, req, view, local);
  if (req.transfer !== undefined) {
    const again = redecode(req, req.transfer, view, local, s, policy.expectsOthers === true);
    if (again !== undefined) return again;
  }
  const p = placeRequest(policy, withoutRole(req, 'decode'), view, local);
  const prefill = p.replica;
  const d = pickDecode(req, view, local, prefill, s, policy.expectsOthers === true);
  if (d === undefined) {
    // No decode-capable candidate: the prefill replica serves the whole request (it prefills a request without transfer fields).
    if (prefill === undefined) return { placement: p, pd: undefined };
    return localOn(p, prefill, 'one-pool');
  }
  const info = req.info;
  stallsOf(local).earn(req.now, info.maxTokens, s.pdStallShare);
  const base: Placement & { replica: Replica } =
    prefill !== undefined ? p : { replica: d.replica, branch: 'least-loaded', step: 'least-loaded' };
  if (prefill === undefined) return localOn(base, d.replica, 'one-pool');
  if (prefill.id === d.replica.id)
    return {
      placement: p,
      pd: { mode: 'local', by: 'same', prefill: undefined, decode: prefill, transferTokens: 0, prefillWork: 0 },
    };
  const under = info.promptTokens <= s.pdThresholdTokens || d.lacks <= s.pdThresholdTokens;
  if ((d.room || under) && localPrefill(local, req.now, prefill, d.replica, d.lacks, s, under))
    return localOn(base, d.replica, info.promptTokens <= s.pdThresholdTokens ? 'short' : under ? 'cached' : 'load');
  // The decode replica computes no prompt (its KV arrives): its work is the output; the prefill placement's queue limit was the prefill replica's.
  return {
    placement: {
      replica: d.replica,
      branch: p.branch,
      work: info.maxTokens,
      kv: info.maxTokens + Math.round(d.lacks),
      ...(p.step !== undefined ? { step: p.step } : {}),
      ...(p.by !== undefined ? { by: p.by } : {}),
    },
    pd: {
      mode: 'transfer',
      by: 'split',
      prefill,
      decode: d.replica,
      transferTokens: Math.round(d.lacks),
      prefillWork: (p.work ?? info.promptTokens + info.maxTokens) - info.maxTokens + 1,
    },
  };
}

/** Step 5: the decode leg alone on another decode replica, with the finished prefill's transfer. */
function redecode(
  req: PlacementRequest,
  t: Transferred,
  view: FleetView,
  local: LocalState,
  s: PairSettings,
  expectOthers: boolean,
): PairPlacement | undefined {
  const d = pickDecode(req, view, local, t.prefill, s, expectOthers);
  if (d === undefined) return undefined;
  if (!d.room) return { placement: SATURATED, pd: undefined };
  const out = req.info.maxTokens;
  return {
    placement: {
      replica: d.replica,
      branch: 'least-loaded',
      step: 'redecode',
      work: out,
      kv: out + Math.round(d.lacks),
    },
    pd: {
      mode: 'transfer',
      by: 'redecode',
      prefill: t.prefill,
      decode: d.replica,
      transferTokens: Math.round(d.lacks),
      prefillWork: 0,
      transfer: t,
    },
  };
}

/**
 * A peer's P/D rule (Policy.pd), decode first: the decode replica by the
 * policy's select over the decode-capable replicas, the rule's decider on
 * what that replica lacks, then the prefill replica by the rule (or the
 * policy's select) over the prefill-capable ones. No zone weighs in: the
 * peers' defaults have none.
 */
function placeByRule(
  policy: Policy,
  rule: PdRule,
  req: PlacementRequest,
  view: FleetView,
  local: LocalState,
): PairPlacement {
  const info = req.info;
  const dreq = withoutRole(req, 'prefill');
  const preq = withoutRole(req, 'decode');
  const dt = buildCandidates(dreq, view, local);
  if (dt === undefined) {
    const p = placeRequest(policy, preq, view, local);
    return p.replica === undefined ? { placement: p, pd: undefined } : localOn(p, p.replica, 'one-pool');
  }
  const dw = scanWarmth(dreq, dt, view, local);
  const d = policy.select(dreq, dt, dw);
  if (d.replica === undefined) return { placement: d, pd: undefined };
  const uncached = rule.uncached(dreq, dt, rowOf(dt, d.replica.id), dw);
  // The tables share one store: the decode table is read no more past this line.
  const pt = buildCandidates(preq, view, local);
  if (pt === undefined) return localOn(d, d.replica, 'one-pool');
  if (!rule.remote(preq, uncached, pt))
    return localOn(d, d.replica, uncached >= info.promptTokens ? 'short' : 'cached');
  const pw = scanWarmth(preq, pt, view, local);
  const p = rule.prefill !== undefined ? rule.prefill(preq, pt, pw) : policy.select(preq, pt, pw);
  if (p.replica === undefined) return localOn(d, d.replica, 'one-pool');
  if (p.replica.id === d.replica.id)
    return {
      placement: d,
      pd: { mode: 'local', by: 'same', prefill: undefined, decode: d.replica, transferTokens: 0, prefillWork: 0 },
    };
  return {
    placement: { replica: d.replica, branch: d.branch, work: info.maxTokens },
    pd: {
      mode: 'transfer',
      by: 'split',
      prefill: p.replica,
      decode: d.replica,
      transferTokens: Math.round(uncached),
      prefillWork: info.promptTokens + 1,
    },
  };
}

/**
 * Records a placed request on its replica: its work (default promptTokens + maxTokens) in the load, and
 * the KV it takes there in the free KV (default its work; a decode leg's work is its output, its KV the
 * transferred prompt too), until the replica's report counts it.
 */
export function dispatchPlaced(
  local: LocalState,
  placement: Placement & { replica: Replica },
  info: RequestInfo,
  now: number,
): Ticket {
  return local.dispatch(placement.replica.id, placement.work ?? info.promptTokens + info.maxTokens, now, placement.kv);
}

/**
 * A transfer's prefill leg: its work counted on the prefill replica (and
 * the prefix in the overlay there) until the leg ends, once; the decode
 * replica is told of the prefix only when the leg succeeded (a failed leg
 * brought it no KV, and the retry must not find it warm). Undefined when
 * the attempt sends no prefill leg (one leg, or a redecode: step 5).
 */
export function openPrefillLeg(
  policy: Policy,
  local: LocalState,
  clock: Clock,
  preq: PlacementRequest,
  pd: PdDecision | undefined,
  decode: Replica,
): { replica: Replica; done: (ok: boolean) => void } | undefined {
  // No prefill leg: one leg, or a redecode (its prefill is done).
  if (pd?.prefill === undefined || pd.transfer !== undefined) return undefined;
  const leg = { prefill: pd.prefill, work: pd.prefillWork, decode };
  const ticket = local.dispatch(leg.prefill.id, leg.work, preq.now);
  notifyDispatch(policy, preq, leg.prefill, local);
  let open = true;
  const done = (ok: boolean): void => {
    if (!open) return;
    open = false;
    local.complete(ticket, clock.now());
    if (ok) notifyDispatch(policy, preq, leg.decode, local);
  };
  return { replica: leg.prefill, done };
}
