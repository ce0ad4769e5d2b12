import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, SCENARIOS, TRACE_BLOCK_TOKENS } from '../src/scenarios.ts';

/** A three-request trace: the second shares the first's first block, the third is its own. */
function tinyTrace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'warmpath-trace-'));
  const file = join(dir, 'tiny.jsonl');
  const recs = [
    { timestamp: 0, input_length: 2 * TRACE_BLOCK_TOKENS, output_length: 4, hash_ids: [0, 1] },
    { timestamp: 1000, input_length: 2 * TRACE_BLOCK_TOKENS, output_length: 4, hash_ids: [0, 2] },
    { timestamp: 2000, input_length: TRACE_BLOCK_TOKENS, output_length: 4, hash_ids: [3] },
  ];
  writeFileSync(file, recs.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return file;
}

const prompt = (body: Record<string, unknown>): string => (body.messages as { content: string }[])[0]!.content;
const firstBlock = (text: string): string => text.slice(0, 200);

describe('trace scenario', () => {
  it('replays the trace once by default, at its own times divided by the rate', () => {
    const trace = tinyTrace();
    const plan = SCENARIOS.trace!.build({ seed: 1, rate: 2, duration: 0, model: DEFAULT_MODEL, trace });
    expect(plan.map((r) => r.at)).toEqual([0, 500, 1000]);
  });

  it('a longer duration replays it pass after pass, each pass with fresh block ids and its own sharing', () => {
    const trace = tinyTrace();
    // One pass spans the last timestamp plus a mean gap: 3 s. 6.5 s holds two passes and the first request of a third.
    const plan = SCENARIOS.trace!.build({ seed: 1, rate: 1, duration: 6.5, model: DEFAULT_MODEL, trace });
    expect(plan.map((r) => r.at)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000]);
    const texts = plan.map((r) => prompt(r.body));
    // Within a pass the shared block is the same text; across passes nothing is shared.
    expect(firstBlock(texts[1]!)).toBe(firstBlock(texts[0]!));
    expect(firstBlock(texts[4]!)).toBe(firstBlock(texts[3]!));
    expect(firstBlock(texts[3]!)).not.toBe(firstBlock(texts[0]!));
    expect(texts[5]).not.toBe(texts[2]);
    expect(texts[3]!.length).toBe(texts[0]!.length);
  });
});
