/**
 * Property-based fuzzing of the request parser and description that router
 * and agent both run on every body (10,000 generated cases, fixed seed).
 * Properties: a body is either described or refused with a WarmpathError of
 * a 4xx status and a registry code — nothing else is ever thrown; what is
 * described is bounded (finite token counts, max_tokens within
 * MAX_OUTPUT_TOKENS, at most maxChunks hashes); header keys are trimmed and
 * bounded.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bodyText, FUZZ_SEED, keyHeader, requestBody, type Endpoint } from '@warmpath/testkit/fuzz';
import { ERRORS, WarmpathError } from '../src/errors.ts';
import { describeRequest, FLEET_DEFAULTS, MAX_KEY_CHARS, parseJsonBody } from '../src/request.ts';
import { MAX_OUTPUT_TOKENS } from '../src/request-schema.ts';

const ENDPOINTS: readonly Endpoint[] = ['chat', 'completion', 'embedding', 'responses'];
const known = (name: string) => (name === 'm' ? { model: 'm', adapter: '' } : undefined);

/** Parse and describe as the router does; returns the refusal's code, or undefined when described (then checks bounds). */
function outcome(text: string, kind: Endpoint, key?: string, session?: string): string | undefined {
  try {
    const info = describeRequest(parseJsonBody(Buffer.from(text, 'utf8')), kind, {
      resolveModel: known,
      keyHeader: key,
      sessionHeader: session,
    });
    expect(Number.isInteger(info.maxTokens) && info.maxTokens >= 0 && info.maxTokens <= MAX_OUTPUT_TOKENS).toBe(true);
    expect(Number.isFinite(info.promptTokens)).toBe(true);
    expect(info.hashes.length).toBeLessThanOrEqual(FLEET_DEFAULTS.maxChunks);
    if (info.routingKey !== undefined) expect(info.routingKey.length).toBeLessThanOrEqual(MAX_KEY_CHARS);
    return undefined;
  } catch (err) {
    if (!(err instanceof WarmpathError))
      throw new Error(`not a WarmpathError for ${JSON.stringify(text.slice(0, 200))}: ${String(err)}`);
    expect(err.status).toBeGreaterThanOrEqual(400);
    expect(err.status).toBeLessThan(500);
    expect(ERRORS[err.code].status).toBe(err.status);
    return err.code;
  }
}

describe('request parser fuzz', () => {
  it('any body text, any endpoint: described or a 4xx WarmpathError (6,000 cases)', () => {
    const seen = new Map<string, number>();
    const arb = fc.constantFrom(...ENDPOINTS).chain((kind) => fc.tuple(fc.constant(kind), bodyText(kind, 'm')));
    fc.assert(
      fc.property(arb, ([kind, text]) => {
        const code = outcome(text, kind) ?? 'described';
        seen.set(code, (seen.get(code) ?? 0) + 1);
      }),
      { seed: FUZZ_SEED, numRuns: 6_000 },
    );
    // The generators reach both sides: accepted bodies and each kind of refusal.
    for (const code of ['described', 'invalid_json', 'invalid_request', 'model_required', 'model_not_found'])
      expect(seen.get(code) ?? 0).toBeGreaterThan(20);
  });

  it('a valid body stays valid with any routing key and session header (2,000 cases)', () => {
    const arb = fc.tuple(requestBody('chat', 'm'), keyHeader, keyHeader);
    fc.assert(
      fc.property(arb, ([body, key, session]) => {
        const valid = { ...body, model: 'm', messages: [{ role: 'user', content: 'hello' }] };
        for (const k of [
          'stream',
          'stream_options',
          'max_tokens',
          'max_completion_tokens',
          'temperature',
          'top_p',
          'n',
          'stop',
          'prompt_cache_key',
          'cache_salt',
          'tools',
          'logit_bias',
        ])
          delete (valid as Record<string, unknown>)[k];
        expect(outcome(JSON.stringify(valid), 'chat', key, session)).toBeUndefined();
      }),
      { seed: FUZZ_SEED, numRuns: 2_000 },
    );
  });

  it('the refusal of a generated body does not depend on the headers (2,000 cases)', () => {
    const arb = fc.tuple(bodyText('chat', 'm'), keyHeader, keyHeader);
    fc.assert(
      fc.property(arb, ([text, key, session]) => {
        expect(outcome(text, 'chat', key, session)).toBe(outcome(text, 'chat'));
      }),
      { seed: FUZZ_SEED, numRuns: 2_000 },
    );
  });
});
