/**
 * Batched relay (gossip/batch.ts, handoff.ts, relay.ts): the batch and
 * hand-off wire forms, the window, and over TCP that an agent's state reaches
 * every router through one router's batch, fails over to its second router,
 * and falls back to a signed state where no router takes hand-offs.
 */
import { privateKeyFromProtobuf } from '@libp2p/crypto/keys';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitFor } from '@warmpath/testkit';
import { generateIdentity, GRAYLIST_THRESHOLD, peerIdOfIdentity, type GossipNode } from '../src/gossip.ts';
import type { GossipOrigin } from '../src/gossip/types.ts';
import {
  BATCH_MAGIC,
  Batcher,
  type BatchEntry,
  HandoffReader,
  isBatch,
  packBatch,
  packHandoff,
  peerIdText,
  unpackBatch,
} from '../src/gossip/batch.ts';
import { batchWindowFor, HandoffRate, statesSentPerS, statesWindowFor } from '../src/gossip/window.ts';
import { coalesceStates } from '../src/coalesce.ts';
import { decodeState, encodeState, type ReplicaState } from '../src/protocol.ts';
import { sampleState } from './sample-state.ts';
import { tcpNodes } from './tcp-nodes.ts';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

async function author(): Promise<{ id: string; multihash: Uint8Array }> {
  const key = await generateIdentity();
  return { id: peerIdOfIdentity(key), multihash: privateKeyFromProtobuf(key).publicKey.toMultihash().bytes };
}

describe('batch wire form', () => {
  it('packs states with their slots and, where named, their authors, and unpacks them unchanged; an author reads back as its peer id', async () => {
    const a = await author();
    const b = await author();
    const batch = packBatch(0xdeadbeef, [
      { slot: 0, author: a.multihash, state: bytes('one') },
      { slot: 1, author: b.multihash, state: new Uint8Array(300).fill(7) },
      { slot: 0, state: bytes('three') },
    ]);
    expect(batch[0]).toBe(BATCH_MAGIC);
    const out = unpackBatch(batch, 16)!;
    expect(out.epoch).toBe(0xdeadbeef);
    expect(out.entries.map((e) => [e.slot, e.author])).toEqual([
      [0, a.id],
      [1, b.id],
      [0, undefined],
    ]);
    expect(text(out.entries[0]!.state)).toBe('one');
    expect(out.entries[1]!.state).toEqual(new Uint8Array(300).fill(7));
    expect(text(out.entries[2]!.state)).toBe('three');
  });

  it('refuses what is not a whole batch: truncated, empty, an empty state, more states than allowed', async () => {
    const a = await author();
    const batch = packBatch(1, [
      { slot: 0, author: a.multihash, state: bytes('one') },
      { slot: 0, state: bytes('two') },
    ]);
    const first = packBatch(1, [{ slot: 0, author: a.multihash, state: bytes('one') }]).byteLength;
    // Cut at a state's end, the rest is a batch of the states before it (the signature covers the whole).
    expect(unpackBatch(batch.subarray(0, first), 16)?.entries).toHaveLength(1);
    for (let cut = 1; cut < batch.byteLength; cut++)
      if (cut !== first) expect(unpackBatch(batch.subarray(0, cut), 16)).toBeUndefined();
    expect(unpackBatch(new Uint8Array([BATCH_MAGIC, 0, 0, 0, 1]), 16)).toBeUndefined();
    expect(unpackBatch(packBatch(1, [{ slot: 0, state: new Uint8Array(0) }]), 16)).toBeUndefined();
    expect(unpackBatch(batch, 1)).toBeUndefined();
  });

  it('a state is never read as a batch, nor a batch as a state (0xc1 is a byte msgpack never uses)', async () => {
    const state = encodeState(sampleState());
    expect(isBatch(state)).toBe(false);
    const batch = packBatch(1, [{ slot: 0, author: (await author()).multihash, state }]);
    const res = decodeState(batch);
    expect(res.ok).toBe(false);
  });

  it('peerIdText is base58btc, leading zero bytes as 1s', () => {
    expect(peerIdText(new Uint8Array([0, 0, 1]))).toBe('112');
    expect(peerIdText(new Uint8Array([0xff]))).toBe('5Q');
  });
});

