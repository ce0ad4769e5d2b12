/** The band as the engine's `priority` (priority.ts). */
import { describe, expect, it } from 'vitest';
import { bandOf, withPriority } from '../src/priority.ts';

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
});
