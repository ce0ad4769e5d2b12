/**
 * The peers' P/D rules (Policy.pd, placement/pair.ts placeByRule): llm-d's
 * decider on the decode pod's uncached tokens, Dynamo's conditional
 * disaggregation (max_local_prefill_length and the prefill queue), SGLang's
 * gateway pairing every request.
 */
import { describe, expect, it } from 'vitest';
import type { Policy } from '@warmpath/router';
import {
  CONFIG,
  chainOf,
  chat,
  LocalState,
  makeState,
  makeView,
  placePair,
  preq,
  type StateOverrides,
} from '@warmpath/router/testing';
import { createDynamoKvPolicy } from '../../src/peers/dynamo.ts';
import { createLlmdPolicy } from '../../src/peers/llmd.ts';
import { createSglangCacheAwarePolicy } from '../../src/peers/sglang.ts';

/** A prompt of about 2,600 tokens: over Dynamo's 1,000-token max_local_prefill_length. */
const LONG = 'You are a careful assistant. '.repeat(360);
const long = (user: string) => chat(user, {}, LONG);
const pair = (p: Policy, body: Record<string, unknown>, specs: Array<[string, StateOverrides]>) =>
  placePair(p, preq(body), makeView(specs.map(([id, o]) => makeState(id, o))), new LocalState(CONFIG), CONFIG);
const PD: Array<[string, StateOverrides]> = [
  ['p1', { role: 'prefill' }],
  ['d1', { role: 'decode' }],
];

describe("the peers' P/D rules", () => {
  it('SGLang gateway: every request split, even a short one', () => {
    for (const body of [long('hi'), chat('hi', {}, 'short')]) {
      const { pd, placement } = pair(createSglangCacheAwarePolicy(), body, PD);
      expect(pd).toMatchObject({ mode: 'transfer', by: 'split' });
      expect(pd!.prefill!.id).toBe('p1');
      expect(placement.replica!.id).toBe('d1');
    }
  });

  it('llm-d: split at 16 uncached tokens on the decode pod, not below; precise reads the pod cache', () => {
    const llmd = () => createLlmdPolicy('precise', { random: () => 0.5, ...CONFIG });
    expect(pair(llmd(), long('hi'), PD).pd).toMatchObject({ mode: 'transfer', prefill: { id: 'p1' } });
    expect(pair(llmd(), chat('x', {}, ''), PD).pd).toMatchObject({ mode: 'local', decode: { id: 'd1' } });
    const body = long('hi');
    const chain = chainOf(body);
    const held: Array<[string, StateOverrides]> = [
      ['p1', { role: 'prefill' }],
      ['d1', { role: 'decode', digest: { from: -1, added: chain, size: chain.length } }],
    ];
    expect(pair(llmd(), body, held).pd).toMatchObject({ mode: 'local', by: 'cached' });
    // The approximate scorer has never routed this prompt: it sees nothing cached.
    expect(pair(createLlmdPolicy('approx', { random: () => 0.5 }), body, held).pd?.mode).toBe('transfer');
  });

  it('Dynamo: a prompt over 1,000 uncached tokens prefills remotely unless the prefill queue holds 2', () => {
    const dynamo = () => createDynamoKvPolicy(CONFIG);
    expect(pair(dynamo(), long('hi'), PD).pd).toMatchObject({ mode: 'transfer', prefill: { id: 'p1' } });
    expect(pair(dynamo(), chat('hi', {}, 'short'), PD).pd).toMatchObject({ mode: 'local', by: 'short' });
    const queued: Array<[string, StateOverrides]> = [
      ['p1', { role: 'prefill', load: { waiting: 2 } }],
      ['d1', { role: 'decode' }],
    ];
    expect(pair(dynamo(), long('hi'), queued).pd?.mode).toBe('local');
  });

  it('Dynamo: the prefill worker with the shortest prefill queue pulls the request', () => {
    const specs: Array<[string, StateOverrides]> = [
      ['p1', { role: 'prefill', load: { prefillTokens: 9_000 } }],
      ['p2', { role: 'prefill', load: { prefillTokens: 100 } }],
      ['d1', { role: 'decode' }],
    ];
    expect(pair(createDynamoKvPolicy(CONFIG), long('hi'), specs).pd?.prefill?.id).toBe('p2');
  });
});
