/**
 * Generators (fast-check) of what a hostile or careless client sends to the
 * OpenAI endpoints of a router or an agent: request bodies that are almost
 * right (each field either valid or anything at all), bodies that are not
 * JSON, nested without bound or cut short, and header values. The fuzz tests
 * of shared (the parser, thousands of cases) and of router and agent (real
 * HTTP, a slice) draw from the same generators with the same seed.
 */
import fc from 'fast-check';
import { rawExchange } from './index.ts';

/** One seed for every fuzz run, so a failure replays: fast-check prints the path to shrink from. */
export const FUZZ_SEED = 14;

const anything = fc.jsonValue({ maxDepth: 2, depthSize: 'small' });
/** A field that is valid most of the time, and a boundary value or anything JSON otherwise. */
const either = <T>(valid: fc.Arbitrary<T>, junk: fc.Arbitrary<unknown> = anything): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 40, arbitrary: valid }, { weight: 1, arbitrary: junk }, { weight: 1, arbitrary: anything });
/** Numbers at and past the edges: negative, fractional, huge, not finite. */
const edges = fc.oneof(
  fc.integer({ min: -10, max: 10 }),
  fc.double({ noNaN: false }),
  fc.constantFrom(0, -1, 1e300, 2 ** 53, 0.5, 2 ** 24 + 1),
);
// Small when valid: the real-HTTP runs generate every token they ask for.
const tokens = either(fc.integer({ min: 1, max: 32 }), edges);
const unit = either(fc.double({ min: 0, max: 1, noNaN: true }), edges);

const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text: either(fc.string()) }, { requiredKeys: ['type'] }),
  fc.record(
    { type: either(fc.constantFrom('image_url', 'input_audio', 'file')), image_url: anything },
    { requiredKeys: [] },
  ),
  fc.string(),
);

const message = fc.record(
  {
    role: either(
      fc.constantFrom('system', 'developer', 'user', 'assistant', 'user', 'user'),
      fc.constantFrom('tool', 'function', 'wizard'),
    ),
    content: either(fc.oneof(fc.string({ maxLength: 300 }), fc.array(part, { maxLength: 3 })), fc.constant(null)),
    name: either(fc.string()),
    tool_call_id: either(fc.string()),
    tool_calls: either(fc.array(fc.record({ id: fc.string(), type: fc.constant('function') }), { maxLength: 2 })),
  },
  { requiredKeys: ['role', 'content'] },
);

const prompt = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.array(fc.integer({ min: 0, max: 50_000 }), { maxLength: 5 }),
  fc.array(fc.array(fc.nat()), { maxLength: 2 }),
);

/** The fields every endpoint shares: valid values, boundary values and junk. */
const common = {
  stream: either(fc.boolean()),
  // Mostly absent (undefined: JSON.stringify drops it): it is valid only beside "stream": true.
  stream_options: fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: either(fc.record({ include_usage: either(fc.boolean()) }, { requiredKeys: [] })) },
  ),
  max_tokens: tokens,
  max_completion_tokens: tokens,
  temperature: unit,
  top_p: unit,
  n: either(fc.constant(1), edges),
  stop: either(fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 3 }))),
  prompt_cache_key: either(fc.string()),
  cache_salt: either(fc.string()),
  tools: either(
    fc.array(fc.record({ type: either(fc.constant('function')), function: anything }, { requiredKeys: ['type'] }), {
      maxLength: 2,
    }),
  ),
  logit_bias: either(
    fc.dictionary(fc.string({ maxLength: 6 }), fc.integer({ min: -100, max: 100 }), { maxKeys: 3 }),
    fc.dictionary(fc.string(), edges, { maxKeys: 2 }),
  ),
};

export type Endpoint = 'chat' | 'completion' | 'embedding' | 'responses';
export const PATHS: Readonly<Record<Endpoint, string>> = {
  chat: '/v1/chat/completions',
  completion: '/v1/completions',
  embedding: '/v1/embeddings',
  responses: '/v1/responses',
};

/** A body for `endpoint` naming `model` most of the time: every field valid, missing, or junk. */
export function requestBody(endpoint: Endpoint, model: string): fc.Arbitrary<Record<string, unknown>> {
  const own: Record<string, fc.Arbitrary<unknown>> = endpoint === 'chat'
    ? { messages: either(fc.array(message, { minLength: 1, maxLength: 4 }), fc.constant([])) }
    : endpoint === 'completion'
      ? { prompt: either(prompt) }
      : endpoint === 'embedding'
        ? { input: either(prompt) }
        : {
            input: either(fc.oneof(fc.string(), fc.array(message, { maxLength: 3 }))),
            instructions: either(fc.string()),
          };
  const required =
    endpoint === 'chat'
      ? ['model', 'messages']
      : endpoint === 'responses'
        ? ['model']
        : ['model', endpoint === 'completion' ? 'prompt' : 'input'];
  const fields: Record<string, fc.Arbitrary<unknown>> = {
    model: fc.oneof(
      { weight: 12, arbitrary: fc.constant(model) },
      { weight: 1, arbitrary: either(fc.constantFrom('', 'ghost-model')) },
    ),
    ...common,
    ...own,
  };
  return fc.record(fields, { requiredKeys: required });
}

