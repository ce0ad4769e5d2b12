import { randomBytes } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  channelTopic,
  createGossipNode,
  GossipConfigError,
  generateIdentity,
  generateSwarmKey,
  loadIdentity,
  parseSwarmKey,
  topicFor,
} from '../src/gossip.ts';
import type { GossipNode, GossipOptions, GossipWarning } from '../src/gossip.ts';
import { GOSSIP_WARNING } from '../src/gossip/constants.ts';

// Short timings so the suite stays fast; production uses gossip/constants.ts.
const TIMING = {
  heartbeatIntervalMs: 200,
  redialIntervalMs: 200,
  dialTimeoutMs: 1_000,
  isolationWarningAfterMs: 1_500,
};
const WAIT_MS = 8_000;
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const decode = (data: Uint8Array): string => new TextDecoder().decode(data);

interface Received {
  data: Uint8Array;
  from: string;
}

/**
 * Resolves once `check()` holds, re-checking on every event and message of
 * `nodes`; the timeout only bounds a failure, it is never waited out.
 */
function until(what: string, nodes: GossipNode[], check: () => boolean, ms = WAIT_MS): Promise<void> {
  if (check()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const offs: Array<() => void> = [];
    const finish = (err?: Error): void => {
      clearTimeout(timer);
      for (const off of offs) off();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => finish(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    const recheck = (): void => {
      if (check()) finish();
    };
    for (const node of nodes) offs.push(node.onEvent(recheck), node.onMessage(recheck));
  });
}

function record(node: GossipNode): Received[] {
  const got: Received[] = [];
  node.onMessage((data, from) => got.push({ data, from }));
  return got;
}

const texts = (got: Received[]): string[] => got.map((m) => decode(m.data));

describe('swarm key', () => {
  it('round-trips a generated key and fingerprints it', () => {
    const text = generateSwarmKey();
    expect(text).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}\n$/);
    const key = parseSwarmKey(text);
    expect(key.fingerprint).toMatch(/^[0-9a-f]{8}$/);
    expect(
      parseSwarmKey(
        encode(text.toUpperCase().replace('/KEY/SWARM/PSK', '/key/swarm/psk').replace('/BASE16/', '/base16/')),
      ).fingerprint,
    ).toBe(key.fingerprint);
    expect(parseSwarmKey(text.replaceAll('\n', '\r\n')).fingerprint).toBe(key.fingerprint);
  });

  it.each([
    ['empty', ''],
    ['wrong header', '/key/swarm/psk/2.0.0/\n/base16/\n' + 'ab'.repeat(32)],
    ['wrong codec', '/key/swarm/psk/1.0.0/\n/base64/\n' + 'ab'.repeat(32)],
    ['short key', '/key/swarm/psk/1.0.0/\n/base16/\n' + 'ab'.repeat(31)],
    ['not hex', '/key/swarm/psk/1.0.0/\n/base16/\n' + 'zz'.repeat(32)],
  ])('rejects a malformed key (%s) with a clear error', (_name, text) => {
    expect(() => parseSwarmKey(text)).toThrow(GossipConfigError);
    expect(() => parseSwarmKey(text)).toThrow(/expected three lines/);
  });
});

describe('identity file', () => {
  it('is created on first use and gives the same peer id on every later start', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'wp-identity-')), 'peer.key');
    const first = await loadIdentity(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(await loadIdentity(path)).toEqual(first);
    const ids = [];
    for (let i = 0; i < 2; i++) {
      const n = await createGossipNode({
        fleet: 'id',
        insecureNoSwarmKey: true,
        onWarning: null,
        privateKey: await loadIdentity(path),
      });
      ids.push(n.peerId);
    }
    expect(ids[0]).toBe(ids[1]);
  });
});

