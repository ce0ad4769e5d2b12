/**
 * The rights of gossip publishers (fleet/trust.ts) and the topic validator's
 * verdicts (FleetView.judge), on a virtual clock: ids bound to keys, clocks,
 * addresses, rates.
 */
import fc from 'fast-check';
import { decodeState, encodeState } from '@warmpath/shared/wire';
import { FUZZ_SEED } from '@warmpath/testkit/fuzz';
import { describe, expect, it } from 'vitest';
import {
  MAX_CLOCK_AHEAD_MS,
  MAX_REPLICAS_PER_PEER,
  PEER_MESSAGE_BURST,
  PEER_MESSAGES_PER_S,
  PublisherTrust,
  VOUCHER_SWITCH_MS,
  type Origin,
} from '../src/fleet/trust.ts';
import { makeState, makeView } from './helpers.ts';

const T0 = 1_000_000;
const TTL = 3_000;
const trust = (o: { agentPeers?: string[]; agentNetworks?: string[] } = {}) =>
  new PublisherTrust({ stateTtlMs: TTL, agentPeers: o.agentPeers ?? [], agentNetworks: o.agentNetworks ?? [] });
const from = (peer: string, addresses: string[] = ['127.0.0.1'], via = peer): Origin => ({ peer, via, addresses });
const state = (id: string, url = 'http://127.0.0.1:9000', extra: Parameters<typeof makeState>[1] = {}) =>
  makeState(id, { url, admin: url.replace('9000', '9001'), sentAt: T0, bootAt: T0 - 10_000, ...extra });

