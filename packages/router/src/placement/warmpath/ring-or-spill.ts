/**
 * Ring or spill: a cold prefix (no adapter) goes to the first admissible row
 * in the key's ring order — `ring` if it is the key's home among the
 * candidates, else `spill` (deterministic, so a hot key grows onto a stable
 * set of replicas). Two choices on the ring: among the first
 * mode.spillChoices admissible members, the one with the least prefill
 * ahead takes the prompt (`spill-two-choices`; ties to the earlier in ring
 * order), by the cost's cold queue term (cost.ts, mode.coldQueue).
 * Least queued (`spill-least-queued`, no routing key): the ring keeps a
 * prompt where its later repeats will look for it, and leaving it costs at
 * most one such repeat's miss — the prompt's prefill, or with KV sharing
 * its fetch (cost.ts, `repeatMiss`). So when another admissible row's cold
 * queue is shorter than the choice's by more than that miss, the first such
 * row further along the ring takes the prompt: the same row on every router
 * for the same prompt, different rows for different prompts
 * (docs/PLACEMENT.md, "Cold").
 * Complexity: ring walks, O(log P) + the steps to the first spillChoices
 * admissible; least queued, O(rows) and, when a row is short enough, a walk
 * of the ring to the first.
 */
import { firstInRing } from '../candidates.ts';
import type { Placement } from '../types.ts';
import { coldQueue, repeatMiss } from './cost.ts';
import { admissible, type Input, pick, someRow } from './input.ts';

export function ringOrSpill(x: Input): Placement | undefined {
  const t = x.t;
  const ok = (i: number): boolean => admissible(x, i);
  // Without spill only the key's home among the candidates may take it.
  const hit = x.mode.spill ? firstInRing(t, x.req.key, ok) : firstInRing(t, x.req.key, () => true);
  if (hit === undefined || !ok(hit.i)) return undefined;
  let best = hit.i;
  if (x.mode.spillChoices > 1) {
    let compared = 1;
    firstInRing(t, x.req.key, (i) => {
      if (i === hit.i || !ok(i)) return false;
      if (coldQueue(x, i) < coldQueue(x, best)) best = i;
      return ++compared >= x.mode.spillChoices;
    });
  }
  if (x.mode.leastQueued) {
    // Per unit of weight, as coldQueue: the choice's queue less the time a repeat's miss would take there.
    const over = coldQueue(x, best) - repeatMiss(x, best) / t.rows[best]!.weight;
    const short = (i: number): boolean => coldQueue(x, i) < over && ok(i);
    // When no row is that short, say so in one pass over the rows rather than a walk of the whole ring.
    const shorter = over > 0 && someRow(t.rows.length, short) ? firstInRing(t, x.req.key, short) : undefined;
    if (shorter !== undefined) return pick(x, shorter.i, 'spill-least-queued', 'queue');
  }
  if (best !== hit.i) return pick(x, best, 'spill-two-choices', 'queue');
  return pick(x, hit.i, hit.rank === 0 ? 'ring' : 'spill', 'ring');
}