describe('options', () => {
  it('names the fleet topic and rejects bad options by name', async () => {
    expect(topicFor('prod-eu')).toBe('warmpath/prod-eu/state/1');
    expect(() => topicFor('a/b')).toThrow(/invalid fleet/);
    expect(channelTopic('prod-eu', 'routers')).toBe('warmpath/prod-eu/routers/1');
    for (const name of ['state', 'Routers', 'a/b', ''])
      await expect(createGossipNode({ fleet: 'x', insecureNoSwarmKey: true, channels: [name] })).rejects.toThrow(
        /invalid channel/,
      );
    const plain = await createGossipNode({ fleet: 'x', insecureNoSwarmKey: true, onWarning: null });
    expect(() => plain.channel('routers')).toThrow(/no channel "routers"/);
    await expect(createGossipNode({ fleet: 'x', bootstrap: ['not-a-multiaddr'] })).rejects.toThrow(/bootstrap\[0\]/);
    await expect(createGossipNode({ fleet: 'x', swarmKey: 'nope' })).rejects.toThrow(/invalid swarmKey/);
    await expect(createGossipNode({ fleet: 'x', listne: [] } as GossipOptions)).rejects.toThrow(
      /unknown option listne/,
    );
    await expect(createGossipNode({ fleet: 'x', timing: { dialTimeoutMs: -1 } })).rejects.toThrow(
      /timing\.dialTimeoutMs/,
    );
    await expect(createGossipNode({ fleet: 'x', insecureNoSwarmKey: true, mesh: { D: 3, Dlo: 4 } })).rejects.toThrow(
      /Dlo ≤ D ≤ Dhi/,
    );
    await expect(
      createGossipNode({ fleet: 'x', insecureNoSwarmKey: true, mesh: { Dout: 1 } } as unknown as GossipOptions),
    ).rejects.toThrow(/unknown option mesh\.Dout/);
    // No swarm key: refused unless the operator says so explicitly.
    await expect(createGossipNode({ fleet: 'x' })).rejects.toThrow(/a swarm key is required/);
    await expect(
      createGossipNode({ fleet: 'x', insecureNoSwarmKey: 'yes' } as unknown as GossipOptions),
    ).rejects.toThrow(/insecureNoSwarmKey must be/);
  });
});

