/**
 * The oracle: a DES-only policy that sees every engine's true state. It runs
 * inside the same RouterCore as every other policy (same router queue,
 * retries and attempts; the agents still admit), only its select differs.
 *
 * Steps: for each candidate row, probe that replica's engine model with the
 * request's prompt (cached prefix the pool would match now; prefill queued
 * ahead of it, each waiting request's own cached prefix subtracted; an
 * adapter load if the adapter is not on the GPU) → the lowest predicted TTFT,
 * ties to the first row.
 * Complexity: O(candidates × (in-flight sequences + prompt blocks)).
 * Trade-off: greedy — one request at a time, no lookahead: it does not keep
 * a warm replica free for the requests that will need it, nor see arrivals
 * still in flight to an engine, so it is a strong reference, not a bound.
 */
import type { Policy, PlacementRequest } from '@warmpath/router';
import type { RequestInfo } from '@warmpath/shared/wire';
import type { EngineModel } from '@warmpath/sim';
import type { Prepared } from './request.ts';

export function createOraclePolicy(
  models: ReadonlyMap<string, EngineModel>,
  prepared: WeakMap<RequestInfo, Prepared>,
): Policy {
  return {
    name: 'oracle',
    select(req: PlacementRequest, t) {
      const p = prepared.get(req.info);
      if (p === undefined) throw new Error('oracle: a request the simulator did not prepare');
      let best = 0;
      let bestMs = Infinity;
      for (let i = 0; i < t.rows.length; i++) {
        const m = models.get(t.rows[i]!.replica.id);
        const ms = m === undefined ? Infinity : m.probe(p.promptTokens, p.blockHashes, p.info.adapter).predictedTtftMs;
        if (ms < bestMs) {
          best = i;
          bestMs = ms;
        }
      }
      return { replica: t.rows[best]!.replica, branch: 'oracle' };
    },
  };
}
