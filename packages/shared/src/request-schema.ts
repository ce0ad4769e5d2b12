/**
 * The shape of an OpenAI request body, checked before anything reads it:
 * one JSON Schema per endpoint, compiled once by Ajv, and a nesting bound.
 *
 * Steps: parseJsonBody bounds nesting (MAX_JSON_DEPTH, an explicit stack, so
 * a deeply nested body is a 400, never a stack overflow further on) →
 * `checkBody` runs the endpoint's compiled schema → the first error becomes
 * one invalid_request with `param` naming the top-level field.
 * Complexity: O(body nodes) for both.
 * Trade-off: the fields routing reads and the common sampling fields are
 * typed and bounded (roles, content parts, token counts, probabilities);
 * everything else passes untouched, so engine extensions (vLLM's
 * `ignore_eos`, `min_tokens`, …) still reach the engine, which validates the
 * rest.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { WarmpathError } from './errors.ts';
import type { RequestKind } from './prefix.ts';

/** Deepest JSON nesting a body may have: far above real chats and tool schemas, far below what recursion elsewhere survives. */
export const MAX_JSON_DEPTH = 64;
/** Largest `max_tokens` (and its aliases) accepted: 2^24 tokens, above any model's context window today. */
export const MAX_OUTPUT_TOKENS = 1 << 24;

/** Roles a chat message may have (OpenAI's, plus the legacy `function`). */
export const CHAT_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

/** Throws invalid_request when `value` nests deeper than MAX_JSON_DEPTH; iterative, so any depth is safe. */
export function checkDepth(value: unknown, limit: number = MAX_JSON_DEPTH): void {
  if (value === null || typeof value !== 'object') return;
  const stack: Array<{ node: object; depth: number }> = [{ node: value, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > limit) throw new WarmpathError('invalid_request', `Request body nests deeper than ${limit} levels.`);
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push({ node: child, depth: depth + 1 });
    }
  }
}

const orNull = (schema: Record<string, unknown>, description: string): Record<string, unknown> => ({
  anyOf: [schema, { type: 'null' }],
  description,
});
const tokens = (name: string): Record<string, unknown> =>
  orNull(
    { type: 'integer', minimum: 1, maximum: MAX_OUTPUT_TOKENS },
    `"${name}" must be an integer from 1 to ${MAX_OUTPUT_TOKENS}`,
  );
const range = (name: string, min: number, max: number): Record<string, unknown> =>
  orNull({ type: 'number', minimum: min, maximum: max }, `"${name}" must be a number from ${min} to ${max}`);
const text = (name: string): Record<string, unknown> => orNull({ type: 'string' }, `"${name}" must be a string`);
const object = (name: string): Record<string, unknown> => orNull({ type: 'object' }, `"${name}" must be an object`);

/** Fields every endpoint may carry, with the types OpenAI gives them. */
const COMMON = {
  model: { type: 'string', description: '"model" must be a string' },
  stream: orNull({ type: 'boolean' }, '"stream" must be a boolean'),
  stream_options: orNull(
    {
      type: 'object',
      properties: { include_usage: orNull({ type: 'boolean' }, '"stream_options.include_usage" must be a boolean') },
    },
    '"stream_options" must be an object',
  ),
  max_tokens: tokens('max_tokens'),
  max_completion_tokens: tokens('max_completion_tokens'),
  max_output_tokens: tokens('max_output_tokens'),
  n: orNull({ type: 'integer', minimum: 1, maximum: 128 }, '"n" must be an integer from 1 to 128'),
  temperature: range('temperature', 0, 2),
  top_p: range('top_p', 0, 1),
  presence_penalty: range('presence_penalty', -2, 2),
  frequency_penalty: range('frequency_penalty', -2, 2),
  seed: orNull({ type: 'integer' }, '"seed" must be an integer'),
  stop: orNull(
    { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    '"stop" must be a string or an array of strings',
  ),
  user: text('user'),
  prompt_cache_key: text('prompt_cache_key'),
  cache_salt: text('cache_salt'),
  top_logprobs: orNull({ type: 'integer', minimum: 0, maximum: 20 }, '"top_logprobs" must be an integer from 0 to 20'),
  tools: orNull(
    { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } },
    '"tools" must be an array of objects with a string "type"',
  ),
  tool_choice: orNull(
    { anyOf: [{ type: 'string' }, { type: 'object' }] },
    '"tool_choice" must be a string or an object',
  ),
  response_format: object('response_format'),
  logit_bias: orNull(
    { type: 'object', additionalProperties: { type: 'number', minimum: -100, maximum: 100 } },
    '"logit_bias" must map token ids to numbers from -100 to 100',
  ),
  metadata: object('metadata'),
} as const;

/** A content part: an object with a string `type`; text parts carry string `text`. Plain strings pass (vLLM takes them). */
const PART = {
  anyOf: [
    { type: 'string' },
    {
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string' } },
      if: { properties: { type: { enum: ['text', 'input_text'] } } },
      then: { required: ['text'], properties: { text: { type: 'string' } } },
    },
  ],
};
const CONTENT = { anyOf: [{ type: 'string' }, { type: 'array', items: PART }, { type: 'null' }] };