describe('hand-off frames', () => {
  it('reassembles frames however the stream cuts them', () => {
    const frames = [
      packHandoff('g', bytes('first')),
      packHandoff(undefined, bytes('second')),
      packHandoff('h', bytes('x')),
    ];
    const all = Buffer.concat(frames);
    const reader = new HandoffReader(1024);
    const got: Array<{ group: string | undefined; state: string }> = [];
    for (let i = 0; i < all.byteLength; i += 3)
      for (const f of reader.push(all.subarray(i, i + 3))!) got.push({ group: f.group, state: text(f.state) });
    expect(got).toEqual([
      { group: 'g', state: 'first' },
      { group: undefined, state: 'second' },
      { group: 'h', state: 'x' },
    ]);
  });

  it('refuses a frame over the limit and one without a state', () => {
    expect(new HandoffReader(16).push(packHandoff(undefined, new Uint8Array(64)))).toBeUndefined();
    expect(new HandoffReader(16).push(new Uint8Array([1, 0]))).toBeUndefined();
  });
});

describe('the window', () => {
  afterEach(() => void vi.useRealTimers());

  it('names an agent beside its state on first sight and then at most once a second; its other states carry only its slot', async () => {
    vi.useFakeTimers();
    const got: BatchEntry[] = [];
    const batcher = new Batcher(50, 64 * 1024, (_g, batch) => got.push(...unpackBatch(batch, 100)!.entries));
    const a = (await author()).multihash;
    const b = (await author()).multihash;
    for (let i = 0; i < 30; i++) {
      batcher.add(undefined, i % 2 === 0 ? a : b, bytes(`s${i}`));
      vi.advanceTimersByTime(100);
    }
    batcher.flushAll();
    expect(new Set(got.map((e) => e.slot))).toEqual(new Set([0, 1]));
    // 30 states over 3 s, two agents: each named at 0, 1 and 2 s (or the first state after).
    expect(got.filter((e) => e.author !== undefined)).toHaveLength(6);
    expect(got.slice(0, 2).every((e) => e.author !== undefined)).toBe(true);
  });

  it("widens a flooding router's window so that each router reads at most the budget of batches a second, up to a second", () => {
    expect(batchWindowFor(50, 7, 500)).toBe(50); // 8 routers: 7 × 20 batches a second is within 500
    expect(batchWindowFor(50, 99, 500)).toBe(198); // 100 routers: 99 batches per 198 ms, 500 a second
    expect(batchWindowFor(50, 2_000, 500)).toBe(1_000);
    expect(batchWindowFor(50, 99, 0)).toBe(50); // budget off: the floor
    expect(batchWindowFor(0, 99, 500)).toBe(0); // no window: no hand-offs, nothing to widen
    vi.useFakeTimers();
    let windowMs = 50;
    const at: number[] = [];
    const batcher = new Batcher(
      () => windowMs,
      64 * 1024,
      () => at.push(Date.now()),
    );
    const t0 = Date.now();
    const a = new Uint8Array(38).fill(1);
    batcher.add(undefined, a, bytes('s1'));
    windowMs = 200; // read when the next batch starts to fill
    batcher.add(undefined, a, bytes('s2'));
    vi.advanceTimersByTime(199);
    expect(at).toEqual([t0]);
    vi.advanceTimersByTime(1);
    expect(at).toEqual([t0, t0 + 200]);
  });

  it('widens the window until the routers sending as this one send each reader at most the budget of states a second', () => {
    // An agent's states in one window go as one: the wider the window, the fewer a router sends each reader.
    const handed = { agents: 100, perS: 569 };
    expect(statesSentPerS(50, 100, 569)).toBeCloseTo(500, -1);
    const w = statesWindowFor(50, 99, handed, 20_000);
    expect(99 * statesSentPerS(w, 100, 569)).toBeLessThanOrEqual(20_000);
    expect(99 * statesSentPerS(w - 1, 100, 569)).toBeGreaterThan(20_000);
    expect(w).toBeGreaterThan(400);
    expect(w).toBeLessThan(500);
    // A fleet within the budget keeps the floor; the budget off, or no one handing off, too.
    expect(statesWindowFor(50, 31, { agents: 94, perS: 534 }, 20_000)).toBe(50);
    expect(statesWindowFor(50, 99, handed, 0)).toBe(50);
    expect(statesWindowFor(50, 99, { agents: 0, perS: 0 }, 20_000)).toBe(50);
    // Out of reach even at the widest window: the widest.
    expect(statesWindowFor(50, 99, { agents: 10_000, perS: 56_900 }, 20_000)).toBe(1_000);
  });

  it('counts the agents handing off and their states a second over the last whole period', () => {
    const rate = new HandoffRate();
    expect(rate.read(0)).toEqual({ agents: 0, perS: 0 });
    for (let t = 0; t < 2_000; t += 10) rate.add(t % 20 === 0 ? 'a' : 'b', t);
    expect(rate.read(1_999)).toEqual({ agents: 0, perS: 0 }); // the first period has not ended
    expect(rate.read(2_000)).toEqual({ agents: 2, perS: 100 });
    rate.add('a', 2_500);
    expect(rate.read(4_100)).toEqual({ agents: 1, perS: 0.5 });
    // A long silence: quiet, not the last busy period.
    expect(rate.read(20_000)).toEqual({ agents: 0, perS: 0 });
  });

  it("sends a state after a quiet window at once, later ones as one batch at that window's end, each group on its own, early at the size cap", () => {
    vi.useFakeTimers();
    const sent: Array<{ group: string | undefined; states: number; at: number }> = [];
    const batcher = new Batcher(50, 1_000, (group, batch, states) => {
      expect(unpackBatch(batch, 100)?.entries).toHaveLength(states);
      sent.push({ group, states, at: Date.now() });
    });
    const t0 = Date.now();
    const a = new Uint8Array(38).fill(1);
    batcher.add('g', a, bytes('s1')); // quiet before: at once
    expect(sent).toEqual([{ group: 'g', states: 1, at: t0 }]);
    vi.advanceTimersByTime(20);
    batcher.add('g', a, bytes('s2'));
    vi.advanceTimersByTime(10);
    batcher.add('g', a, bytes('s3'));
    batcher.add(undefined, a, bytes('s4')); // another group: its own window
    expect(sent.at(-1)).toEqual({ group: undefined, states: 1, at: t0 + 30 });
    vi.advanceTimersByTime(19);
    expect(sent).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(sent.at(-1)).toEqual({ group: 'g', states: 2, at: t0 + 50 });
    // Busy: within a window of the last batch, 1,000 pending bytes close it at once.
    for (let i = 0; i < 5; i++) batcher.add('g', a, new Uint8Array(200));
    expect(sent.at(-1)).toEqual({ group: 'g', states: 4, at: t0 + 50 });
    vi.advanceTimersByTime(49);
    expect(sent).toHaveLength(4);
    vi.advanceTimersByTime(1);
    expect(sent.at(-1)).toEqual({ group: 'g', states: 1, at: t0 + 100 });
  });
});