describe('publisher trust', () => {
  it('binds a replica id to the first key that claims it until that key is silent past the TTL', () => {
    const t = trust();
    expect(t.check(state('r1'), from('A'), T0)).toBeUndefined();
    t.claimed(state('r1'), from('A'), T0);
    expect(t.check(state('r1'), from('B'), T0 + 1)).toBe('not_owner');
    t.claimed(state('r1'), from('A'), T0 + 2_000); // the owner keeps publishing
    expect(t.check(state('r1'), from('B'), T0 + 2_000 + TTL)).toBe('not_owner');
    // Silent past the TTL: a new key (an agent restarted without an identity file) takes over.
    expect(t.check(state('r1'), from('B'), T0 + 2_001 + TTL)).toBeUndefined();
    t.claimed(state('r1'), from('B'), T0 + 2_001 + TTL);
    expect(t.ownerOf('r1')).toBe('B');
    expect(t.check(state('r1'), from('A'), T0 + 2_002 + TTL)).toBe('not_owner');
  });

  it("takes an agent's batched states from one router at a time: another vouches only once that one is silent for it (a failover)", () => {
    const t = trust();
    const by = (router: string): Origin => ({
      ...from('A', [], router),
      viaAddresses: ['127.0.0.1'],
      vouchedBy: router,
    });
    expect(t.check(state('r1'), by('R1'), T0)).toBeUndefined();
    t.claimed(state('r1'), by('R1'), T0);
    // A second router speaking for A while R1 relays it: refused, whatever neighbour brought its batch.
    expect(t.check(state('r1'), by('R2'), T0 + VOUCHER_SWITCH_MS)).toBe('vouch');
    t.claimed(state('r1'), by('R1'), T0 + 500);
    expect(t.check(state('r1'), by('R2'), T0 + 500 + VOUCHER_SWITCH_MS)).toBe('vouch');
    // R1 silent for A past the switch time (A failed over): R2 is heard, and holds A from then on.
    expect(t.check(state('r1'), by('R2'), T0 + 501 + VOUCHER_SWITCH_MS)).toBeUndefined();
    t.claimed(state('r1'), by('R2'), T0 + 501 + VOUCHER_SWITCH_MS);
    expect(t.check(state('r1'), by('R1'), T0 + 502 + VOUCHER_SWITCH_MS)).toBe('vouch');
    // The agent's own state (handed to this router, or signed) is never refused for it; a router relaying it waits.
    expect(t.check(state('r1'), from('A'), T0 + 503 + VOUCHER_SWITCH_MS)).toBeUndefined();
    t.claimed(state('r1'), from('A'), T0 + 503 + VOUCHER_SWITCH_MS);
    expect(t.check(state('r1'), by('R2'), T0 + 504 + VOUCHER_SWITCH_MS)).toBe('vouch');
  });

  it('an allowlist admits only its peers, and they may take over at once', () => {
    const t = trust({ agentPeers: ['A', 'B'] });
    expect(t.check(state('r1'), from('X'), T0)).toBe('not_allowed');
    t.claimed(state('r1'), from('A'), T0);
    expect(t.check(state('r1'), from('B'), T0 + 1)).toBeUndefined();
  });

  it('refuses a bootAt or sentAt ahead of the clock: a huge bootAt cannot take over an id', () => {
    const t = trust();
    expect(t.check(state('r1', undefined, { bootAt: Number.MAX_SAFE_INTEGER }), from('A'), T0)).toBe('future');
    expect(t.check(state('r1', undefined, { bootAt: T0 + MAX_CLOCK_AHEAD_MS + 1 }), from('A'), T0)).toBe('future');
    expect(t.check(state('r1', undefined, { sentAt: T0 + MAX_CLOCK_AHEAD_MS + 1 }), from('A'), T0)).toBe('future');
    expect(t.check(state('r1', undefined, { bootAt: T0 + 5_000 }), from('A'), T0)).toBeUndefined(); // clock skew
  });

  it(`holds at most ${MAX_REPLICAS_PER_PEER} ids per peer`, () => {
    const t = trust();
    for (let i = 0; i < MAX_REPLICAS_PER_PEER; i++) t.claimed(state(`r${i}`), from('A'), T0);
    expect(t.check(state('one-more'), from('A'), T0)).toBe('too_many_ids');
    expect(t.check(state('r0'), from('A'), T0)).toBeUndefined();
  });

  it('url and admin must be addresses the publisher can serve', () => {
    const t = trust({ agentNetworks: ['10.8.0.0/16', '*.pods.example', 'gpu-1.example'] });
    const remote = from('A', ['10.1.2.3']);
    expect(t.check(state('r', 'http://10.1.2.3:9000'), remote, T0)).toBeUndefined();
    expect(t.check(state('r', 'http://[::ffff:10.1.2.3]:9000'), remote, T0)).toBeUndefined();
    expect(t.check(state('r', 'http://10.1.2.4:9000'), remote, T0)).toBe('foreign_url');
    // A remote peer may not point routers at their own loopback (or metadata) services.
    expect(t.check(state('r', 'http://127.0.0.1:9000'), remote, T0)).toBe('foreign_url');
    expect(t.check(state('r', 'http://localhost:9000'), remote, T0)).toBe('foreign_url');
    expect(t.check(state('r', 'http://169.254.169.254:80'), remote, T0)).toBe('foreign_url');
    expect(t.check(state('r', 'http://10.1.2.3:9000', { admin: 'http://169.254.169.254/' }), remote, T0)).toBe(
      'foreign_url',
    );
    // Allowlisted networks and names.
    expect(t.check(state('r', 'http://10.8.3.4:9000'), remote, T0)).toBeUndefined();
    expect(t.check(state('r', 'http://a.pods.example:9000'), remote, T0)).toBeUndefined();
    expect(t.check(state('r', 'http://gpu-1.example:9000'), remote, T0)).toBeUndefined();
    expect(t.check(state('r', 'http://gpu-2.example:9000'), remote, T0)).toBe('foreign_url');
    // On one machine (the peer connects over loopback) any loopback address will do.
    expect(t.check(state('r', 'http://127.0.0.1:9000'), from('A', ['127.0.0.1']), T0)).toBeUndefined();
    expect(t.check(state('r', 'http://localhost:9000'), from('A', ['::1']), T0)).toBeUndefined();
    // Only http(s); an empty admin (nothing to fetch) is fine.
    expect(t.check(state('r', 'file:///etc/passwd'), remote, T0)).toBe('foreign_url');
    expect(t.check(state('r', 'http://10.1.2.3:9000', { admin: '' }), remote, T0)).toBeUndefined();
    // Not connected to the author: nothing to check the addresses against.
    expect(t.check(state('r', 'http://10.1.2.3:9000'), from('A', [], 'relay'), T0)).toBe('relayed');
  });

  it('relayed state (author not connected here) may name agentNetworks, or only what the relay could name itself', () => {
    const t = trust({ agentNetworks: ['10.8.0.0/16', '*.pods.example'] });
    const relayed = (viaAddresses: string[]): Origin => ({ peer: 'A', via: 'R', addresses: [], viaAddresses });
    // Inside agentNetworks, whoever relays it.
    expect(t.check(state('r', 'http://10.8.3.4:9000'), relayed(['10.9.0.1']), T0)).toBeUndefined();
    expect(
      t.check(
        state('r', 'http://a.pods.example:9000', { admin: 'http://a.pods.example:9001' }),
        relayed(['10.9.0.1']),
        T0,
      ),
    ).toBeUndefined();
    // Outside: refused as relayed, even an address the author would be allowed from its own connection.
    expect(t.check(state('r', 'http://10.1.2.3:9000'), relayed(['10.9.0.1']), T0)).toBe('relayed');
    expect(
      t.check(state('r', 'http://10.8.3.4:9000', { admin: 'http://169.254.169.254/' }), relayed(['10.9.0.1']), T0),
    ).toBe('relayed');
    // A remote relay cannot vouch for this machine's loopback.
    expect(t.check(state('r', 'http://127.0.0.1:9000'), relayed(['10.9.0.1']), T0)).toBe('relayed');
    // What the relay could publish itself: its own address, and on one machine any local address.
    expect(t.check(state('r', 'http://10.9.0.1:9000'), relayed(['10.9.0.1']), T0)).toBeUndefined();
    expect(t.check(state('r', 'http://127.0.0.1:9000'), relayed(['127.0.0.1']), T0)).toBeUndefined();
    // No relay addresses known: nothing but agentNetworks.
    expect(t.check(state('r', 'http://127.0.0.1:9000'), relayed([]), T0)).toBe('relayed');
    // Without agentNetworks a remote relay brings nothing.
    expect(trust().check(state('r', 'http://10.8.3.4:9000'), relayed(['10.9.0.1']), T0)).toBe('relayed');
  });

  it(`meters each peer: a burst of ${PEER_MESSAGE_BURST}, then ${PEER_MESSAGES_PER_S} per second`, () => {
    const t = trust();
    let ok = 0;
    for (let i = 0; i < PEER_MESSAGE_BURST + 50; i++) if (t.spend('A', T0)) ok++;
    expect(ok).toBe(PEER_MESSAGE_BURST);
    expect(t.spend('B', T0)).toBe(true);
    expect(t.spend('A', T0 + Math.ceil(1_000 / PEER_MESSAGES_PER_S))).toBe(true);
  });
});

