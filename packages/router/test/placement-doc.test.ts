/**
 * docs/PLACEMENT.md's worked examples, run: each fleet, request and
 * x-warmpath-route value the page shows is asserted here.
 */
import { describe, expect, it } from 'vitest';
import type { FleetView } from '../src/fleet/view.ts';
import { LocalState } from '../src/core/local.ts';
import { placeRequest } from '../src/placement/place.ts';
import { formatRoute, parseRoute, routeOf } from '../src/placement/route.ts';
import type { PlacementRequest } from '../src/placement/types.ts';
import { createWarmpathPolicy } from '../src/placement/warmpath/index.ts';
import { CONFIG, chainOf, chat, makeState, makeView, options, preq, type StateOverrides } from './helpers.ts';

const ids = ['r0', 'r1', 'r2', 'r3'];
const fleet = (o: Record<string, StateOverrides>): FleetView => makeView(ids.map((id) => makeState(id, o[id] ?? {})));
/** "<replica> <x-warmpath-route>" for a first attempt. */
const placed = (req: PlacementRequest, view: FleetView): string => {
  const p = placeRequest(createWarmpathPolicy(options()), req, view, new LocalState(CONFIG));
  return `${p.replica?.id} ${formatRoute(routeOf(p, 'first'))}`;
};
const holds = (chain: BigUint64Array, prefill = 0, inflight = 0): StateOverrides => ({
  load: { prefillTokens: prefill, inflightTokens: inflight },
  digest: { from: -1, added: chain, size: chain.length },
});

describe('docs/PLACEMENT.md, worked examples', () => {
  const body = chat('Here is the quarterly report, summarise it. '.repeat(40));
  const req = preq(body);
  const system = chainOf(body, 13);
  const whole = chainOf(body);

  it('the request: 1,314 prompt tokens, 16 output, 20 chunks (the first 13 a shared system prompt)', () => {
    expect([req.info.promptTokens, req.info.maxTokens, whole.length]).toEqual([1314, 16, 20]);
  });

  it('cold: the key’s ring home', () => {
    expect(placed(req, fleet({}))).toBe('r3 ring; step=cold; attempt=first; by=ring');
  });

  it('cold: the next ring member has less prefill queued', () => {
    expect(placed(req, fleet({ r3: holds(new BigUint64Array(0), 3_000) }))).toBe(
      'r0 spill-two-choices; step=cold; attempt=first; by=queue',
    );
  });

  it('cold: both choices queue more than a repeat would lose: further along the ring', () => {
    const queued = holds(new BigUint64Array(0), 3_000);
    expect(placed(req, fleet({ r3: queued, r0: queued }))).toBe(
      'r2 spill-least-queued; step=cold; attempt=first; by=queue',
    );
    // Queued less than the prompt's own prefill more: the ring's home keeps it.
    const little = holds(new BigUint64Array(0), 1_200);
    expect(placed(req, fleet({ r3: little, r0: little }))).toBe('r3 ring; step=cold; attempt=first; by=ring');
  });

  it('warm: equally deep, the shorter queue', () => {
    expect(placed(req, fleet({ r1: holds(system, 2_000), r3: holds(system, 400) }))).toBe(
      'r3 warm; step=warm; attempt=first; by=queue',
    );
  });

  it('warm: depth beats queue', () => {
    expect(placed(req, fleet({ r1: holds(system), r2: holds(whole, 3_000), r3: holds(system) }))).toBe(
      'r2 warm; step=warm; attempt=first; by=depth',
    );
  });

  it('warm: a routing key breaks the tie by its ring', () => {
    const keyed = preq(body, { keyHeader: 'task-7' });
    expect(placed(keyed, fleet({ r1: holds(system, 2_000), r3: holds(system, 400) }))).toBe(
      'r1 warm; step=warm; attempt=first; by=ring',
    );
  });

  it('warm-over-bound: the deeper replica over the bound costs fewer tokens', () => {
    const busy = { r0: holds(system, 0, 20_000), r1: holds(system, 0, 20_000), r3: holds(system, 0, 20_000) };
    expect(placed(req, fleet({ ...busy, r2: holds(whole, 500, 50_000) }))).toBe(
      'r2 warm-over-bound; step=warm; attempt=first; by=cost',
    );
    // Its queue past what the shallower pick would cost (964 tokens): the pick within the bound.
    expect(placed(req, fleet({ ...busy, r2: holds(whole, 1_000, 50_000) }))).toBe(
      'r0 warm; step=warm; attempt=first; by=id',
    );
  });

  it('the header parses back', () => {
    expect(parseRoute('warm; step=warm; attempt=retry; by=queue')).toEqual({
      branch: 'warm',
      step: 'warm',
      attempt: 'retry',
      by: 'queue',
    });
    expect(parseRoute('round-robin; step=round-robin; attempt=first')).toMatchObject({ by: '' });
  });
});
