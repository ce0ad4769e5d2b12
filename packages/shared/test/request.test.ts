import { describe, expect, it } from 'vitest';
import { WarmpathError } from '../src/errors.ts';
import { describeRequest, MAX_KEY_CHARS, parseJsonBody } from '../src/request.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof WarmpathError ? err.code : 'other';
  }
  return undefined;
};

describe('describeRequest', () => {
  it('computes model, adapter, work and chain', () => {
    const body = { model: 'sql-lora', messages: [{ role: 'user', content: 'x'.repeat(1000) }], max_tokens: 50, stream: true, prompt_cache_key: 'k1' };
    const info = describeRequest(body, 'chat', { resolveModel: (n) => (n === 'sql-lora' ? { model: 'base', adapter: 'sql-lora' } : undefined) });
    expect(info.model).toBe('base');
    expect(info.adapter).toBe('sql-lora');
    expect(info.maxTokens).toBe(50);
    expect(info.stream).toBe(true);
    expect(info.routingKey).toBe('k1');
    expect(info.hashes.length).toBe(Math.floor(info.promptChars / 256));
    expect(info.promptTokens).toBe(Math.ceil(info.promptChars / 4));
    expect(describeRequest(body, 'chat', { keyHeader: 'hdr' }).routingKey).toBe('hdr');
  });

  it('takes the session key from the x-session-id header: trimmed, bounded, absent when missing or blank', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect(describeRequest(body, 'chat', { sessionHeader: '  s-42 ' }).sessionKey).toBe('s-42');
    expect(describeRequest(body, 'chat', { sessionHeader: 'x'.repeat(5000) }).sessionKey).toBe('x'.repeat(MAX_KEY_CHARS));
    for (const sessionHeader of [undefined, '', '   ']) expect('sessionKey' in describeRequest(body, 'chat', { sessionHeader })).toBe(false);
    // The session key is not an affinity key: warmpath's routing key stays unset.
    expect(describeRequest(body, 'chat', { sessionHeader: 's-42' }).routingKey).toBeUndefined();
  });

  it('normalizes the routing key the same way (header first, then prompt_cache_key)', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], prompt_cache_key: ' pck ' };
    expect(describeRequest(body, 'chat').routingKey).toBe('pck');
    expect(describeRequest(body, 'chat', { keyHeader: ' ' }).routingKey).toBe('pck');
    expect(describeRequest(body, 'chat', { keyHeader: 'k'.repeat(999) }).routingKey).toBe('k'.repeat(MAX_KEY_CHARS));
    expect(describeRequest({ ...body, prompt_cache_key: '' }, 'chat').routingKey).toBeUndefined();
  });

  it('rejects bad input with stable codes', () => {
    expect(codeOf(() => parseJsonBody(enc('{nope')))).toBe('invalid_json');
    expect(codeOf(() => parseJsonBody(enc('[1]')))).toBe('invalid_request');
    expect(codeOf(() => describeRequest({ messages: [] }, 'chat'))).toBe('model_required');
    expect(codeOf(() => describeRequest({ model: 3, messages: [{}] }, 'chat'))).toBe('invalid_request');
    expect(codeOf(() => describeRequest({ model: 'm', messages: [] }, 'chat'))).toBe('invalid_request');
    expect(codeOf(() => describeRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: -1 }, 'chat'))).toBe('invalid_request');
    expect(codeOf(() => describeRequest({ model: 'm', prompt: 'x' }, 'completion', { resolveModel: () => undefined }))).toBe('model_not_found');
  });
});
