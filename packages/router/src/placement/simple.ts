/**
 * The plain load balancers users would otherwise run (docs/PEERS.md), behind
 * the same interface. Each learns only from this router's own decisions
 * (LocalState in-flight counts), like nginx/HAProxy instances do.
 *
 * - round-robin: rotate over eligible replicas (sorted by id). O(n).
 * - least-request: fewest in-flight at this router; ties rotate. O(n).
 * - power-of-two: two distinct random candidates, the one with fewer
 *   in-flight. O(n) to collect candidates, O(1) to choose.
 * - consistent-hash: the key's first eligible replica in ring order, no load
 *   bound (nginx `hash … consistent`). O(log P + walk).
 * Trade-off: none of them sees prefix warmth or token-weighted load; that is
 * the point of comparing against them. Their counters move only in
 * onDispatch, so select stays pure.
 */
import { firstInRing, type CandidateTable } from './candidates.ts';
import type { Placement, Policy, PolicyOptions } from './types.ts';

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

export function createPowerOfTwoPolicy(opts: Pick<PolicyOptions, 'random'> = {}): Policy {
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

export function createConsistentHashPolicy(): Policy {
  return {
    name: 'consistent-hash',
    select(req, t): Placement {
      // Every candidate is live, so on the ring; rows[0] only guards a ring not yet rebuilt.
      const home = firstInRing(t, req.key, () => true);
      return { replica: t.rows[home?.i ?? 0]!.replica, branch: 'ring' };
    },
  };
}
