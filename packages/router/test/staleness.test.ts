/**
 * The staleness rules (docs/DESIGN-RATIONALE.md, "Staleness"): however the
 * states that would say a replica is full are lost or delayed, this router
 * stops treating it as idle within a bounded time. Driven by a manual clock:
 * the agent goes full, its states never arrive, and only the router's own
 * accounting, the agent's refusal and the state TTL may tell it.
 */
import { manualClock } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { routerConfig } from '../src/config.ts';
import { RouterCore } from '../src/core/router-core.ts';
import type { Dispatch, RouteError, SendResult } from '../src/core/types.ts';
import { chat, makeState } from './helpers.ts';

type Ctx = { n: number };

function fleet(replicas: string[], overrides: Record<string, unknown> = {}) {
  const clock = manualClock(1_000);
  const sent: Array<{ d: Dispatch<Ctx>; report: (r: SendResult) => void }> = [];
  const answers: Array<{ ctx: Ctx; e: RouteError }> = [];
  const core = new RouterCore<Ctx>({
    config: routerConfig({ fleet: 'test', ...overrides }),
    id: 'r',
    clock,
    send: (d, report) => sent.push({ d, report }),
    answer: (ctx, e) => answers.push({ ctx, e }),
    fetchSnapshot: () => Promise.reject(new Error('none')),
  });
  for (const id of replicas) core.receive(makeState(id, { sentAt: clock.now() }));
  const route = (n: number, user = 'the same conversation') => {
    const body = chat(user);
    core.route({ n }, core.describe(body, 'chat', {}), body);
    return sent.at(-1);
  };
  return { clock, core, sent, answers, route };
}

describe('staleness: a replica full behind lost or delayed states', () => {
  it('after its agent refuses, a replica the last state shows idle takes no more of this router’s requests until its next state', () => {
    const { clock, core, sent, route } = fleet(['a', 'b']);
    const first = route(1)!;
    const full = first.d.replica.id;
    first.report({ kind: 'done', outcome: 'ok' });
    // The agent went full under other routers' load; every state saying so is lost. It refuses.
    const refused = route(2)!;
    expect(refused.d.replica.id).toBe(full); // warm: its state (idle, and this prefix cached) says so
    refused.report({ kind: 'rejected', status: 429, reason: 'kv' });
    // Every later request for the same warm prefix goes elsewhere, though the view still says `full` is idle and warm.
    for (let n = 3; n < 13; n++) {
      clock.advance(100);
      expect(route(n)!.d.replica.id).not.toBe(full);
    }
    const refusedTo = sent.filter((s) => s.d.replica.id === full).length;
    expect(refusedTo).toBe(2);
    // Its next state (even one saying it is idle again) lifts the hold.
    core.receive(makeState(full, { seq: 2, sentAt: clock.now() }));
    for (const s of sent) s.report({ kind: 'done', outcome: 'ok' });
    expect(route(20)!.d.replica.id).toBe(full);
  });

  it('with no state at all, the hold ends with the state TTL, when the TTL rule alone decides (the replica is ineligible)', () => {
    const { clock, core, route, answers } = fleet(['a'], { queueTimeoutMs: 500 });
    route(1)!.report({ kind: 'rejected', status: 429, reason: 'kv' });
    // One replica, refused: the request waits instead of going back to a replica held full.
    expect(core.waiting).toBe(1);
    clock.advance(600);
    expect(answers.map((a) => a.e.code)).toEqual(['fleet_saturated']);
    // Past the TTL the last state is stale: no replica is placeable until a state arrives.
    clock.advance(core.view.stateTtlMs);
    expect(core.view.fresh(core.view.replicas.get('a')!, clock.now())).toBe(false);
  });

  it('a replica this router filled itself is not idle to it before any state says so (its own dispatches since the report)', () => {
    const { core, route } = fleet(['a', 'b']);
    for (let n = 0; n < 8; n++) route(n, `prompt ${n}`);
    const a = core.view.replicas.get('a')!;
    const b = core.view.replicas.get('b')!;
    const added = core.local.figures(a).added + core.local.figures(b).added;
    expect(added).toBeGreaterThan(0);
    expect(core.local.figures(a).inflight + core.local.figures(b).inflight).toBe(8);
  });
});
