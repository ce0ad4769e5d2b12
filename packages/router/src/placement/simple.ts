/**
 * The plain load balancers users would otherwise run (BASELINES.md), behind
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
 * the point of comparing against them.
 */
import type { FleetView, Replica } from '../fleet/view.ts';
import { candidates } from './eligible.ts';
import type { LocalState } from './local.ts';
import { NO_REPLICA, type Placement, type PlacementRequest, type Policy, type PolicyOptions } from './types.ts';

export function createRoundRobinPolicy(): Policy {
  const cands: Replica[] = [];
  let next = 0;
  return {
    name: 'round-robin',
    place(req: PlacementRequest, view: FleetView, local: LocalState): Placement {
      candidates(req, view, local, cands);
      if (cands.length === 0) return NO_REPLICA;
      const r = cands[next % cands.length]!;
      return { replica: r, branch: 'round-robin' };
    },
    onDispatch() {
      next = (next + 1) >>> 0;
    },
  };
}

export function createLeastRequestPolicy(): Policy {
  const cands: Replica[] = [];
  let rotate = 0;
  return {
    name: 'least-request',
    place(req, view, local): Placement {
      candidates(req, view, local, cands);
      const n = cands.length;
      if (n === 0) return NO_REPLICA;
      let pick: Replica | undefined;
      let min = Infinity;
      for (let i = 0; i < n; i++) {
        const r = cands[(i + rotate) % n]!;
        const f = local.inflight(r.id);
        if (f < min) {
          min = f;
          pick = r;
        }
      }
      return { replica: pick!, branch: 'least-request' };
    },
    onDispatch() {
      rotate = (rotate + 1) >>> 0;
    },
  };
}

export function createPowerOfTwoPolicy(opts: Pick<PolicyOptions, 'random'> = {}): Policy {
  const random = opts.random ?? Math.random;
  const cands: Replica[] = [];
  return {
    name: 'power-of-two',
    place(req, view, local): Placement {
      candidates(req, view, local, cands);
      const n = cands.length;
      if (n === 0) return NO_REPLICA;
      if (n === 1) return { replica: cands[0]!, branch: 'power-of-two' };
      const i = Math.floor(random() * n);
      let j = Math.floor(random() * (n - 1));
      if (j >= i) j++;
      const a = cands[i]!;
      const b = cands[j]!;
      return { replica: local.inflight(b.id) < local.inflight(a.id) ? b : a, branch: 'power-of-two' };
    },
  };
}

export function createConsistentHashPolicy(): Policy {
  const cands: Replica[] = [];
  const ids = new Set<string>();
  return {
    name: 'consistent-hash',
    place(req, view, local): Placement {
      const g = view.group(req.info.model, req.info.adapter);
      if (g === undefined) return NO_REPLICA;
      candidates(req, view, local, cands);
      if (cands.length === 0) return NO_REPLICA;
      ids.clear();
      for (const r of cands) ids.add(r.id);
      for (const m of g.ring.walk(req.key)) if (ids.has(m.id)) return { replica: g.byId.get(m.id)!, branch: 'ring' };
      return { replica: cands[0]!, branch: 'ring' };
    },
  };
}
