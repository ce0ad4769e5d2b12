import { describe, expect, it } from 'vitest';
import { WarmpathError } from '../src/errors.ts';
import {
  describeRequest,
  MAX_KEY_CHARS,
  parseJsonBody,
  RECEIPT_TAIL_BYTES,
  receiptComment,
  receiptHeaders,
  receiptOfComment,
  receiptOfHeaders,
} from '../src/request.ts';
import { MAX_JSON_DEPTH } from '../src/request-schema.ts';

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
    const body = {
      model: 'sql-lora',
      messages: [{ role: 'user', content: 'x'.repeat(1000) }],
      max_tokens: 50,
      stream: true,
      prompt_cache_key: 'k1',
    };
    const info = describeRequest(body, 'chat', {
      resolveModel: (n) => (n === 'sql-lora' ? { model: 'base', adapter: 'sql-lora' } : undefined),
    });
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
    expect(describeRequest(body, 'chat', { sessionHeader: 'x'.repeat(5000) }).sessionKey).toBe(
      'x'.repeat(MAX_KEY_CHARS),
    );
    for (const sessionHeader of [undefined, '', '   '])
      expect('sessionKey' in describeRequest(body, 'chat', { sessionHeader })).toBe(false);
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
    expect(
      codeOf(() => describeRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: -1 }, 'chat')),
    ).toBe('invalid_request');
    expect(
      codeOf(() => describeRequest({ model: 'm', prompt: 'x' }, 'completion', { resolveModel: () => undefined })),
    ).toBe('model_not_found');
  });
});

describe('request shape (request-schema.ts)', () => {
  const user = { role: 'user', content: 'hi' };
  const param = (fn: () => unknown): string | null | undefined => {
    try {
      fn();
    } catch (err) {
      return err instanceof WarmpathError ? err.param : 'not a WarmpathError';
    }
    return undefined;
  };

  it('accepts what OpenAI clients send: content parts, tool calls and results, nulls for optional fields', () => {
    const bodies: Array<[Record<string, unknown>, 'chat' | 'completion' | 'embedding' | 'responses']> = [
      [
        {
          model: 'm',
          messages: [
            { role: 'developer', content: 'be brief' },
            {
              role: 'user',
              content: [
                { type: 'text', text: 'a' },
                { type: 'image_url', image_url: { url: 'data:x' } },
              ],
            },
          ],
        },
        'chat',
      ],
      [
        {
          model: 'm',
          messages: [
            user,
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
            },
            { role: 'tool', tool_call_id: 't1', content: '42' },
          ],
        },
        'chat',
      ],
      [
        {
          model: 'm',
          messages: [user],
          stream: true,
          stream_options: { include_usage: true },
          max_tokens: null,
          temperature: null,
          tools: [{ type: 'function', function: { name: 'f' } }],
          tool_choice: 'auto',
          stop: ['\n'],
          logprobs: true,
          top_logprobs: 3,
          seed: -1,
          n: 1,
          ignore_eos: true,
        },
        'chat',
      ],
      [{ model: 'm', prompt: ['a', 'b'], max_tokens: 5, logprobs: 2, echo: false }, 'completion'],
      [{ model: 'm', prompt: [[1, 2], [3]] }, 'completion'],
      [{ model: 'm', input: [1, 2, 3], encoding_format: 'float' }, 'embedding'],
      [
        {
          model: 'm',
          instructions: 'x',
          input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
          max_output_tokens: 100,
        },
        'responses',
      ],
    ];
    for (const [body, kind] of bodies) expect(codeOf(() => describeRequest(body, kind))).toBeUndefined();
  });

  it('refuses impossible or mistyped fields with invalid_request and the field as param', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'm', messages: [user], max_tokens: 1e300 }, 'max_tokens'],
      [{ model: 'm', messages: [user], max_completion_tokens: 0 }, 'max_completion_tokens'],
      [{ model: 'm', messages: [user], max_tokens: 2.5 }, 'max_tokens'],
      [{ model: 'm', messages: [user], temperature: 9 }, 'temperature'],
      [{ model: 'm', messages: [user], n: 1_000_000 }, 'n'],
      [{ model: 'm', messages: [user], stream_options: { include_usage: true } }, 'stream'],
      [{ model: 'm', messages: [user], prompt_cache_key: 5 }, 'prompt_cache_key'],
      [{ model: 'm', messages: [{ role: 'tool', content: 'x' }] }, 'messages'],
      [{ model: 'm', messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages'],
      [{ model: 'm', messages: [{ role: 'user', content: null }] }, 'messages'],
    ];
    for (const [body, p] of cases) {
      expect(codeOf(() => describeRequest(body, 'chat'))).toBe('invalid_request');
      expect(param(() => describeRequest(body, 'chat'))).toBe(p);
    }
    expect(param(() => describeRequest({ model: 'm', prompt: '' }, 'completion'))).toBe('prompt');
    expect(param(() => describeRequest({ model: 'm', input: [] }, 'embedding'))).toBe('input');
    expect(param(() => describeRequest({ model: 'm' }, 'responses'))).toBe('input');
  });

  it('nesting deeper than MAX_JSON_DEPTH is invalid_request at parse time, at any depth', () => {
    const nested = (depth: number) =>
      enc(`{"model":"m","messages":[{"role":"user","content":${'['.repeat(depth)}${']'.repeat(depth)}}]}`);
    expect(codeOf(() => parseJsonBody(nested(MAX_JSON_DEPTH - 4)))).toBeUndefined();
    expect(codeOf(() => parseJsonBody(nested(MAX_JSON_DEPTH)))).toBe('invalid_request');
    expect(codeOf(() => parseJsonBody(nested(100_000)))).toBe('invalid_request');
  });
});

describe('the receipt (the engine usage from agent to router)', () => {
  const full = { cachedTokens: 4_000_000_000, promptTokens: 9_007_199_254_740_991, completionTokens: 12 };

  it('round-trips every field, or the known ones, through headers and the stream comment', () => {
    expect(receiptOfHeaders(receiptHeaders(full))).toEqual(full);
    expect(receiptOfHeaders(receiptHeaders({ promptTokens: 7, completionTokens: 4 }))).toEqual({
      promptTokens: 7,
      completionTokens: 4,
    });
    expect(receiptOfHeaders({ 'x-warmpath-cached-tokens': '-1', 'x-warmpath-prompt-tokens': '1e3' })).toBeUndefined();
    const stream = `data: {"choices":[]}\n\n${receiptComment({ cachedTokens: 1 })}${receiptComment(full)}data: [DONE]\n\n`;
    // The longest comment and the [DONE] after it fit the tail a router keeps; the last receipt wins.
    expect(receiptOfComment(stream.slice(-RECEIPT_TAIL_BYTES))).toEqual(full);
    expect(receiptComment({ promptTokens: 7 })).toBe(': x-warmpath-prompt-tokens=7\n\n');
    expect(receiptOfComment('data: x-warmpath-cached-tokens=3\n\n')).toBeUndefined();
  });
});