describe("coalescing an agent's states in the window", () => {
  afterEach(() => void vi.useRealTimers());
  const state = (seq: number, from: number, over: Partial<ReplicaState> = {}): ReplicaState =>
    sampleState({
      seq,
      sentAt: 1_700_000_000_000 + seq * 100,
      load: { ...sampleState().load, running: seq },
      digest: { from, size: 3, added: BigUint64Array.of(BigInt(seq)), removed: BigUint64Array.of(BigInt(seq - 1)) },
      ...over,
    });
  /** A batcher with a window open (its first state went at once), and the states of each batch it sent. */
  const windowed = (maxBytes = 64 * 1024) => {
    vi.useFakeTimers();
    const sent: BatchEntry[][] = [];
    const batcher = new Batcher(
      50,
      maxBytes,
      (_g, batch) => sent.push(unpackBatch(batch, 100)!.entries),
      coalesceStates,
    );
    batcher.add(undefined, new Uint8Array(38).fill(9), bytes('opens the window'));
    sent.length = 0;
    const send = () => {
      vi.advanceTimersByTime(50);
      return sent.at(-1)!.map((e) => decodeState(e.state));
    };
    return { batcher, send };
  };

  it("an agent's second state in a window takes the first's place as one: the newest, the deltas composed; other agents untouched", async () => {
    const { batcher, send } = windowed();
    const [a, b] = [await author(), await author()];
    batcher.add(undefined, a.multihash, encodeState(state(8, 7)));
    batcher.add(undefined, b.multihash, encodeState(state(3, 2, { replica: 'r2' })));
    batcher.add(undefined, a.multihash, encodeState(state(9, 8)));
    batcher.add(undefined, a.multihash, encodeState(state(10, 9)));
    expect(batcher.coalesced).toBe(2);
    const out = send();
    expect(out.map((s) => s.ok && [s.value.replica, s.value.seq, s.value.load.running])).toEqual([
      ['r1', 10, 10],
      ['r2', 3, 3],
    ]);
    const d = out[0]!.ok ? out[0]!.value.digest : undefined;
    expect([d?.from, d?.added, d?.removed]).toEqual([7, BigUint64Array.of(10n), BigUint64Array.of(7n, 8n, 9n)]);
  });

  it('a new boot or a gap in the chain is not composed: both go out', async () => {
    const { batcher, send } = windowed();
    const a = (await author()).multihash;
    batcher.add(undefined, a, encodeState(state(8, 7)));
    batcher.add(undefined, a, encodeState(state(1, -1, { boot: 'b2', bootAt: 1_700_000_000_001 })));
    expect(send().map((s) => s.ok && [s.value.boot, s.value.seq])).toEqual([
      ['b1', 8],
      ['b2', 1],
    ]);
    batcher.add(undefined, a, encodeState(state(8, 7)));
    batcher.add(undefined, a, encodeState(state(10, 9)));
    expect(send().map((s) => s.ok && s.value.seq)).toEqual([8, 10]);
    expect(batcher.coalesced).toBe(0);
  });

  it('a full state composed away leaves its static fields to the one that stands for it; the pending bytes follow', async () => {
    const { batcher, send } = windowed(4_096);
    const a = (await author()).multihash;
    const full = encodeState(state(8, 7, { models: ['only-in-the-full-one'] }));
    const compact = encodeState(state(9, 8, { models: ['only-in-the-full-one'], staticSeq: 8 }));
    batcher.add(undefined, a, full);
    // The 4 KiB cap counts the one state standing for all: counting each would close the window early.
    for (let seq = 9; seq < 209; seq++)
      batcher.add(undefined, a, encodeState(state(seq, seq - 1, { models: ['only-in-the-full-one'], staticSeq: 8 })));
    expect(batcher.coalesced).toBe(200);
    const out = send(); // decoded without a held state: whole
    expect(out.map((s) => s.ok && [s.value.seq, s.value.models])).toEqual([[208, ['only-in-the-full-one']]]);
    expect(compact.byteLength).toBeLessThan(full.byteLength);
  });
});

