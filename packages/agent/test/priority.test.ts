/** The band as the engine's `priority` (priority.ts), and a stream's usage handed to the router as a comment. */
import { describe, expect, it } from 'vitest';
import { UsageTap } from '@warmpath/shared/wire';
import { bandOf, withPriority } from '../src/priority.ts';
import { UsageStrip } from '../src/stream-usage.ts';

describe('engine priority', () => {
  it("maps bands to each engine's order and splices the field into the body", () => {
    expect([bandOf('interactive'), bandOf('standard'), bandOf('batch'), bandOf('urgent'), bandOf(undefined)]).toEqual([
      0,
      1,
      2,
      undefined,
      undefined,
    ]);
    const raw = Buffer.from('{"model":"m","messages":[]}');
    const v = withPriority('vllm', 2, JSON.parse(raw.toString()) as Record<string, unknown>, raw);
    expect(JSON.parse(v!.body.toString())).toEqual({ priority: 2, model: 'm', messages: [] });
    const s = withPriority('sglang', 0, { model: 'm' }, Buffer.from('{"model":"m"}'));
    expect(JSON.parse(s!.body.toString()).priority).toBe(2); // SGLang: higher first
    // The client's own priority is replaced by the band's.
    const own = withPriority('vllm', 1, { model: 'm', priority: -5 }, Buffer.from('{"model":"m","priority":-5}'));
    expect(JSON.parse(own!.body.toString())).toEqual({ model: 'm', priority: 1 });
    expect(withPriority('vllm', 0, {}, Buffer.from('{ }'))!.body.toString()).toBe('{"priority":0 }');
    expect(withPriority('llamacpp', 0, { model: 'm' }, Buffer.from('{"model":"m"}'))).toBeUndefined();
  });

  it('a router that counts usage gets the usage event as a comment; the usage tap reads it', () => {
    const usage = 'data: {"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}\n\n';
    const chunk = Buffer.from(`data: {"id":"c","choices":[{"delta":{"content":"hi"}}]}\n\n${usage}data: [DONE]\n\n`);
    const plain = new UsageStrip(false).push(chunk).toString();
    expect(plain).not.toContain('usage');
    const out = new UsageStrip(false, true).push(chunk).toString();
    expect(out).toContain(
      ': warmpath-usage {"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}\n\n',
    );
    expect(out).not.toContain('data: {"id":"c","choices":[],"usage"');
    const tap = new UsageTap('text/event-stream');
    tap.write(Buffer.from(out));
    expect(tap.end()).toEqual({ promptTokens: 12, cachedTokens: undefined, completionTokens: 3 });
  });
});