const NEEDS_CONTENT = 'system, developer, user and tool messages need "content"';
const MESSAGE = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { enum: CHAT_ROLES, description: `"role" must be one of ${CHAT_ROLES.join(', ')}` },
    content: { ...CONTENT, description: '"content" must be a string, an array of content parts, or null' },
    name: { type: 'string', description: '"name" must be a string' },
    tool_call_id: { type: 'string', description: '"tool_call_id" must be a string' },
    tool_calls: orNull({ type: 'array', items: { type: 'object' } }, '"tool_calls" must be an array of objects'),
  },
  allOf: [
    // Only an assistant turn (or a legacy function result) may leave content out: it may carry tool calls instead.
    {
      if: { required: ['role'], properties: { role: { enum: ['system', 'developer', 'user', 'tool'] } } },
      then: {
        required: ['content'],
        properties: { content: { not: { type: 'null' }, description: NEEDS_CONTENT } },
        description: NEEDS_CONTENT,
      },
    },
    {
      if: { required: ['role'], properties: { role: { const: 'tool' } } },
      then: { required: ['tool_call_id'], description: 'a tool message needs "tool_call_id"' },
    },
  ],
};

/** A prompt or embedding input: a non-empty string, or a non-empty array of strings, of token ids, or of token-id arrays. */
const PROMPT = {
  anyOf: [
    { type: 'string', minLength: 1 },
    { type: 'array', minItems: 1, items: { type: 'string' } },
    { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } },
    { type: 'array', minItems: 1, items: { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } } },
  ],
};

/** OpenAI and vLLM refuse stream_options on a non-streaming request. */
const STREAM_ONLY = '"stream_options" is only allowed with "stream": true';
const STREAM_RULE = {
  if: { required: ['stream_options'], properties: { stream_options: { type: 'object' } } },
  then: {
    required: ['stream'],
    properties: { stream: { const: true, description: STREAM_ONLY } },
    description: STREAM_ONLY,
  },
};

const SCHEMAS: Record<RequestKind, Record<string, unknown>> = {
  chat: {
    type: 'object',
    required: ['messages'],
    allOf: [STREAM_RULE],
    properties: {
      ...COMMON,
      messages: {
        type: 'array',
        minItems: 1,
        items: MESSAGE,
        description: '"messages" must be a non-empty array of messages',
      },
      logprobs: orNull({ type: 'boolean' }, '"logprobs" must be a boolean'),
    },
  },
  completion: {
    type: 'object',
    required: ['prompt'],
    allOf: [STREAM_RULE],
    properties: {
      ...COMMON,
      prompt: {
        ...PROMPT,
        description:
          '"prompt" must be a non-empty string, array of strings, array of token ids, or array of token-id arrays',
      },
      logprobs: orNull({ type: 'integer', minimum: 0, maximum: 20 }, '"logprobs" must be an integer from 0 to 20'),
      echo: orNull({ type: 'boolean' }, '"echo" must be a boolean'),
      suffix: text('suffix'),
    },
  },
  embedding: {
    type: 'object',
    required: ['input'],
    allOf: [STREAM_RULE],
    properties: {
      ...COMMON,
      input: {
        ...PROMPT,
        description:
          '"input" must be a non-empty string, array of strings, array of token ids, or array of token-id arrays',
      },
      encoding_format: orNull({ enum: ['float', 'base64'] }, '"encoding_format" must be "float" or "base64"'),
      dimensions: orNull({ type: 'integer', minimum: 1 }, '"dimensions" must be a positive integer'),
    },
  },
  responses: {
    type: 'object',
    allOf: [
      STREAM_RULE,
      {
        if: { not: { required: ['instructions'] } },
        then: { required: ['input'], description: '"input" or "instructions" is required' },
      },
    ],
    properties: {
      ...COMMON,
      input: {
        anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
        description: '"input" must be a string or an array of input items',
      },
      instructions: text('instructions'),
      previous_response_id: text('previous_response_id'),
    },
  },
};

let compiled: Record<RequestKind, ValidateFunction> | undefined;

/**
 * Compiles the schemas (a start-up cost): on first use, or ahead of it by
 * calling this at start, as the router and the agent do, so no request pays
 * for it. Processes that never validate (the simulator) never do.
 */
export function prepareRequestSchemas(): Record<RequestKind, ValidateFunction> {
  if (compiled !== undefined) return compiled;
  // verbose: errors carry their schema node, whose `description` is the message a client reads.
  const ajv = new Ajv({ allErrors: false, verbose: true, strict: true, strictTuples: false, strictRequired: false });
  compiled = {
    chat: ajv.compile(SCHEMAS.chat),
    completion: ajv.compile(SCHEMAS.completion),
    embedding: ajv.compile(SCHEMAS.embedding),
    responses: ajv.compile(SCHEMAS.responses),
  };
  return compiled;
}

/** Throws invalid_request (param = the top-level field) when `body` does not have the endpoint's shape. */
export function checkBody(body: Record<string, unknown>, kind: RequestKind): void {
  const validate = prepareRequestSchemas()[kind];
  if (validate(body)) return;
  throw toError(validate.errors ?? []);
}

/** The error a client reads: where (a JSON path), and what is expected there (the nearest schema description). */
function toError(errors: readonly ErrorObject[]): WarmpathError {
  // With allErrors off, the last error is the outermost failing keyword (an anyOf or if after its branches).
  const e = errors[errors.length - 1];
  if (e === undefined) return new WarmpathError('invalid_request');
  const path = e.instancePath.split('/').slice(1);
  const where = path.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
  const missing = e.keyword === 'required' ? (e.params as { missingProperty?: string }).missingProperty : undefined;
  const described = (e.parentSchema as { description?: unknown } | undefined)?.description;
  const what =
    typeof described === 'string'
      ? described
      : missing !== undefined
        ? `"${missing}" is required`
        : (e.message ?? 'is invalid');
  const message = where === '' ? `${what}.` : `Invalid ${where}: ${what}.`;
  return new WarmpathError('invalid_request', message, path[0] ?? missing ?? null);
}
