import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeSnapshot, encodeState, PUBLISH_FLOOR_MS, SNAPSHOT_CONTENT_TYPE } from '@warmpath/shared/wire';
import { waitFor } from '@warmpath/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { endpointBit } from '../src/fleet/published.ts';
import { snapshotFetcher } from '../src/fleet/snapshot.ts';
import { REORDER_WAIT_MS } from '../src/fleet/digest-sync.ts';
import type { Replica } from '../src/fleet/view.ts';
import { makeState, makeView } from './helpers.ts';

const H = (...xs: number[]) =>
  BigUint64Array.from(xs.map((x) => (BigInt(x) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn));

describe('FleetView', () => {
  it('supersedes by (boot, seq) and counts drops by reason', () => {
    const view = makeView();
    expect(view.apply(makeState('a', { seq: 5, load: { inflightTokens: 5 } }))).toBe(true);
    expect(view.apply(makeState('a', { seq: 4, load: { inflightTokens: 4 } }))).toBe(false);
    expect(view.apply(makeState('a', { seq: 5 }))).toBe(false);
    expect(view.replicas.get('a')!.state.load.inflightTokens).toBe(5);
    // A newer boot wins even with a lower seq.
    expect(view.apply(makeState('a', { boot: 'b2', bootAt: 2, seq: 1, load: { inflightTokens: 1 } }))).toBe(true);
    expect(view.replicas.get('a')!.state.load.inflightTokens).toBe(1);
    expect(view.apply(makeState('x', { fleet: 'other' }))).toBe(false);
    view.applyBytes(new Uint8Array([0xc1]));
    view.applyBytes(encodeState({ ...makeState('z'), v: 2 as 1 }));
    expect(view.drops).toMatchObject({ superseded: 2, fleet: 1, malformed: 1, version: 1 });
  });

  it('expires replicas older than the TTL and forgets silent ones', () => {
    let now = 1_000_000;
    const view = makeView([], { now: () => now, stateTtlMs: 3_000, forgetAfterMs: 10_000 });
    view.apply(makeState('a', { sentAt: now }));
    view.apply(makeState('b', { sentAt: now, digest: { from: -1, added: H(1, 2), size: 2 } }));
    expect(view.group('m', '')!.ring.size).toBe(2);
    now += 2_000;
    view.apply(makeState('a', { seq: 2, sentAt: now }));
    now += 2_000;
    view.sweep();
    expect(view.fresh(view.replicas.get('b')!, now)).toBe(false);
    expect(view.group('m', '')!.ring.members.map((m) => m.id)).toEqual(['a']);
    expect(view.statusCounts()).toMatchObject({ ready: 1, stale: 1 });
    now += 10_000;
    view.sweep();
    expect(view.replicas.has('b')).toBe(false);
    expect(view.indexSize).toBe(0);
  });

  it('keeps a quiet replica that publishes only at the floor, and finds it stale three floors after it stops', () => {
    let now = 1_000_000;
    const view = makeView([], { now: () => now });
    expect(view.stateTtlMs).toBeGreaterThanOrEqual(3 * PUBLISH_FLOOR_MS);
    const base = makeState('q', { sentAt: now });
    view.applyBytes(encodeState(base));
    // Thirty floors of quiet: whole periodic messages and change messages that leave the static fields out.
    for (let seq = 2; seq <= 30; seq++) {
      for (let t = 0; t < PUBLISH_FLOOR_MS; t += 250) {
        now += 250;
        view.sweep();
        expect(view.current(view.replicas.get('q')!, now)).toBe(true);
      }
      view.applyBytes(encodeState({ ...base, seq, sentAt: now, ...(seq % 2 === 0 ? { staticSeq: 1 } : {}) }));
    }
    expect(view.replicas.get('q')!.state).toMatchObject({ seq: 30, url: base.url, models: base.models });
    expect(view.group('m', '')!.ring.size).toBe(1);
    // It stops; the rest of the fleet still speaks, so silence is this replica's alone.
    view.apply(makeState('other', { sentAt: now }));
    now += 2 * PUBLISH_FLOOR_MS;
    view.sweep();
    expect(view.current(view.replicas.get('q')!, now)).toBe(true);
    view.apply(makeState('other', { seq: 2, sentAt: now }));
    now += view.stateTtlMs - 2 * PUBLISH_FLOOR_MS + 1;
    view.apply(makeState('other', { seq: 3, sentAt: now }));
    view.sweep();
    expect(view.fresh(view.replicas.get('q')!, now)).toBe(false);
    expect(view.group('m', '')!.ring.members.map((m) => m.id)).toEqual(['other']);
  });

  it('ignores a message that leaves out static fields it does not hold, without blaming its relay', () => {
    const view = makeView();
    const bytes = encodeState({ ...makeState('n', { seq: 5 }), staticSeq: 1 });
    const origin = { peer: 'author', via: 'relay', addresses: [] };
    expect(view.judge(bytes, origin)).toBe('ignore');
    expect(view.drops).toMatchObject({ no_base: 1 });
    view.applyBytes(encodeState(makeState('n', { seq: 4 })));
    view.applyBytes(Uint8Array.from(bytes)); // the same message arriving again
    expect(view.drops).toMatchObject({ no_base: 1 });
    expect(view.replicas.get('n')!.state).toMatchObject({ seq: 5, url: makeState('n').url });
  });

  it('rebuilds rings only when membership or weight changes', () => {
    const view = makeView([makeState('a'), makeState('b')]);
    const ring = view.group('m', '')!.ring;
    view.apply(makeState('a', { seq: 2, load: { inflightTokens: 999, kvUsedTokens: 50 } }));
    expect(view.group('m', '')!.ring).toBe(ring);
    view.apply(makeState('a', { seq: 3, capacity: { weight: 2 } }));
    expect(view.group('m', '')!.ring).not.toBe(ring);
  });

  it('keeps the columns placement reads in step with each state: figures, and whether a replica may be placed on', () => {
    let now = 1_000_000;
    const view = makeView([], { now: () => now, stateTtlMs: 3_000, forgetAfterMs: 10_000 });
    const chat = endpointBit('chat');
    const emb = endpointBit('embedding');
    view.apply(makeState('a', { sentAt: now, load: { inflightTokens: 700, prefillTokens: 300, kvUsedTokens: 50 } }));
    view.apply(makeState('b', { sentAt: now, endpoints: ['embedding'] }));
    const a = view.replicas.get('a')!.slot;
    const b = view.replicas.get('b')!.slot;
    expect([view.columns.inflightTokens[a], view.columns.prefillTokens[a], view.columns.kvUsedTokens[a]]).toEqual([
      700, 300, 50,
    ]);
    expect([
      view.placeable(a, chat, now),
      view.placeable(a, emb, now),
      view.placeable(b, chat, now),
      view.placeable(b, emb, now),
    ]).toEqual([true, false, false, true]);
    view.apply(makeState('a', { seq: 2, sentAt: now, status: 'draining', load: { inflightTokens: 900 } }));
    expect(view.columns.inflightTokens[a]).toBe(900);
    expect(view.placeable(a, chat, now)).toBe(false);
    view.apply(makeState('a', { seq: 3, sentAt: now, capacity: { weight: 0 } }));
    expect(view.placeable(a, chat, now)).toBe(false);
    view.apply(makeState('a', { seq: 4, sentAt: now }));
    expect(view.placeable(a, chat, now)).toBe(true);
    // Stale while others still report: not placeable; forgotten: its slot reads nothing.
    now += 4_000;
    view.apply(makeState('b', { seq: 2, sentAt: now, endpoints: ['embedding'] }));
    expect(view.placeable(a, chat, now)).toBe(false);
    now += 9_000;
    view.sweep();
    expect(view.replicas.has('a')).toBe(false);
    expect(view.placeable(a, chat, now)).toBe(false);
  });

  it('applies digest deltas and finds the longest matched prefix through the index', () => {
    const view = makeView();
    const chain = H(1, 2, 3, 4, 5);
    view.apply(makeState('a', { seq: 1, digest: { from: -1, added: chain.slice(0, 3), size: 3 } }));
    view.apply(makeState('b', { seq: 1, digest: { from: -1, added: chain.slice(0, 1), size: 1 } }));
    view.apply(
      makeState('a', {
        seq: 2,
        digest: { from: 1, added: chain.slice(3, 4), removed: new BigUint64Array(0), size: 4 },
      }),
    );
    const [a, b] = [view.replicas.get('a')!, view.replicas.get('b')!];
    view.scanWarmth(chain);
    expect(view.depthOf(a.slot)).toBe(4);
    expect(view.depthOf(b.slot)).toBe(1);
    view.apply(
      makeState('a', {
        seq: 3,
        digest: { from: 2, added: new BigUint64Array(0), removed: chain.slice(1, 2), size: 3 },
      }),
    );
    view.scanWarmth(chain);
    expect(view.depthOf(a.slot)).toBe(1);
    expect(view.holds(a, chain[3]!)).toBe(true);
  });

  it('excludes and reports a replica whose chunk size differs', () => {
    const events: unknown[] = [];
    const view = makeView([], { onEvent: (e) => events.push(e) });
    view.apply(makeState('a'));
    view.apply(makeState('odd', { chunkChars: 128, digest: { from: -1, added: H(9), size: 1 } }));
    expect(view.group('m', '')!.members.map((r) => r.id)).toEqual(['a']);
    expect(events).toContainEqual({ type: 'chunk_mismatch', replica: 'odd', theirs: 128, ours: 256 });
    expect(view.statusCounts().mismatch).toBe(1);
    expect(view.indexSize).toBe(0);
  });

  describe('snapshot pulls', () => {
    let server: Server | undefined;
    afterEach(() => server?.close());

    async function agentAdmin(snapshot: () => Uint8Array, hits: { n: number }): Promise<string> {
      server = createServer((req, res) => {
        hits.n++;
        expect(req.url).toBe('/warmpath/v1/digest');
        const body = snapshot();
        setTimeout(() => {
          res.writeHead(200, { 'content-type': SNAPSHOT_CONTENT_TYPE, 'content-length': body.byteLength });
          res.end(body);
        }, 30);
      });
      await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }

    it('a pull that fails does not lose what came while it ran: a self-contained digest and the deltas after it are applied', async () => {
      let fail = (_: Error): void => {};
      const view = makeView([], {
        fetchSnapshot: () => new Promise<Uint8Array>((_, reject) => (fail = reject)),
      });
      view.apply(makeState('a', { boot: 'b1', seq: 1, digest: { from: -1, added: H(1), size: 1 } }));
      const a = view.replicas.get('a')!;
      // A new boot whose first message is a delta: a pull, in flight until it fails.
      view.apply(makeState('a', { boot: 'b2', bootAt: 2, seq: 1, digest: { from: 0, added: H(2), size: 5 } }));
      // Meanwhile the agent sends a self-contained digest, then a delta on it, and one past a gap.
      view.apply(makeState('a', { boot: 'b2', bootAt: 2, seq: 2, digest: { from: -1, added: H(3, 4), size: 2 } }));
      view.apply(makeState('a', { boot: 'b2', bootAt: 2, seq: 3, digest: { from: 2, added: H(5), size: 3 } }));
      view.apply(makeState('a', { boot: 'b2', bootAt: 2, seq: 6, digest: { from: 5, added: H(6), size: 4 } }));
      expect(view.holds(a, H(3)[0]!)).toBe(false); // buffered while the pull runs
      fail(new Error('agent admin down'));
      await waitFor(() => view.pulls.failed === 1, { timeoutMs: 2_000, intervalMs: 5, message: 'the pull to fail' });
      expect(Array.from(H(3, 4, 5), (h) => view.holds(a, h))).toEqual([true, true, true]);
      expect(view.holds(a, H(6)[0]!)).toBe(false); // past a gap: buffered for the next pull
      expect(view.digestOf(a)).toMatchObject({ boot: 'b2', seq: 3 });
    });

    it('waits briefly for deltas gossip delivered out of order, and applies them without a pull', () => {
      let pulls = 0;
      const view = makeView([], {
        fetchSnapshot: () => {
          pulls++;
          return new Promise<Uint8Array>(() => {});
        },
      });
      view.apply(makeState('a', { seq: 1, digest: { from: -1, added: H(1), size: 1 } }));
      const a = view.replicas.get('a')!;
      // seq 3 overtakes seq 2: held, not pulled.
      view.apply(makeState('a', { seq: 3, digest: { from: 2, added: H(3), size: 3 } }));
      expect(view.holds(a, H(3)[0]!)).toBe(false);
      // seq 2 arrives late: its load is superseded, its delta closes the gap, and seq 3's follows.
      view.apply(makeState('a', { seq: 2, digest: { from: 1, added: H(2), size: 2 } }));
      expect(view.drops.superseded).toBe(1);
      expect([view.holds(a, H(2)[0]!), view.holds(a, H(3)[0]!)]).toEqual([true, true]);
      expect(view.digestOf(a)!.seq).toBe(3);
      expect(a.state.seq).toBe(3);
      // An old delta already folded in changes nothing.
      view.apply(makeState('a', { seq: 2, digest: { from: 1, added: H(2), size: 2 } }));
      expect(a.digestSize).toBe(3);
      expect(pulls).toBe(0);
    });

    it('on a gap still open after REORDER_WAIT_MS pulls one snapshot (deduplicated), keeps the old digest meanwhile, then replays buffered deltas', async () => {
      const hits = { n: 0 };
      const admin = await agentAdmin(
        () => encodeSnapshot({ v: 1, replica: 'a', boot: 'a-boot', seq: 5, chunkChars: 256, hashes: H(10, 11, 12) }),
        hits,
      );
      const f = snapshotFetcher(1_000);
      let now = 1_000_000;
      const view = makeView([], { fetchSnapshot: f.fetch, now: () => now });
      view.apply(makeState('a', { admin, seq: 1, digest: { from: -1, added: H(1), size: 1 } })); // self-contained
      expect(hits.n).toBe(0);
      const a = view.replicas.get('a')!;
      // seq 5 follows 4, which we never saw: a gap, held while 2–4 may still arrive
      view.apply(makeState('a', { admin, seq: 5, digest: { from: 4, added: H(12), size: 3 } }));
      view.apply(makeState('a', { admin, seq: 6, digest: { from: 5, added: H(13), size: 4 } }));
      expect(view.digestOf(a)!.pulling).toBe(false);
      now += REORDER_WAIT_MS;
      // Still open: pull.
      view.apply(makeState('a', { admin, seq: 8, digest: { from: 7, added: H(14), size: 5 } }));
      expect(view.digestOf(a)!.pulling).toBe(true);
      expect(view.holds(a, H(1)[0]!)).toBe(true); // old digest still serves
      await waitFor(() => !view.digestOf(a)!.pulling && view.pulls.ok === 1, {
        timeoutMs: 3_000,
        intervalMs: 5,
        message: 'the snapshot pull to finish',
      });
      expect(hits.n).toBe(1);
      expect(view.holds(a, H(1)[0]!)).toBe(false);
      expect(view.holds(a, H(13)[0]!)).toBe(true); // replayed seq 6 after snapshot seq 5
      expect(view.digestOf(a)!.seq).toBe(6); // seq 8 has a gap → another pull is due
      await f.close();
    });

    it('pulls on a new boot and on from = -1, and survives a failing agent', async () => {
      const hits = { n: 0 };
      let boot = 'b1';
      const admin = await agentAdmin(
        () => encodeSnapshot({ v: 1, replica: 'a', boot, seq: 1, chunkChars: 256, hashes: H(1, 2) }),
        hits,
      );
      const f = snapshotFetcher(1_000);
      let now = 1_000_000;
      const view = makeView([], { fetchSnapshot: f.fetch, now: () => now });
      view.apply(
        makeState('a', { admin, boot: 'b1', seq: 1, digest: { from: -1, added: new BigUint64Array(0), size: 2 } }),
      );
      const a = view.replicas.get('a')!;
      await waitFor(() => view.pulls.ok === 1, { timeoutMs: 3_000, intervalMs: 5, message: 'the first snapshot pull' });
      expect(a.digestSize).toBe(2);
      boot = 'b2';
      now += 1_000; // past the retry gap between pulls of one replica
      view.apply(
        makeState('a', {
          admin,
          boot: 'b2',
          bootAt: 2,
          seq: 1,
          digest: { from: 0, added: new BigUint64Array(0), size: 2 },
        }),
      );
      await waitFor(() => view.pulls.ok === 2, {
        timeoutMs: 3_000,
        intervalMs: 5,
        message: 'the pull after the new boot',
      });
      expect(view.digestOf(a)!.boot).toBe('b2');
      server!.close();
      now += 1_000;
      view.apply(
        makeState('a', {
          admin: 'http://127.0.0.1:1',
          boot: 'b2',
          bootAt: 2,
          seq: 9,
          digest: { from: 7, added: new BigUint64Array(0), size: 2 },
        }),
      );
      now += REORDER_WAIT_MS;
      view.apply(
        makeState('a', {
          admin: 'http://127.0.0.1:1',
          boot: 'b2',
          bootAt: 2,
          seq: 10,
          digest: { from: 9, added: new BigUint64Array(0), size: 2 },
        }),
      );
      await waitFor(() => view.pulls.failed === 1, {
        timeoutMs: 3_000,
        intervalMs: 5,
        message: 'the pull from the dead agent to fail',
      });
      expect(a.digestSize).toBe(2);
      await f.close();
    });
  });
});

export type { Replica };
