/**
 * The plain load balancers users would otherwise run (docs/PEERS.md), behind
 * the same interface. Each learns only from this router's own decisions
 * (LocalState in-flight counts), like separate nginx/HAProxy instances do.
 *
 * - round-robin: rotate over eligible replicas (sorted by id). O(n).
 * - random: a uniformly random eligible replica. O(1).
 * - least-request: fewest in-flight at this router; ties rotate. O(n).
 * - power-of-two: two distinct random candidates, the one with fewer
 *   in-flight. O(n) to collect candidates, O(1) to choose.
 * - consistent-hash: nginx `hash $http_x_session_id consistent` — the
 *   session's first candidate in ring order, no load bound ("chash-home").
 *   O(log P + walk).
 * - chwbl-header: HAProxy `balance hdr(X-Session-Id)` + `hash-type
 *   consistent` + `hash-balance-factor 125`, consistent hashing with bounded
 *   loads (Mirrokni, Thorup, Zadimoghaddam): the first candidate in the
 *   session's ring order whose in-flight count at this router, plus this
 *   request, stays within ceil(1.25 × its share of all in-flight + 1) —
 *   `pickBounded`/`withinBound` of the shared ring module in request units
 *   ("chwbl-home" at the session's home, "chwbl-walk" past it). The ceilings
 *   sum to more than the requests in flight, so some candidate always fits.
 *   O(n) for the in-flight sum + O(log P + walk).
 * The two hash balancers key on the client's session id (the x-session-id
 * header, RequestInfo.sessionKey). Without one they do what HAProxy documents
 * for `hdr()`: round-robin ("chash-no-key", "chwbl-no-key") — the candidate
 * after the one the last keyless request went to, in id order, chwbl-header's
 * skipping candidates over the bound as HAProxy's next-server walk does.
 * (nginx would hash the empty string and send every keyless request to one
 * server; that measures a misconfiguration, not the balancer.)
 * Trade-off: none of them sees prefix warmth or token-weighted load — a long
 * session and a short one weigh the same; that is the point of comparing
 * against them. Their counters move only in onDispatch, so select stays pure.
 */
import { hashString, pickBounded, withinBound } from '@warmpath/shared/wire';
import { firstInRing, rowOf, type CandidateTable } from './candidates.ts';
import type { Branch, Placement, PlacementRequest, Policy, RandomOptions } from './types.ts';

export function createRoundRobinPolicy(): Policy {
  let next = 0;
  return {
    name: 'round-robin',
    select(_req, t: CandidateTable): Placement {
      return { replica: t.rows[next % t.rows.length]!.replica, branch: 'round-robin' };
    },
    onDispatch() {
      next = (next + 1) >>> 0;
    },
  };
}

export function createRandomPolicy(opts: RandomOptions = {}): Policy {
  const random = opts.random ?? Math.random;
  return {
    name: 'random',
    select(_req, t): Placement {
      return { replica: t.rows[Math.floor(random() * t.rows.length)]!.replica, branch: 'random' };
    },
  };
}

export function createLeastRequestPolicy(): Policy {
  let rotate = 0;
  return {
    name: 'least-request',
    select(_req, t): Placement {
      const n = t.rows.length;
      let pick = 0;
      let min = Infinity;
      for (let k = 0; k < n; k++) {
        const i = (k + rotate) % n;
        if (t.rows[i]!.inflight < min) {
          min = t.rows[i]!.inflight;
          pick = i;
        }
      }
      return { replica: t.rows[pick]!.replica, branch: 'least-request' };
    },
    onDispatch() {
      rotate = (rotate + 1) >>> 0;
    },
  };
}

export function createPowerOfTwoPolicy(opts: RandomOptions = {}): Policy {
  const random = opts.random ?? Math.random;
  return {
    name: 'power-of-two',
    select(_req, t): Placement {
      const n = t.rows.length;
      if (n === 1) return { replica: t.rows[0]!.replica, branch: 'power-of-two' };
      const i = Math.floor(random() * n);
      let j = Math.floor(random() * (n - 1));
      if (j >= i) j++;
      const a = t.rows[i]!;
      const b = t.rows[j]!;
      return { replica: b.inflight < a.inflight ? b.replica : a.replica, branch: 'power-of-two' };
    },
  };
}

export const CHWBL_DEFAULTS = {
  /** HAProxy's hash-balance-factor 125: a server may carry 1.25 × its share of the requests in flight. */
  balanceFactor: 1.25,
} as const;

const at = (t: CandidateTable, i: number, branch: Branch): Placement => ({ replica: t.rows[i]!.replica, branch });

/** The session's ring key, or undefined without a session key. */
function sessionRingKey(req: PlacementRequest): bigint | undefined {
  const s = req.info.sessionKey;
  return s === undefined ? undefined : hashString(s);
}

/**
 * Round-robin for keyless requests, as HAProxy falls back: the first row after
 * the last keyless pick (rows are in id order; wrapping) that `ok` admits.
 */
function keylessRotation(): {
  next(t: CandidateTable, ok: (i: number) => boolean): number;
  onDispatch(req: PlacementRequest, replica: { readonly id: string }): void;
} {
  let last: string | undefined;
  return {
    next(t, ok) {
      const n = t.rows.length;
      let start = 0;
      if (last !== undefined) while (start < n && t.rows[start]!.replica.id <= last) start++;
      for (let k = 0; k < n; k++) if (ok((start + k) % n)) return (start + k) % n;
      return start % n; // no row admitted: unreachable under the request-count bound (see the header)
    },
    onDispatch(req, replica) {
      if (req.info.sessionKey === undefined) last = replica.id;
    },
  };
}

export function createConsistentHashPolicy(): Policy {
  const rotation = keylessRotation();
  return {
    name: 'consistent-hash',
    select(req, t): Placement {
      const key = sessionRingKey(req);
      if (key === undefined)
        return at(
          t,
          rotation.next(t, () => true),
          'chash-no-key',
        );
      // Every candidate is live, so on the ring; row 0 only guards a ring not yet rebuilt.
      return at(t, firstInRing(t, key, () => true)?.i ?? 0, 'chash-home');
    },
    onDispatch: (req, replica) => rotation.onDispatch(req, replica),
  };
}

export function createChwblHeaderPolicy(): Policy {
  const c = CHWBL_DEFAULTS.balanceFactor;
  const rotation = keylessRotation();
  return {
    name: 'chwbl-header',
    select(req, t): Placement {
      const key = sessionRingKey(req);
      if (key === undefined) {
        let total = 0;
        for (const r of t.rows) total += r.inflight;
        const within = (i: number): boolean =>
          withinBound({
            load: t.rows[i]!.inflight,
            weight: t.rows[i]!.weight,
            totalLoad: total,
            totalWeight: t.totalWeight,
            cost: 1,
            factor: c,
          });
        return at(t, rotation.next(t, within), 'chwbl-no-key');
      }
      const row = (id: string): number => rowOf(t, id);
      const hit = pickBounded(
        t.ring,
        key,
        (id) => t.rows[row(id)]!.inflight,
        1,
        c,
        (m) => row(m.id) >= 0,
      );
      // Some candidate is always within the bound (above); row 0 only guards a ring not yet rebuilt.
      return hit === undefined
        ? at(t, 0, 'chwbl-home')
        : at(t, row(hit.member.id), hit.rank === 0 ? 'chwbl-home' : 'chwbl-walk');
    },
    onDispatch: (req, replica) => rotation.onDispatch(req, replica),
  };
}
