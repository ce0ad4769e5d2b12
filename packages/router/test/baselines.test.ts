/** Behaviour of the plain balancers keyed on chance or on the session header, rule by rule as docs/PEERS.md states them. */
import { describe, expect, it } from 'vitest';
import { HashRing, hashString } from '@warmpath/shared/wire';
import { LocalState } from '../src/core/local.ts';
import { notifyDispatch, placeRequest } from '../src/placement/place.ts';
import { createChwblHeaderPolicy, createConsistentHashPolicy, createRandomPolicy } from '../src/placement/simple.ts';
import type { Placement, PlacementRequest, Policy } from '../src/placement/types.ts';
import type { FleetView } from '../src/fleet/view.ts';
import { CONFIG, chat, makeState, makeView, preq } from './helpers.ts';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`);
const fleetOf = (n: number) => makeView(ids(n).map((id) => makeState(id)));

/** Places and dispatches like the router does (the request stays in flight); returns the placement. */
function route(p: Policy, req: PlacementRequest, view: FleetView, local: LocalState): Placement {
  const pl = placeRequest(p, req, view, local);
  if (pl.replica !== undefined) {
    local.dispatch(pl.replica.id, 1, req.now);
    notifyDispatch(p, req, pl.replica, local);
  }
  return pl;
}

/** Puts `n` requests in flight on `id` at this router. */
function busy(local: LocalState, id: string, n: number): void {
  for (let k = 0; k < n; k++) local.dispatch(id, 1, Date.now());
}

/** The session's preference list over the fleet's ring (ids r0…r{n-1}, weight 1). */
function ringOrder(view: FleetView, session: string): string[] {
  const ring: HashRing = view.group('m', '')!.ring;
  return [...ring.walk(hashString(session))].map((m) => m.id);
}

describe('random', () => {
  it('draws uniformly over the eligible candidates', () => {
    const view = fleetOf(4);
    let s = 11;
    const p = createRandomPolicy({ random: () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32 });
    const counts = new Map<string, number>();
    const local = new LocalState(CONFIG);
    for (let i = 0; i < 4000; i++) {
      const pl = placeRequest(p, preq(chat('the same prompt every time')), view, local);
      expect(pl.branch).toBe('random');
      counts.set(pl.replica!.id, (counts.get(pl.replica!.id) ?? 0) + 1);
    }
    for (const id of ids(4)) expect(Math.abs((counts.get(id) ?? 0) - 1000)).toBeLessThan(120);
  });

  it('maps the draw onto the candidates only (an excluded replica is never drawn)', () => {
    const view = fleetOf(3);
    const at = (x: number) =>
      placeRequest(
        createRandomPolicy({ random: () => x }),
        preq(chat('q'), { exclude: new Set(['r1']) }),
        view,
        new LocalState(CONFIG),
      ).replica!.id;
    expect([at(0), at(0.49), at(0.51), at(0.999)]).toEqual(['r0', 'r0', 'r2', 'r2']);
  });
});

describe('consistent-hash (nginx hash $http_x_session_id consistent)', () => {
  it("sends a session's turns to its ring home whatever the prompt, the routing key or the load", () => {
    const view = fleetOf(5);
    const p = createConsistentHashPolicy();
    const local = new LocalState(CONFIG);
    const home = ringOrder(view, 'session-a')[0]!;
    busy(local, home, 50);
    for (let turn = 0; turn < 5; turn++) {
      const req = preq(chat(`turn ${turn}`, { prompt_cache_key: `other-${turn}` }), { sessionHeader: 'session-a' });
      expect(route(p, req, view, local)).toMatchObject({ branch: 'chash-home', replica: { id: home } });
    }
  });

  it('takes the next candidate in ring order when the home is not eligible', () => {
    const view = fleetOf(5);
    const [home, second] = ringOrder(view, 'session-b');
    const pl = placeRequest(
      createConsistentHashPolicy(),
      preq(chat('q'), { sessionHeader: 'session-b', exclude: new Set([home!]) }),
      view,
      new LocalState(CONFIG),
    );
    expect(pl).toMatchObject({ branch: 'chash-home', replica: { id: second } });
  });

  it('spreads sessions over the fleet', () => {
    const view = fleetOf(4);
    const p = createConsistentHashPolicy();
    const seen = new Set<string>();
    for (let s = 0; s < 64; s++)
      seen.add(
        placeRequest(p, preq(chat('same prompt'), { sessionHeader: `s${s}` }), view, new LocalState(CONFIG)).replica!
          .id,
      );
    expect(seen.size).toBe(4);
  });

  it('round-robins requests without a session header (HAProxy hdr() rule), resuming after the last keyless pick', () => {
    const view = fleetOf(3);
    const p = createConsistentHashPolicy();
    const local = new LocalState(CONFIG);
    const keyless = () => route(p, preq(chat('same prompt')), view, local);
    expect([keyless(), keyless()].map((x) => [x.branch, x.replica!.id])).toEqual([
      ['chash-no-key', 'r0'],
      ['chash-no-key', 'r1'],
    ]);
    // Session requests in between do not move the rotation.
    for (let s = 0; s < 4; s++) route(p, preq(chat('q'), { sessionHeader: `s${s}` }), view, local);
    expect(keyless().replica!.id).toBe('r2');
    expect(keyless().replica!.id).toBe('r0');
    // A blank header is no session key.
    expect(route(p, preq(chat('q'), { sessionHeader: '  ' }), view, local)).toMatchObject({
      branch: 'chash-no-key',
      replica: { id: 'r1' },
    });
  });
});

describe('chwbl-header (HAProxy hdr(X-Session-Id), hash-type consistent, hash-balance-factor 125)', () => {
  it('keeps a session on its home while the home is within ceil(1.25 × its share of in-flight + 1)', () => {
    const view = fleetOf(2);
    const p = createChwblHeaderPolicy();
    const local = new LocalState(CONFIG);
    const [home, next] = ringOrder(view, 'session-a');
    // Idle fleet: ceil(1.25 × 1 × 1/2) = 1 ≥ 0 + 1.
    expect(route(p, preq(chat('t0'), { sessionHeader: 'session-a' }), view, local)).toMatchObject({
      branch: 'chwbl-home',
      replica: { id: home },
    });
    // Home 1 in flight, total 1: ceil(1.25 × 2 / 2) = 2 ≥ 1 + 1 → still home.
    expect(route(p, preq(chat('t1'), { sessionHeader: 'session-a' }), view, local)).toMatchObject({
      branch: 'chwbl-home',
      replica: { id: home },
    });
    // Home 2, total 2: ceil(1.25 × 3 / 2) = 2 < 2 + 1 → walk on to the next in the session's ring order.
    expect(route(p, preq(chat('t2'), { sessionHeader: 'session-a' }), view, local)).toMatchObject({
      branch: 'chwbl-walk',
      replica: { id: next },
    });
  });

  it('walks the ring past every candidate over the bound, in the session order', () => {
    const view = fleetOf(6);
    const order = ringOrder(view, 'session-c');
    const local = new LocalState(CONFIG);
    busy(local, order[0]!, 3);
    busy(local, order[1]!, 3);
    // Total 6: ceil(1.25 × 7 / 6) = 2; the first two are at 3 + 1 > 2, the third at 0 + 1 fits.
    expect(
      placeRequest(createChwblHeaderPolicy(), preq(chat('q'), { sessionHeader: 'session-c' }), view, local),
    ).toMatchObject({ branch: 'chwbl-walk', replica: { id: order[2] } });
  });

  it('counts only in-flight requests at this router, not tokens or other routers', () => {
    const view = makeView(
      ids(3).map((id) =>
        makeState(id, { load: { inflightTokens: id === 'r0' ? 90_000 : 0, inflight: id === 'r0' ? 40 : 0 } }),
      ),
    );
    const order = ringOrder(view, 'session-d');
    const pl = placeRequest(
      createChwblHeaderPolicy(),
      preq(chat('q'.repeat(5000)), { sessionHeader: 'session-d' }),
      view,
      new LocalState(CONFIG),
    );
    expect(pl).toMatchObject({ branch: 'chwbl-home', replica: { id: order[0] } });
  });

  it('always finds a candidate within the bound (the ceilings sum past the requests in flight)', () => {
    const view = fleetOf(7);
    const p = createChwblHeaderPolicy();
    const local = new LocalState(CONFIG);
    for (let i = 0; i < 300; i++) {
      const pl = route(p, preq(chat('q'), { sessionHeader: `s${i % 3}` }), view, local);
      expect(['chwbl-home', 'chwbl-walk']).toContain(pl.branch);
    }
    // Three hot sessions, nothing completes: the load still spreads to within 1.25 × the mean (+1).
    const loads = ids(7).map((id) => local.inflight(id));
    expect(Math.max(...loads)).toBeLessThanOrEqual(Math.ceil((1.25 * 300) / 7) + 1);
  });

  it('round-robins keyless requests over the candidates within the bound', () => {
    const view = fleetOf(3);
    const p = createChwblHeaderPolicy();
    const local = new LocalState(CONFIG);
    busy(local, 'r1', 2);
    // Total 2: ceil(1.25 × 3 / 3) = 2; r1 at 2 + 1 is over, so the rotation skips it.
    const keyless = () => route(p, preq(chat('same prompt')), view, local);
    const first = keyless();
    expect(first).toMatchObject({ branch: 'chwbl-no-key', replica: { id: 'r0' } });
    expect(keyless()).toMatchObject({ branch: 'chwbl-no-key', replica: { id: 'r2' } });
  });
});
