/**
 * Ring or spill: a cold prefix (no adapter) goes to the first admissible row
 * in the key's ring order — `ring` if it is the key's home among the
 * candidates, else `spill` (deterministic, so a hot key grows onto a stable
 * set of replicas). Two choices on the ring: among the first
 * mode.spillChoices admissible members, the one with the least prefill
 * ahead takes the prompt (`spill-two-choices`; ties to the earlier in ring
 * order), by the cost's cold queue term (cost.ts, mode.coldQueue)
 * (docs/PLACEMENT.md, "Cold").
 * Complexity: two ring walks, O(log P) + the steps to the first spillChoices admissible.
 */
import { firstInRing } from '../candidates.ts';
import type { Placement } from '../types.ts';
import { coldQueue } from './cost.ts';
import { admissible, type Input, pick } from './input.ts';

export function ringOrSpill(x: Input): Placement | undefined {
  const t = x.t;
  const ok = (i: number): boolean => admissible(x, i);
  // Without spill only the key's home among the candidates may take it.
  const hit = x.mode.spill ? firstInRing(t, x.req.key, ok) : firstInRing(t, x.req.key, () => true);
  if (hit === undefined || !ok(hit.i)) return undefined;
  if (x.mode.spillChoices > 1) {
    let best = hit.i;
    let compared = 1;
    firstInRing(t, x.req.key, (i) => {
      if (i === hit.i || !ok(i)) return false;
      if (coldQueue(x, i) < coldQueue(x, best)) best = i;
      return ++compared >= x.mode.spillChoices;
    });
    if (best !== hit.i) return pick(x, best, 'spill-two-choices', 'queue');
  }
  return pick(x, hit.i, hit.rank === 0 ? 'ring' : 'spill', 'ring');
}
