/**
 * The refusal rule on a whole fleet (docs/DESIGN-RATIONALE.md, "Staleness"):
 * three routers, agents that refuse beyond a few requests in flight, and
 * gossip that loses half the states and delays the rest by hundreds of ms.
 * A router's view of a replica then often says idle while the replica is
 * full; after one refusal the router must send nothing more there on the
 * same view until one of its own requests there ends or the state TTL
 * passes. Removing the rule (placement/candidates.ts) makes this fail.
 */
import { describe, expect, it } from 'vitest';
import { routerConfig } from '@warmpath/router';
import { runDes, type DesRefusal } from '../../src/des/run.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

const chat = SCENARIOS.chat!;
const HOP_MS = 0.3;

describe('DES: a replica full behind lost and delayed states', () => {
  it('takes at most one refused request per router per view, until a slot frees or the state TTL passes', async () => {
    const plan = chat.build({ seed: 3, rate: 40, duration: 10, model: DEFAULT_MODEL });
    const refusals: DesRefusal[] = [];
    await runDes({
      scenario: chat,
      plan,
      policy: 'warmpath',
      replicas: 4,
      routers: 3,
      durationS: 10,
      hopMs: HOP_MS,
      agentOverrides: { maxInflight: 8 },
      gossip: { delay: 'lognormal:300:1500', loss: 0.5 },
      onRefused: (r) => refusals.push(r),
    });
    const ttl = routerConfig().stateTtlMs;
    // Refusals that say nothing of the queue, by (router, replica, the report the router placed on), in order.
    const byView = new Map<string, DesRefusal[]>();
    for (const r of refusals) {
      if (r.queued !== undefined) continue;
      const key = `${r.router}/${r.replica}/${r.reportAt}`;
      byView.set(key, [...(byView.get(key) ?? []), r]);
    }
    // The scenario must exercise the rule: views refused more than once.
    const repeated = [...byView.values()].filter((rs) => rs.length > 1);
    expect(repeated.length).toBeGreaterThan(10);
    for (const rs of repeated) {
      for (let i = 1; i < rs.length; i++) {
        const [before, r] = [rs[i - 1]!, rs[i]!];
        const heardRefusal = before.at + HOP_MS;
        const inFlightThen = r.placedAt < heardRefusal;
        const slotFreed = r.endedBefore > heardRefusal;
        const pastTtl = r.placedAt >= heardRefusal + ttl;
        expect(inFlightThen || slotFreed || pastTtl, JSON.stringify({ before, r })).toBe(true);
      }
    }
  });
});