/** JSON nested `depth` levels deep inside an otherwise valid chat body. */
export const deepBody = (model: string): fc.Arbitrary<string> =>
  fc
    .oneof(fc.integer({ min: 1, max: 80 }), fc.integer({ min: 1, max: 3_000 }))
    .map(
      (depth) =>
        `{"model":${JSON.stringify(model)},"messages":[{"role":"user","content":${'['.repeat(depth)}${']'.repeat(depth)}}]}`,
    );

/** The bytes of a request body: generated bodies serialized, cut short, nested deep, or any text at all. */
export function bodyText(endpoint: Endpoint, model: string): fc.Arbitrary<string> {
  const json = requestBody(endpoint, model).map((b) => JSON.stringify(b));
  return fc.oneof(
    { weight: 12, arbitrary: json },
    { weight: 1, arbitrary: fc.tuple(json, fc.nat()).map(([s, n]) => s.slice(0, n % (s.length + 1))) },
    { weight: 1, arbitrary: deepBody(model) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    { weight: 1, arbitrary: anything.map((v) => JSON.stringify(v)) },
  );
}

/** Header values a client may send for the routing key and session id: any text (empty, blank, long, non-ASCII). */
export const keyHeader: fc.Arbitrary<string | undefined> = fc.option(fc.string({ unit: 'binary', maxLength: 400 }), {
  nil: undefined,
});

/** Header values that survive an HTTP client (visible ASCII and spaces), for real-HTTP runs. */
export const wireHeader: fc.Arbitrary<string> = fc
  .string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 })
  .map((s) => s.trim());

/** What the real-HTTP fuzz saw: responses by status. */
export type StatusTally = Map<number, number>;

/**
 * Sends `runs` generated requests over real HTTP to a router or agent at
 * `url` (bodies from bodyText, routing-key, session, content-type and accept
 * headers from wireHeader) and checks each answer: a 2xx, or a 4xx whose
 * body is an OpenAI-shaped error with a code `isCode` knows; never a 5xx,
 * never a reset. Returns the tally of statuses.
 */
export async function fuzzHttp(
  url: string,
  o: { runs: number; model: string; endpoints: readonly Endpoint[]; isCode: (code: unknown) => boolean },
): Promise<StatusTally> {
  const tally: StatusTally = new Map();
  const arb = fc.constantFrom(...o.endpoints).chain((endpoint) =>
    fc.record({
      endpoint: fc.constant(endpoint),
      body: bodyText(endpoint, o.model),
      key: fc.option(wireHeader, { nil: undefined }),
      session: fc.option(wireHeader, { nil: undefined }),
      contentType: fc.option(fc.oneof(fc.constant('application/json'), wireHeader), { nil: undefined }),
      accept: fc.option(fc.oneof(fc.constant('text/event-stream'), wireHeader), { nil: undefined }),
    }),
  );
  await fc.assert(
    fc.asyncProperty(arb, async (c) => {
      const headers: Record<string, string> = {};
      if (c.key !== undefined) headers['x-warmpath-key'] = c.key;
      if (c.session !== undefined) headers['x-session-id'] = c.session;
      if (c.contentType !== undefined) headers['content-type'] = c.contentType;
      if (c.accept !== undefined) headers.accept = c.accept;
      const res = await fetch(url + PATHS[c.endpoint], { method: 'POST', headers, body: c.body });
      const text = await res.text();
      tally.set(res.status, (tally.get(res.status) ?? 0) + 1);
      if (res.status >= 500)
        throw new Error(
          `${res.status} for ${c.endpoint} ${JSON.stringify(c.body.slice(0, 300))}: ${text.slice(0, 300)}`,
        );
      if (res.status >= 400) {
        const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
        if (!o.isCode(code)) throw new Error(`${res.status} without a registry code: ${text.slice(0, 300)}`);
      }
    }),
    { seed: FUZZ_SEED, numRuns: o.runs },
  );
  return tally;
}

/**
 * Writes `runs` raw HTTP/1.1 requests (Connection: close) with generated
 * header lines (any bytes but CR and LF; an empty line would end the head)
 * to `port` and checks that each is answered with a status line below 500
 * and then closed by the server, never reset. Returns the tally.
 */
export async function fuzzRawHeaders(port: number, runs: number): Promise<StatusTally> {
  const tally: StatusTally = new Map();
  const line = fc.string({
    unit: fc
      .integer({ min: 0, max: 0xff })
      .filter((c) => c !== 10 && c !== 13)
      .map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 120,
  });
  await fc.assert(
    fc.asyncProperty(fc.array(line, { maxLength: 4 }), async (lines) => {
      const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${lines.map((l) => `${l}\r\n`).join('')}Content-Length: 2\r\n\r\n{}`;
      const reply = await rawExchange(port, head);
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(reply)?.[1]);
      tally.set(status, (tally.get(status) ?? 0) + 1);
      if (!(status >= 200 && status < 500))
        throw new Error(`status line ${JSON.stringify(reply.slice(0, 80))} for header lines ${JSON.stringify(lines)}`);
    }),
    { seed: FUZZ_SEED, numRuns: runs },
  );
  return tally;
}
