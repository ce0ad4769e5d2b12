/**
 * Receipts: the prediction each dispatch carries (the placement's matched
 * depth, digest or overlay), the misroute rule, and the per-replica counts
 * the router core keeps when an answer reports the engine's cached tokens.
 */
import { manualClock } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { routerConfig } from '../src/config.ts';
import { expectedTokens, judge, MISROUTE_SHARE, Receipts } from '../src/core/receipts.ts';
import { RouterCore } from '../src/core/router-core.ts';
import type { Dispatch, SendResult } from '../src/core/types.ts';
import { chat, chainOf, makeState } from './helpers.ts';

type Ctx = { n: number };

function setup(overrides: Record<string, unknown> = {}) {
  const clock = manualClock(1_000);
  const sent: Array<{ d: Dispatch<Ctx>; report: (r: SendResult) => void }> = [];
  const core = new RouterCore<Ctx>({
    config: routerConfig({ fleet: 'test', ...overrides }),
    id: 'r',
    clock,
    send: (d, report) => sent.push({ d, report }),
    answer: () => {},
    fetchSnapshot: () => Promise.reject(new Error('none')),
  });
  const describeChat = (user: string) => {
    const body = chat(user);
    return { body, info: core.describe(body, 'chat', {}) };
  };
  return { clock, core, sent, describeChat };
}

describe('receipts', () => {
  it('judges a misroute: predicted at least half the prompt, the engine found less than half of its own count', () => {
    expect(MISROUTE_SHARE).toBe(0.5);
    expect(judge(600, 1000, 100, 1000)).toMatchObject({ expectedHit: true, misroute: true });
    expect(judge(600, 1000, 500, 1000)).toMatchObject({ expectedHit: true, misroute: false });
    // The engine's tokenizer counts 800 where the router estimated 1000: 450 cached is over half of it.
    expect(judge(600, 1000, 450, 800)).toMatchObject({ misroute: false });
    // A cold prediction is no expected hit, whatever the engine found.
    expect(judge(100, 1000, 0, 1000)).toMatchObject({ expectedHit: false, misroute: false });
    expect(expectedTokens(3, { chunkChars: 256, charsPerToken: 4 }, 1000)).toBe(192);
    expect(expectedTokens(30, { chunkChars: 256, charsPerToken: 4 }, 1000)).toBe(1000);
  });

  it("predicts from the digest a replica published, and counts a miss on it as that replica's misroute", () => {
    const { clock, core, sent, describeChat } = setup();
    core.receive(makeState('b', { sentAt: clock.now() }));
    const { body, info } = describeChat('a long question '.repeat(80));
    core.receive(makeState('a', { sentAt: clock.now(), digest: { added: chainOf(body) } }));
    core.route({ n: 1 }, info, body);
    const d = sent[0]!.d;
    expect(d.replica.id).toBe('a');
    expect(d.expectedCached).toBe(expectedTokens(info.hashes.length, core.config, info.promptTokens));
    expect(d.expectedCached).toBeGreaterThan(0.9 * info.promptTokens);
    sent[0]!.report({ kind: 'done', outcome: 'ok', usage: { cachedTokens: 0, promptTokens: info.promptTokens } });
    expect(core.receipts.byReplica.get('a')).toEqual({
      judged: 1,
      expectedHits: 1,
      misroutes: 1,
      errorTokens: d.expectedCached,
    });
  });

  it("predicts from this router's overlay, and counts an answer the engine served from cache as no misroute", () => {
    const { clock, core, sent, describeChat } = setup();
    core.receive(makeState('a', { sentAt: clock.now() }));
    core.receive(makeState('b', { sentAt: clock.now() }));
    const { body, info } = describeChat('the same prompt twice '.repeat(40));
    core.route({ n: 1 }, info, body);
    // Cold: no prediction, and an answer without cached tokens (TGI reports only prompt and completion) is not judged.
    expect(sent[0]!.d.expectedCached).toBe(0);
    sent[0]!.report({ kind: 'done', outcome: 'ok', usage: { promptTokens: 9, completionTokens: 2 } });
    expect(core.receipts.totals().judged).toBe(0);
    core.route({ n: 2 }, info, body);
    const second = sent[1]!.d;
    expect(second.replica.id).toBe(sent[0]!.d.replica.id);
    expect(second.expectedCached).toBeGreaterThan(0.9 * info.promptTokens);
    sent[1]!.report({ kind: 'done', outcome: 'ok', usage: { cachedTokens: second.expectedCached - 10 } });
    expect(core.receipts.totals()).toEqual({ judged: 1, expectedHits: 1, misroutes: 0, errorTokens: 10 });
  });

  it('forgets the receipts of a replica the fleet view forgot', () => {
    const r = new Receipts();
    r.add('gone', judge(10, 10, 0, 10));
    r.add('here', judge(10, 10, 10, 10));
    r.retain(new Map([['here', 1]]));
    expect([...r.byReplica.keys()]).toEqual(['here']);
  });
});
