import { describe, expect, it } from 'vitest';
import { startRouter } from '../src/router.ts';
import { DECAY_EVERY, PREFIX_ROWS, RECENT_PLACEMENTS, StatusRecorder } from '../src/status/recorder.ts';
import { CONFIG, chainOf, chat, encode, makeState } from './helpers.ts';
import { describeRequest } from '@warmpath/shared/wire';

const info = (user: string, system?: string) =>
  describeRequest(chat(user, {}, system), 'chat', { chunkChars: CONFIG.chunkChars });

describe('StatusRecorder', () => {
  it('keeps the last placements newest first, refusals included', () => {
    let t = 0;
    const rec = new StatusRecorder(8, () => ++t);
    for (let i = 0; i < RECENT_PLACEMENTS + 5; i++)
      rec.record(info(`q${i}`), i % 2 === 0 ? 'warm' : 'ring', `r${i % 3}`);
    rec.recordRefusal('saturated');
    const recent = rec.recent();
    expect(recent.length).toBe(RECENT_PLACEMENTS);
    expect(recent[0]).toMatchObject({ branch: 'saturated', replica: undefined, prefix: '' });
    expect(recent[1]!.at).toBeGreaterThan(recent[2]!.at);
    expect(rec.total).toBe(RECENT_PLACEMENTS + 6);
  });

  it('counts prefixes at the key depth, evicts the least counted when full, and halves counts as traffic goes on', () => {
    const rec = new StatusRecorder(8);
    const shared = info('first question');
    for (let i = 0; i < 5; i++) rec.record(info(`question ${i}`), 'warm', 'a');
    // Same system prompt: one prefix row at depth 8 whatever the question.
    expect(rec.hottest(3)).toHaveLength(1);
    expect(rec.hottest(1)[0]).toMatchObject({ count: 5, depth: 8, hash: chainOf(chat('x'), 8)[7] });
    expect(shared.hashes[7]).toBe(rec.hottest(1)[0]!.hash);
    // Fill the table with one-off prefixes: the hot one survives, the table stays bounded.
    for (let i = 0; i < PREFIX_ROWS + 10; i++) rec.record(info('q', `system ${i} `.repeat(300)), 'ring', 'b');
    expect(rec.hottest(PREFIX_ROWS * 2).length).toBe(PREFIX_ROWS);
    expect(rec.hottest(1)[0]!.hash).toBe(shared.hashes[7]);
    // Short prompts are placed but count no prefix.
    rec.record(
      describeRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, 'chat', {}),
      'least-loaded',
      'c',
    );
    expect(rec.recent(1)[0]!.prefix).toBe('');
    const before = rec.hottest(1)[0]!.count;
    for (let i = rec.total; i % DECAY_EVERY !== 0; i++) rec.recordRefusal('no-replica');
    expect(rec.hottest(1)[0]!.count).toBe(Math.floor(before / 2));
  });
});

describe('status routes', () => {
  it('serves the page and the JSON: replicas with KV headroom, draining ones, the ejected field, placements', async () => {
    const router = await startRouter({ gossip: false, fleet: 'test' });
    try {
      router.ingest(
        encode(makeState('a', { load: { kvUsedTokens: 25_000, waiting: 2, running: 3 }, hotAdapters: ['sql-lora'] })),
      );
      router.ingest(encode(makeState('b', { status: 'draining' })));
      router.ingest(encode(makeState('c', { sentAt: Date.now() - 60_000 })));
      const page = await fetch(`${router.url}/warmpath/v1/status`);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await page.text()).toContain('status.json');
      const s = (await (await fetch(`${router.url}/warmpath/v1/status.json`)).json()) as {
        fleet: string;
        replicas: Array<Record<string, unknown>>;
        placements: { total: number };
        routers: { self: unknown; mesh: unknown[] };
      };
      expect(s.fleet).toBe('test');
      expect(s.replicas.map((r) => r.id)).toEqual(['a', 'b', 'c']);
      expect(s.replicas[0]).toMatchObject({
        status: 'ready',
        draining: false,
        ejected: false,
        hotAdapters: ['sql-lora'],
        running: 3,
        waiting: 2,
        kv: { usedTokens: 25_000, capacityTokens: 100_000, usedFraction: 0.25, headroomTokens: 75_000 },
      });
      expect(s.replicas[1]).toMatchObject({ status: 'draining', draining: true, live: false });
      expect(s.placements.total).toBe(0);
      expect(s.routers).toEqual({
        self: null,
        mesh: [],
        connectedPeers: 0,
        batchWindowMs: 0,
        statesCoalesced: 0,
        heard: 0,
        sharing: 1,
      });
      expect((await fetch(`${router.url}/warmpath/v1/status.json`, { method: 'POST' })).status).toBe(404);
    } finally {
      await router.close();
    }
  });
});
