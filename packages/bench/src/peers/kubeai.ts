/**
 * Emulation of KubeAI's `PrefixHash` load balancing (docs/PEERS.md).
 *
 * Steps: key = adapter + the first 100 characters of the first user message,
 * hashed with xxhash; a ring with 256 virtual nodes per endpoint over the
 * endpoints serving the adapter; walk clockwise from the key and take the
 * first endpoint with (load + 1) ≤ ((total + 1) / n) × 1.25, where load is
 * this proxy's in-flight count: the shared `withinBound` in request units,
 * `exact` (KubeAI compares with the bound itself, not its ceiling). When every
 * endpoint is over, KubeAI falls back to the key's home.
 * Complexity: O(log P) + walk; the ring is rebuilt when membership changes.
 */
import { HashRing, hashString, withinBound } from '@warmpath/shared/wire';
import {
  rowOf,
  type Candidate,
  type CandidateTable,
  type Placement,
  type PlacementRequest,
  type Policy,
} from '@warmpath/router';

export const KUBEAI_DEFAULTS = {
  prefixChars: 100,
  replication: 256,
  meanLoadFactor: 1.25,
} as const;

function firstUserText(req: PlacementRequest): string {
  const b = req.body;
  if (b === undefined) return '';
  if (Array.isArray(b.messages)) {
    for (const m of b.messages as Array<{ role?: unknown; content?: unknown }>) {
      if (m?.role !== 'user') continue;
      if (typeof m.content === 'string') return m.content;
      if (Array.isArray(m.content))
        return m.content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
    }
    return '';
  }
  return typeof b.prompt === 'string' ? b.prompt : '';
}

export function createKubeaiPrefixHashPolicy(): Policy {
  const d = KUBEAI_DEFAULTS;
  // A memo, not state: the ring is a function of the candidates' ids alone, so it cannot change an answer.
  let memo: { ids: string; ring: HashRing } | undefined;
  const ringOf = (t: CandidateTable): HashRing => {
    const ids = t.rows
      .map((c) => c.replica.id)
      .sort()
      .join('\u0000');
    if (memo?.ids !== ids)
      memo = {
        ids,
        ring: new HashRing(
          t.rows.map((c) => ({ id: c.replica.id, weight: 1 })),
          d.replication,
        ),
      };
    return memo.ring;
  };
  return {
    name: 'kubeai-prefix-hash',
    select(req, t): Placement {
      const n = t.rows.length;
      const ring = ringOf(t);
      let total = 0;
      for (const c of t.rows) total += c.inflight;
      const key = hashString(req.info.adapter + firstUserText(req).slice(0, d.prefixChars));
      const within = (c: Candidate): boolean =>
        withinBound({
          load: c.inflight,
          weight: 1,
          totalLoad: total,
          totalWeight: n,
          cost: 1,
          factor: d.meanLoadFactor,
          exact: true,
        });
      let rank = 0;
      for (const m of ring.walk(key)) {
        const c = t.rows[rowOf(t, m.id)]!;
        if (within(c)) return { replica: c.replica, branch: rank === 0 ? 'kubeai-home' : 'kubeai-walk' };
        rank++;
      }
      return { replica: t.rows[rowOf(t, ring.home(key)!.id)]!.replica, branch: 'kubeai-home-over-bound' };
    },
  };
}
