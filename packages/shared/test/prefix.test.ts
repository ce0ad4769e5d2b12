import { describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { canonicalText, chainHashes, matchedPrefix, prefixSeed, stableJson } from '../src/prefix.ts';

const hex = (a: BigUint64Array): string[] => [...a].map((h) => h.toString(16));

const chat = {
  model: 'm',
  messages: [
    { role: 'system', content: 'You are a helpful assistant. '.repeat(20) },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Hello ' },
        { type: 'text', text: 'world' },
        { type: 'image_url', image_url: { url: 'http://x/y.png' } },
      ],
    },
  ],
};

describe('prefix identity', () => {
  it('golden vectors (agent and router must agree byte for byte; changing these is a protocol change)', () => {
    expect(prefixSeed('m').toString(16)).toBe('f45a74ba2c2178af');
    expect(prefixSeed('m', 'lora1', 'salt').toString(16)).toBe('bfe789d65efc3899');
    const text = canonicalText(chat, 'chat');
    expect(text.startsWith('system\u001fYou are')).toBe(true);
    expect(text.endsWith('user\u001fHello world{"image_url":{"url":"http://x/y.png"},"type":"image_url"}\u001e')).toBe(
      true,
    );
    expect(hex(chainHashes(text, 64, prefixSeed('m'), 100))).toEqual([
      '85ee8468d772ef25',
      '21ebd232c9170ef3',
      'd882bddcdaf8835a',
      'ef5fb0f05033d606',
      '9a30c960c28582c3',
      '932a04d36c8a2c7a',
      '98222915c7f1f280',
      'fe6625c451220bba',
      '4a8d108b6f28ea6f',
      'cdcb9b21a6dfc5a',
    ]);
    expect(hex(chainHashes('héllo wörld '.repeat(20), 16, 0n, 3))).toEqual([
      'c87079ceaabdb78a',
      'e0073360dae99475',
      '33dd3ca0f6c6e914',
    ]);
  });

  it('is a chain of xxh64 over each chunk seeded by the previous hash', async () => {
    const xx = await xxhash();
    const text = 'abcdefgh'.repeat(10) + 'é'.repeat(40);
    const seed = prefixSeed('model');
    let h = seed;
    const expected: bigint[] = [];
    for (let i = 0; i + 16 <= text.length; i += 16) {
      h = xx.h64(text.slice(i, i + 16), h);
      expected.push(h);
    }
    expect([...chainHashes(text, 16, seed, 1000)]).toEqual(expected);
  });

  it('hashes only full chunks, at most maxChunks', () => {
    expect(chainHashes('x'.repeat(63), 64, 0n, 10).length).toBe(0);
    expect(chainHashes('x'.repeat(64 * 5 + 3), 64, 0n, 10).length).toBe(5);
    expect(chainHashes('x'.repeat(64 * 50), 64, 0n, 7).length).toBe(7);
  });

  it('shares hash i exactly when the first i chunks and the seed match', () => {
    const sys = 'S'.repeat(256);
    const a = chainHashes(sys + 'a'.repeat(128), 64, prefixSeed('m'), 100);
    const b = chainHashes(sys + 'b'.repeat(128), 64, prefixSeed('m'), 100);
    expect(a.slice(0, 4)).toEqual(b.slice(0, 4));
    expect(a[4]).not.toBe(b[4]);
    const other = chainHashes(sys, 64, prefixSeed('m', 'lora'), 100);
    expect(other[0]).not.toBe(a[0]);
    const salted = chainHashes(sys, 64, prefixSeed('m', '', 'tenant-1'), 100);
    expect(salted[0]).not.toBe(a[0]);
  });

  it('renders requests canonically', () => {
    expect(canonicalText({ prompt: 'hello' }, 'completion')).toBe('hello');
    expect(canonicalText({ prompt: ['a', 'b'] }, 'completion')).toBe('ab');
    const withTools = canonicalText(
      { tools: [{ type: 'function', function: { name: 'f' } }], messages: [{ role: 'user', content: 'q' }] },
      'chat',
    );
    expect(withTools.startsWith('tools\u001f[{"function":{"name":"f"},"type":"function"}]')).toBe(true);
    // Key order in non-text parts does not matter.
    expect(stableJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    // Responses: instructions render like a system message, so chat and responses share prefixes.
    expect(canonicalText({ instructions: 'be brief', input: 'hi' }, 'responses')).toBe(
      canonicalText(
        {
          messages: [
            { role: 'system', content: 'be brief' },
            { role: 'user', content: 'hi' },
          ],
        },
        'chat',
      ),
    );
  });

  it('matchedPrefix stops at the first miss', () => {
    const h = BigUint64Array.from([1n, 2n, 3n, 4n]);
    expect(matchedPrefix(h, (x) => x !== 3n)).toBe(2);
    expect(matchedPrefix(h, () => true)).toBe(4);
  });
});
