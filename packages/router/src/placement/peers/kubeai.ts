/**
 * Emulation of KubeAI's `PrefixHash` load balancing (BASELINES.md).
 *
 * Steps: key = adapter + the first 100 characters of the first user message,
 * hashed with xxhash; a ring with 256 virtual nodes per endpoint over the
 * endpoints serving the adapter; walk clockwise from the key and take the
 * first endpoint with (load + 1) ≤ ((total + 1) / n) × 1.25, where load is
 * this proxy's in-flight count. (KubeAI's own inequality, without the ceil of
 * the shared `withinBound`; kept verbatim for a faithful emulation.)
 * Complexity: O(log P) + walk; the ring is rebuilt when membership changes.
 */
import { HashRing, hashString } from '@warmpath/shared/wire';
import type { Replica } from '../../fleet/view.ts';
import { candidates } from '../eligible.ts';
import { NO_REPLICA, type Placement, type PlacementRequest, type Policy } from '../types.ts';

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
      if (Array.isArray(m.content)) return m.content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
    }
    return '';
  }
  return typeof b.prompt === 'string' ? b.prompt : '';
}

export function createKubeaiPrefixHashPolicy(): Policy {
  const d = KUBEAI_DEFAULTS;
  const cands: Replica[] = [];
  let ring: HashRing | undefined;
  let ringIds = '';
  return {
    name: 'kubeai-prefix-hash',
    place(req, view, local): Placement {
      candidates(req, view, local, cands);
      const n = cands.length;
      if (n === 0) return NO_REPLICA;
      const ids = cands.map((r) => r.id).sort().join('\u0000');
      if (ring === undefined || ids !== ringIds) {
        ring = new HashRing(cands.map((r) => ({ id: r.id, weight: 1 })), d.replication);
        ringIds = ids;
      }
      const byId = new Map(cands.map((r) => [r.id, r]));
      let total = 0;
      for (const r of cands) total += local.inflight(r.id);
      const key = hashString(req.info.adapter + firstUserText(req).slice(0, d.prefixChars));
      const limit = ((total + 1) / n) * d.meanLoadFactor;
      let rank = 0;
      for (const m of ring.walk(key)) {
        const r = byId.get(m.id)!;
        if (local.inflight(r.id) + 1 <= limit) return { replica: r, branch: rank === 0 ? 'kubeai-home' : 'kubeai-walk' };
        rank++;
      }
      return { replica: byId.get(ring.home(key)!.id)!, branch: 'kubeai-home' };
    },
  };
}
