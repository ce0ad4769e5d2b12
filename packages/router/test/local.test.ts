/**
 * LocalState.figures: what this router sent a replica since its last report,
 * through dispatch, report, completion, pruning, and a slot reused by
 * another replica.
 */
import { describe, expect, it } from 'vitest';
import { LocalState } from '../src/core/local.ts';
import { CONFIG, makeState, makeView } from './helpers.ts';

describe('LocalState.figures', () => {
  it('counts work sent since the report, forgets a pruned track, and never lends a reused slot another replica’s work', () => {
    let now = 1_000_000;
    const view = makeView([], { now: () => now, stateTtlMs: 3_000, forgetAfterMs: 10_000 });
    const local = new LocalState(CONFIG);
    view.apply(makeState('a', { sentAt: now }));
    const a = () => view.replicas.get('a')!;
    now += 10;
    const t1 = local.dispatch('a', 100, now);
    local.dispatch('a', 50, now);
    expect(local.figures(a())).toMatchObject({ added: 150, inflight: 2, reported: 0 });
    // A report sent after both: they are in its load now, no longer added.
    now += 10;
    view.apply(makeState('a', { seq: 2, sentAt: now }));
    expect(local.figures(a())).toMatchObject({ added: 0, inflight: 2, reported: 2 });
    now += 10;
    const t3 = local.dispatch('a', 30, now);
    expect(local.figures(a()).added).toBe(30);
    local.complete(t3, now);
    local.complete(t1, now);
    expect(local.figures(a())).toMatchObject({ added: 0, inflight: 1 });
    // 'a' is forgotten and 'b' takes its slot: b starts with nothing, though a's track still has a request in flight.
    const slot = a().slot;
    now += 20_000;
    view.sweep();
    view.apply(makeState('b', { sentAt: now }));
    const b = view.replicas.get('b')!;
    expect(b.slot).toBe(slot);
    expect(local.figures(b)).toMatchObject({ added: 0, inflight: 0 });
    now += 10;
    const t4 = local.dispatch('b', 70, now);
    expect(local.figures(b)).toMatchObject({ added: 70, inflight: 1 });
    // A pruned track (nothing open) is gone; a new one for the same replica starts from zero.
    local.complete(t4, now);
    local.prune(now);
    expect(local.figures(b)).toMatchObject({ added: 0, inflight: 0 });
    local.dispatch('b', 5, now);
    expect(local.figures(b)).toMatchObject({ added: 5, inflight: 1 });
  });

  it('reports as its own what a late report counts in flight: sent before it, finished after it', () => {
    let now = 1_000_000;
    const view = makeView([], { now: () => now, stateTtlMs: 3_000, forgetAfterMs: 10_000 });
    const local = new LocalState(CONFIG);
    const a = () => view.replicas.get('a')!;
    view.apply(makeState('a', { sentAt: now }));
    const t1 = local.dispatch('a', 100, now + 10);
    const t2 = local.dispatch('a', 100, now + 20);
    // A report sent at +30 counts both in flight; it arrives 500 ms later, after t1 finished at +200.
    const reportAt = now + 30;
    now += 200;
    local.complete(t1, now);
    now += 330;
    view.apply(makeState('a', { seq: 2, sentAt: reportAt }));
    expect(local.figures(a())).toMatchObject({ inflight: 1, reported: 2, added: 0 });
    // t2 finishes too: the same report still counts it.
    now += 10;
    local.complete(t2, now);
    expect(local.figures(a())).toMatchObject({ inflight: 0, reported: 2 });
    // A later report sent between their ends counts t2 only; one sent after both, neither.
    view.apply(makeState('a', { seq: 3, sentAt: now - 100 }));
    expect(local.figures(a()).reported).toBe(1);
    view.apply(makeState('a', { seq: 4, sentAt: now + 1 }));
    expect(local.figures(a()).reported).toBe(0);
    // Requests sent after the report are not in it, finished or not.
    const t3 = local.dispatch('a', 100, now + 2);
    local.complete(t3, now + 3);
    expect(local.figures(a()).reported).toBe(0);
  });
});