describe('batched relay over TCP', () => {
  const start = tcpNodes('batch');
  /** Three meshed routers, each recording what it delivers and from whom. */
  const routers = async (batchWindowMs?: number, batchReadsPerS?: number, batchStatesPerS?: number) => {
    const rs: GossipNode[] = [];
    for (let i = 0; i < 3; i++)
      rs.push(
        await start({
          bootstrap: rs.map((r) => r.multiaddrs()[0]!),
          ...(batchWindowMs !== undefined ? { batchWindowMs } : {}),
          ...(batchReadsPerS !== undefined ? { batchReadsPerS } : {}),
          ...(batchStatesPerS !== undefined ? { batchStatesPerS } : {}),
        }),
      );
    const heard = rs.map(() => [] as Array<{ data: string; origin: GossipOrigin }>);
    rs.forEach((r, i) => r.onMessage((d, _from, origin) => heard[i]!.push({ data: text(d), origin })));
    await waitFor(() => rs.every((r) => r.meshPeers().length >= 1), { timeoutMs: 10_000, message: 'a mesh' });
    return { rs, heard };
  };
  /** Publishes `tag-n` until every router heard one of them; the last tag heard everywhere. */
  const untilAllHear = async (agent: GossipNode, heard: Array<Array<{ data: string }>>, tag: string) => {
    let n = 0;
    await waitFor(
      async () => {
        await agent.publish(bytes(`${tag}-${n++}`));
        return heard.every((h) => h.some((m) => m.data.startsWith(`${tag}-`)));
      },
      { timeoutMs: 15_000, intervalMs: 100, message: `every router to hear ${tag}` },
    );
  };

  it("an agent's state reaches every router through its first hop's batch, vouched for by it; it fails over to its second router", async () => {
    const { rs, heard } = await routers();
    const agent = await start({ subscribe: false, bootstrap: [rs[0]!.multiaddrs()[0]!, rs[1]!.multiaddrs()[0]!] });
    await untilAllHear(agent, heard, 'a');
    expect(agent.stats().handedOff).toBeGreaterThan(0);
    const hop = rs.find((r) => r.stats().handOffsReceived > 0)!;
    expect(rs.filter((r) => r.stats().handOffsReceived > 0)).toHaveLength(1);
    expect(hop.stats().batchesPublished).toBeGreaterThan(0);
    rs.forEach((r, i) => {
      const m = heard[i]!.find((x) => x.data.startsWith('a-'))!;
      expect(m.origin.peer).toBe(agent.peerId);
      if (r === hop) expect([m.origin.via, m.origin.vouchedBy]).toEqual([agent.peerId, undefined]);
      else expect(m.origin.vouchedBy).toBe(hop.peerId);
    });
    // The first hop goes away: the agent hands its states to its other router, and the third still hears them.
    await hop.stop();
    const rest = rs.filter((r) => r !== hop);
    await untilAllHear(
      agent,
      rest.map((r) => heard[rs.indexOf(r)]!),
      'b',
    );
    expect(rest.some((r) => r.stats().handOffsReceived > 0)).toBe(true);
  }, 40_000);

  it("a router refusing what an agent hands it lowers the agent's score as for a signed state, until it is graylisted and read no more", async () => {
    const { rs } = await routers();
    for (const r of rs) r.setValidator(() => 'reject');
    const agent = await start({ subscribe: false, bootstrap: [rs[0]!.multiaddrs()[0]!, rs[1]!.multiaddrs()[0]!] });
    const hop = (): GossipNode | undefined => rs.find((r) => r.stats().handOffsReceived + r.stats().rejected > 0);
    await waitFor(
      async () => {
        await agent.publish(bytes('bad'));
        return (hop()?.peerScore(agent.peerId) ?? 0) < GRAYLIST_THRESHOLD;
      },
      { timeoutMs: 10_000, intervalMs: 50, message: 'the agent graylisted' },
    );
    const router = hop()!;
    expect(agent.stats().handedOff).toBeGreaterThan(0);
    const rejected = router.stats().rejected;
    await agent.publish(bytes('more'));
    await new Promise((r) => setTimeout(r, 200));
    expect(router.stats().rejected).toBe(rejected);
  }, 20_000);

  it('a flooding router widens its window with the routers it sends to (two here, at most 10 batches a second read: 200 ms)', async () => {
    const { rs } = await routers(50, 10);
    await waitFor(() => rs.every((r) => r.stats().batchWindowMs === 200), {
      timeoutMs: 10_000,
      message: 'every window at 200 ms',
    });
    const fixed = await routers(50, 0);
    expect(fixed.rs.map((r) => r.stats().batchWindowMs)).toEqual([50, 50, 50]);
  }, 30_000);

  it('a flooding router widens its window until the states it sends each router fit the budget (one agent at 50 a second, 2 routers, 20 a second: about 100 ms)', async () => {
    const { rs } = await routers(50, 0, 20);
    const agent = await start({ subscribe: false, bootstrap: [rs[0]!.multiaddrs()[0]!] });
    let n = 0;
    const timer = setInterval(() => void agent.publish(bytes(`s-${n++}`)).catch(() => {}), 20);
    try {
      await waitFor(() => rs[0]!.stats().batchWindowMs! > 80, {
        timeoutMs: 10_000,
        message: 'the first hop to widen its window for the states budget',
      });
      expect(rs[0]!.stats().batchWindowMs).toBeLessThan(200);
      // The other routers were handed nothing: their windows keep the floor.
      expect(rs.slice(1).map((r) => r.stats().batchWindowMs)).toEqual([50, 50]);
    } finally {
      clearInterval(timer);
    }
  }, 30_000);

  it('a router in no mesh offers no hand-off: its agents sign their states and flood them to every router they reach', async () => {
    const lone = await start({});
    const other = await start({});
    const agent = await start({ subscribe: false, bootstrap: [lone.multiaddrs()[0]!, other.multiaddrs()[0]!] });
    const heard: string[][] = [[], []];
    [lone, other].forEach((r, i) => r.onMessage((d) => heard[i]!.push(text(d))));
    await waitFor(
      async () => {
        await agent.publish(bytes('s'));
        return heard.every((h) => h.length > 0);
      },
      { timeoutMs: 10_000, intervalMs: 100, message: 'both routers to hear the agent' },
    );
    expect(agent.stats().handedOff).toBe(0);
  }, 20_000);

  it('where no router takes hand-offs (window 0: an older router), the agent publishes signed states as before', async () => {
    const { rs, heard } = await routers(0);
    const agent = await start({ subscribe: false, bootstrap: [rs[0]!.multiaddrs()[0]!] });
    await untilAllHear(agent, heard, 'c');
    expect(agent.stats().handedOff).toBe(0);
    expect(rs.every((r) => r.stats().batchesPublished === 0)).toBe(true);
    expect(heard[1]!.find((m) => m.data.startsWith('c-'))!.origin.vouchedBy).toBeUndefined();
  }, 30_000);
});