describe('the topic validator (FleetView.judge)', () => {
  const view = (now: () => number) => makeView([], { fleet: 'test', now });
  const bytes = (id: string, extra: Parameters<typeof makeState>[1] = {}) =>
    encodeState(state(id, 'http://127.0.0.1:9000', extra));

  it('rejects what the decoder rejects and what the author may not say; ignores the stale and what a relay brings', () => {
    let now = T0;
    const v = view(() => now);
    expect(v.judge(new Uint8Array([1, 2, 3]), from('A'))).toBe('reject');
    expect(v.judge(new Uint8Array(300 * 1024), from('A'))).toBe('reject');
    expect(v.judge(bytes('r1', { fleet: 'other' }), from('A'))).toBe('reject');
    expect(v.judge(bytes('r1', { bootAt: 1e15 }), from('A'))).toBe('reject');
    const first = bytes('r1', { seq: 5 });
    expect(v.judge(first, from('A'))).toBe('accept');
    v.applyBytes(first, from('A'));
    expect(v.replicas.get('r1')?.state.seq).toBe(5);
    // Another key claiming r1: rejected from its author, ignored through a relay (the relay may know better).
    expect(v.judge(bytes('r1', { seq: 6 }), from('B'))).toBe('reject');
    expect(v.judge(bytes('r1', { seq: 6 }), from('B', ['127.0.0.1'], 'relay'))).toBe('ignore');
    // Old news: ignored, no penalty.
    expect(v.judge(bytes('r1', { seq: 4 }), from('A'))).toBe('ignore');
    now += 60_000;
    expect(v.judge(bytes('r2', { sentAt: T0 }), from('C'))).toBe('ignore');
    expect(v.drops).toMatchObject({
      malformed: 1,
      too_large: 1,
      fleet: 1,
      future: 1,
      not_owner: 2,
      superseded: 1,
      stale: 1,
    });
  });

  it('applying with an origin checks again: a claim that lost the race is dropped', () => {
    const v = view(() => T0);
    const a = bytes('r1', { seq: 1 });
    const b = bytes('r1', { seq: 2 });
    expect(v.judge(a, from('A'))).toBe('accept');
    expect(v.judge(b, from('B'))).toBe('accept'); // judged before A's state was applied
    v.applyBytes(a, from('A'));
    v.applyBytes(b, from('B'));
    expect(v.replicas.get('r1')?.state.seq).toBe(1);
    expect(v.trust.ownerOf('r1')).toBe('A');
  });

  it('property: whatever the decoder refuses, the validator rejects (1,000 mutated messages)', () => {
    const v = view(() => T0);
    const good = bytes('r1', { seq: 1 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.nat(255)), { minLength: 1, maxLength: 6 }),
        fc.nat(good.length),
        (flips, cut) => {
          const b = Uint8Array.from(good.subarray(0, Math.max(1, cut)));
          for (const [i, x] of flips) b[i % b.length] = x;
          const verdict = v.judge(b, from('A'));
          if (!decodeState(b).ok) expect(verdict).toBe('reject');
        },
      ),
      { seed: FUZZ_SEED, numRuns: 1_000 },
    );
  });
});