describe('gossip node over TCP', () => {
  const fleet = 'test-fleet';
  const swarmKey = generateSwarmKey();
  let identityA: Uint8Array;
  let a: GossipNode;
  let b: GossipNode;
  let c: GossipNode;
  const started: GossipNode[] = [];
  const got = new Map<GossipNode, Received[]>();

  // Subscribers relaying each other's signed messages through the mesh (relay 'mesh'; flooded batches:
  // gossip-flood.test.ts).
  async function node(opts: Omit<GossipOptions, 'timing'>): Promise<GossipNode> {
    const n = await createGossipNode({ onWarning: null, timing: TIMING, relay: 'mesh', ...opts });
    got.set(n, record(n));
    await n.start();
    started.push(n);
    return n;
  }
  const inbox = (n: GossipNode): Received[] => got.get(n) ?? [];

  beforeAll(async () => {
    identityA = await generateIdentity();
    a = await node({ fleet, swarmKey, privateKey: identityA });
    b = await node({ fleet, swarmKey, bootstrap: a.multiaddrs() });
    c = await node({ fleet, swarmKey, bootstrap: a.multiaddrs() });
    // B and C only reach each other through A, so wait for A's mesh to hold both.
    await until(
      'A meshed with B and C, and B, C meshed with A',
      [a, b, c],
      () =>
        a.meshPeers().includes(b.peerId) &&
        a.meshPeers().includes(c.peerId) &&
        b.meshPeers().includes(a.peerId) &&
        c.meshPeers().includes(a.peerId),
    );
  });

  afterAll(async () => {
    await Promise.all(started.map((n) => n.stop()));
  });

  it('delivers every node’s message to the other two (B→C relayed through A)', async () => {
    for (const [n, name] of [
      [a, 'A'],
      [b, 'B'],
      [c, 'C'],
    ] as const)
      await n.publish(encode(`hello from ${name}`));
    const expected = new Map([
      [a, ['hello from B', 'hello from C']],
      [b, ['hello from A', 'hello from C']],
      [c, ['hello from A', 'hello from B']],
    ]);
    await until('all six deliveries', [a, b, c], () =>
      [...expected].every(([n, want]) => want.every((w) => texts(inbox(n)).includes(w))),
    );
    for (const [n, want] of expected) {
      expect(texts(inbox(n)).sort()).toEqual(want);
    }
    // The origin, not the relaying peer (A), is reported as the sender.
    expect(inbox(b).find((m) => decode(m.data) === 'hello from C')?.from).toBe(c.peerId);
    expect(a.stats()).toMatchObject({ published: 1, received: 2, handlerErrors: 0, publishErrors: 0 });
  });

  it('does not deliver another fleet’s topic', async () => {
    const d = await node({ fleet: 'other-fleet', swarmKey, bootstrap: a.multiaddrs() });
    await until('D connected to A', [d], () => d.peers().includes(a.peerId));
    const before = inbox(a).length + inbox(b).length + inbox(c).length;
    // Nobody in `test-fleet` subscribes to D's topic, so D has no recipients…
    expect(await d.publish(encode('from the other fleet'))).toBe(0);
    expect(d.stats().publishedToNoPeers).toBe(1);
    // …and A's next fleet message goes to B and C only.
    expect(await a.publish(encode('after D'))).toBe(2);
    await until(
      'B and C got "after D"',
      [b, c],
      () => texts(inbox(b)).includes('after D') && texts(inbox(c)).includes('after D'),
    );
    expect(inbox(a).length + inbox(b).length + inbox(c).length).toBe(before + 2);
    expect(texts([...inbox(a), ...inbox(b), ...inbox(c)])).not.toContain('from the other fleet');
    expect(inbox(d)).toEqual([]);
    await d.stop();
  });

  it('keeps a node with a different swarm key out and warns the operator', async () => {
    const warnings: GossipWarning[] = [];
    const otherKey = generateSwarmKey();
    const e = await node({ fleet, swarmKey: otherKey, bootstrap: a.multiaddrs(), onWarning: (w) => warnings.push(w) });
    await until('isolation warning on E', [e], () => warnings.length > 0);
    const [warning] = warnings;
    expect(warning?.code).toBe(GOSSIP_WARNING.isolated);
    expect(warning?.message).toMatch(/could not connect to any of 1 bootstrap peer\(s\) within 1\.5s/);
    expect(warning?.message).toMatch(/check that this node's key matches/);
    expect(warning?.message).toContain(`swarm key fingerprint ${parseSwarmKey(otherKey).fingerprint}`);
    expect(e.stats().dialFailures).toBeGreaterThan(0);

    await a.publish(encode('not for E'));
    await until('B got "not for E"', [b], () => texts(inbox(b)).includes('not for E'));
    expect(e.peers()).toEqual([]);
    expect(inbox(e)).toEqual([]);
    for (const n of [a, b, c]) expect(n.peers()).not.toContain(e.peerId);
    await e.stop();
  });

  it('says so when a node has no bootstrap peer at all', async () => {
    const warnings: GossipWarning[] = [];
    const lone = await node({ fleet, swarmKey, bootstrap: [], onWarning: (w) => warnings.push(w) });
    await until('isolation warning on the lone node', [lone], () => warnings.length > 0);
    expect(warnings[0]?.code).toBe(GOSSIP_WARNING.isolated);
    expect(warnings[0]?.message).toMatch(
      /has no bootstrap peer to dial \(neither --bootstrap nor --bootstrap-dns gave one\) and no peer connected to it within 1\.5s/,
    );
    await lone.stop();
  });

  it('counts a throwing handler and keeps delivering', async () => {
    let calls = 0;
    const offThrow = c.onMessage(() => {
      calls++;
      throw new Error('handler bug');
    });
    // The point of this case: a handler that rejects must be counted, not crash the node.
    // eslint-disable-next-line @typescript-eslint/no-misused-promises
    const offReject = c.onMessage(async () => {
      throw new Error('async handler bug');
    });
    const errorsBefore = c.stats().handlerErrors;
    await b.publish(encode('first after bug'));
    await b.publish(encode('second after bug'));
    await until(
      'C got both messages',
      [c],
      () => texts(inbox(c)).includes('first after bug') && texts(inbox(c)).includes('second after bug'),
    );
    expect(calls).toBeGreaterThanOrEqual(2);
    // Each delivery: one synchronous throw and one rejected promise.
    expect(c.stats().handlerErrors - errorsBefore).toBe(2 * calls);
    offThrow();
    offReject();
  });

  it('shows each received RPC with its length on the stream (onRpc)', async () => {
    const seen: Array<{ data: string[]; bytes: number }> = [];
    const off = a.onRpc((rpc, bytes) =>
      seen.push({ data: rpc.messages.map((m) => decode(m.data ?? new Uint8Array())), bytes }),
    );
    await b.publish(encode('counted'));
    await until('A to read the RPC carrying it', [a, b], () => seen.some((r) => r.data.includes('counted')));
    off();
    const rpc = seen.find((r) => r.data.includes('counted'))!;
    // The RPC carries the payload plus the author, seqno, signature and topic: longer than the payload.
    expect(rpc.bytes).toBeGreaterThan('counted'.length + 64);
  });

  it('delivers a 100 KB message across a relay hop', async () => {
    const big = new Uint8Array(randomBytes(100 * 1024));
    await b.publish(big);
    await until('C got the 100 KB message', [c], () => inbox(c).some((m) => m.data.byteLength === big.byteLength));
    const m = inbox(c).find((x) => x.data.byteLength === big.byteLength);
    expect(Buffer.from(m?.data ?? []).equals(Buffer.from(big))).toBe(true);
    expect(m?.from).toBe(b.peerId);
    await expect(b.publish(new Uint8Array(600 * 1024))).rejects.toThrow(RangeError);
  });

  it('rejoins a restarted bootstrap peer (same identity and address)', async () => {
    const addrs = a.multiaddrs();
    const listen = addrs.map((s) => s.replace(/\/p2p\/.*$/, ''));
    await a.stop();
    expect(a.peers()).toEqual([]);
    await expect(a.publish(encode('x'))).rejects.toThrow(/not started/);
    await until('B and C lost A', [b, c], () => !b.peers().includes(a.peerId) && !c.peers().includes(a.peerId));

    const a2 = await node({ fleet, swarmKey, privateKey: identityA, listen });
    expect(a2.peerId).toBe(a.peerId);
    await until(
      'B and C re-dialled the restarted A',
      [a2],
      () => a2.meshPeers().includes(b.peerId) && a2.meshPeers().includes(c.peerId),
    );
    await b.publish(encode('after restart'));
    await until('C got "after restart" via A2', [c], () => texts(inbox(c)).includes('after restart'));
  });
});

describe('gossip node in a hub-and-spoke fleet on one IP', () => {
  const swarmKey = generateSwarmKey();
  const nodes: GossipNode[] = [];
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  });

  // gossipsub's default IP-colocation penalty scores every peer beyond 10 per
  // IP negative; the hub would then drop all leaves from its mesh and relay
  // nothing. The whole fleet of a sim or test shares 127.0.0.1. The mesh may
  // hold every leaf (Dhi ≥ LEAVES), so a leaf missing from it can only be a
  // negative score.
  it('relays through a hub with more than 10 peers on the same IP', async () => {
    const LEAVES = 12;
    const fleet = 'hub';
    const mesh = { D: 6, Dlo: 4, Dhi: LEAVES };
    const hub = await createGossipNode({ fleet, swarmKey, onWarning: null, timing: TIMING, mesh, relay: 'mesh' });
    await hub.start();
    nodes.push(hub);
    const leaves: GossipNode[] = [];
    for (let i = 0; i < LEAVES; i++) {
      const leaf = await createGossipNode({
        fleet,
        swarmKey,
        bootstrap: hub.multiaddrs(),
        onWarning: null,
        timing: TIMING,
        mesh,
        relay: 'mesh',
      });
      await leaf.start();
      leaves.push(leaf);
      nodes.push(leaf);
    }
    const inboxes = leaves.map(record);
    await until('every leaf meshed with the hub', leaves, () =>
      leaves.every((l) => l.meshPeers().includes(hub.peerId)),
    );
    await until('hub connected to all leaves', [hub], () => hub.peers().length === LEAVES);
    const [first] = leaves;
    await first?.publish(encode('spoke to spokes'));
    await until('every other leaf got the message via the hub', leaves, () =>
      inboxes.slice(1).every((got) => texts(got).includes('spoke to spokes')),
    );
  });

  // js-gossipsub never re-opens a peer's stream that failed to open while the
  // connection stays up; such a peer never announces the topic. A peer of
  // another fleet looks exactly the same from here, so it stands in for one.
  it('a publish-only node hangs up peers silent on the fleet topic; subscribers keep publish-only peers', async () => {
    const timing = { ...TIMING, silentPeerGraceMs: 300 };
    // x is an agent (publish-only), mate a router of the same fleet, stranger a router of another fleet.
    const x = await createGossipNode({ fleet: 'silent-x', swarmKey, onWarning: null, timing, subscribe: false });
    await x.start();
    nodes.push(x);
    const mate = await createGossipNode({
      fleet: 'silent-x',
      swarmKey,
      bootstrap: x.multiaddrs(),
      onWarning: null,
      timing,
    });
    const stranger = await createGossipNode({
      fleet: 'silent-y',
      swarmKey,
      bootstrap: x.multiaddrs(),
      onWarning: null,
      timing,
    });
    for (const n of [mate, stranger]) {
      await n.start();
      nodes.push(n);
    }
    await until('x hung up the silent stranger', [x, stranger], () => x.stats().silentPeersDropped >= 1);
    const got = record(mate);
    // Past the grace period the router still holds the publish-only agent and hears it.
    await until('mate got the agent message', [x, mate], () => {
      void x.publish(encode('still here')).catch(() => {});
      return texts(got).includes('still here');
    });
    // Absence over a period: wait twice the grace, then the router must still hold the agent.
    await new Promise((r) => setTimeout(r, 2 * timing.silentPeerGraceMs));
    expect(mate.peers()).toContain(x.peerId);
    expect(mate.stats().silentPeersDropped).toBe(0);
  });
});
