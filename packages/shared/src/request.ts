/**
 * What agent and router both need to know about an OpenAI request before
 * forwarding it: which model and adapter, how much work, and its prefix chain.
 * Parsed once per hop; validation errors are WarmpathErrors with `param` set.
 */
import { WarmpathError } from './errors.ts';
import { canonicalText, chainHashes, hashString32, prefixSeed, type RequestKind } from './prefix.ts';
import { checkBody, checkDepth } from './request-schema.ts';

/** Fleet-wide settings: agents publish theirs and routers check for a match. */
export const FLEET_DEFAULTS = {
  /** Prefix chunk size, characters (≈ 64 tokens). Changing it re-keys every cache digest. */
  chunkChars: 256,
  /** Hash at most this many chunks (256K chars ≈ 64k tokens): bounds per-request CPU. */
  maxChunks: 1024,
  /** Characters per token for work estimates (no tokenizer on the router). */
  charsPerToken: 4,
  /** Output tokens assumed when a request sets no max_tokens. */
  defaultMaxTokens: 256,
} as const;

export const HEADERS = {
  key: 'x-warmpath-key',
  /** A client's session id, as chat clients send it (HAProxy-style session affinity keys on it). */
  session: 'x-session-id',
  replica: 'x-warmpath-replica',
  route: 'x-warmpath-route',
  router: 'x-warmpath-router',
  rejectReason: 'x-warmpath-reject-reason',
  /** Router → agent: which attempt this is (1-based), for logs and metrics. */
  attempt: 'x-warmpath-attempt',
  /**
   * Router → agent: the most prefill (tokens) the router expects queued on
   * the replica, this request's own included, before another replica would
   * serve it sooner; the agent refuses (reason `stale`) when more is queued.
   * Never sent on a request's last attempt.
   */
  queueLimit: 'x-warmpath-queue-limit',
  /** Agent → router, on a `stale` refusal: the prefill queued on the replica now, tokens (the router's view takes it until the next report). */
  queued: 'x-warmpath-queued',
  /** Client → router → agent: the request's priority band (PRIORITY_BANDS), capped by the router to its tenant's bands. */
  priority: 'x-warmpath-priority',
  /** Router → client: the cached tokens the placement predicted on the replica it chose (docs/OPERATIONS.md, "Receipts"). */
  expectedCached: 'x-warmpath-expected-cached-tokens',
  /**
   * Agent → router → client, the receipt: the engine's cached tokens as the
   * agent read them from its usage; on a plain answer a response header, on
   * a stream an SSE comment before its `data: [DONE]` (receiptComment),
   * since a stream's usage comes after its headers. The one channel of the
   * engine's usage to the router: receipts and tenant accounting read it.
   */
  cached: 'x-warmpath-cached-tokens',
  /** Beside `cached`: the engine's prompt tokens. */
  promptTokens: 'x-warmpath-prompt-tokens',
  /** Beside `cached`: the engine's completion tokens. */
  completionTokens: 'x-warmpath-completion-tokens',
} as const;

/** Priority bands, highest first: under saturation a higher band is served first and a lower one shed first. */
export const PRIORITY_BANDS = ['interactive', 'standard', 'batch'] as const;
export type PriorityBand = (typeof PRIORITY_BANDS)[number];

/** The band's rank (0 = highest), or undefined for a name that is no band. */
export function bandRank(name: string | undefined): number | undefined {
  const i = name === undefined ? -1 : (PRIORITY_BANDS as readonly string[]).indexOf(name);
  return i < 0 ? undefined : i;
}

/** One answer's usage as the engine counted it and its agent read it (the receipt); a field is absent when the engine did not report it. */
export interface EngineUsage {
  readonly promptTokens?: number | undefined;
  readonly cachedTokens?: number | undefined;
  readonly completionTokens?: number | undefined;
}

/** The receipt's fields, in the order they are written: usage field → header name. */
const RECEIPT_FIELDS = [
  ['cachedTokens', HEADERS.cached],
  ['promptTokens', HEADERS.promptTokens],
  ['completionTokens', HEADERS.completionTokens],
] as const;

/** The receipt as response headers (the known fields only). */
export function receiptHeaders(u: EngineUsage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, name] of RECEIPT_FIELDS) if (u[field] !== undefined) out[name] = String(u[field]);
  return out;
}

/** The receipt in a plain answer's headers, or undefined when it carries none. */
export function receiptOfHeaders(h: Readonly<Record<string, string | string[] | undefined>>): EngineUsage | undefined {
  const out: Record<string, number> = {};
  for (const [field, name] of RECEIPT_FIELDS) {
    const v = h[name];
    const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
    if (Number.isSafeInteger(n)) out[field] = n;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The agent's receipt at the end of a stream whose engine reported usage:
 * `: x-warmpath-cached-tokens=C x-warmpath-prompt-tokens=P
 * x-warmpath-completion-tokens=K` (the known fields, on one line) and a
 * blank line, just before the closing `data: [DONE]` event (after the last
 * event when there is none). An SSE comment: clients skip it (as they do
 * `: keep-alive`), and a router reads it from the stream's tail
 * (receiptOfComment).
 */
export function receiptComment(u: EngineUsage): string {
  const pairs = RECEIPT_FIELDS.filter(([field]) => u[field] !== undefined).map(([f, name]) => `${name}=${u[f]}`);
  return `: ${pairs.join(' ')}\n\n`;
}

const RECEIPT_LINE = /(?:^|\n): (x-warmpath-[a-z]+-tokens=\d+(?: x-warmpath-[a-z]+-tokens=\d+)*)\r?\n/g;

/** The last receipt in the tail of a stream (receiptComment's text), or undefined. */
export function receiptOfComment(tail: string): EngineUsage | undefined {
  let last: RegExpExecArray | undefined;
  for (const m of tail.matchAll(RECEIPT_LINE)) last = m;
  if (last === undefined) return undefined;
  const h = Object.fromEntries(last[1]!.split(' ').map((pair) => pair.split('=') as [string, string]));
  return receiptOfHeaders(h);
}

/** The stream tail a router keeps to find the receipt: the comment's longest text and a [DONE] event after it, bytes. */
export const RECEIPT_TAIL_BYTES = 256;

/** Path → request kind for the OpenAI endpoints Warmpath routes. */
export const ROUTES: Readonly<Record<string, RequestKind>> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'completion',
  '/v1/responses': 'responses',
  '/v1/embeddings': 'embedding',
};

export interface ModelRef {
  /** Base model id. */
  model: string;
  /** LoRA adapter id, or '' for the base model. */
  adapter: string;
}

export interface RequestInfo extends ModelRef {
  kind: RequestKind;
  /** The `model` field as the client sent it. */
  requested: string;
  stream: boolean;
  /** Explicit affinity key: x-warmpath-key header or prompt_cache_key (see `requestKey`). */
  routingKey: string | undefined;
  /** The client's session id (x-session-id), for the session-keyed plain balancers (see `requestKey`). */
  sessionKey?: string;
  /** Characters of canonical prompt text. */
  promptChars: number;
  /** Estimated prompt tokens. */
  promptTokens: number;
  /** Requested (or assumed) output tokens. */
  maxTokens: number;
  /** Chained prefix hashes (docs/DESIGN-RATIONALE.md §2). */
  hashes: BigUint64Array;
  /** 32-bit hash of the prompt's last chunkChars characters: with `hashes`, tells apart prompts that differ only in a partial last chunk. */
  tailHash: number;
}

export interface DescribeOptions {
  chunkChars?: number;
  maxChunks?: number;
  charsPerToken?: number;
  defaultMaxTokens?: number;
  /** Maps the requested model name to (base, adapter); default: a base model. */
  resolveModel?: (name: string) => ModelRef | undefined;
  /** The x-warmpath-key header, if any. */
  keyHeader?: string | undefined;
  /** The x-session-id header, if any. */
  sessionHeader?: string | undefined;
}

/** Longest key kept, characters: a key only has to tell sessions apart, and its hash is taken per request. */
export const MAX_KEY_CHARS = 256;

/** A client-supplied key as routing uses it: trimmed, at most MAX_KEY_CHARS; undefined when missing or blank. */
export function requestKey(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const key = raw.trim().slice(0, MAX_KEY_CHARS);
  return key === '' ? undefined : key;
}

const isObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x);

/** Parses a JSON body; malformed JSON, a non-object or nesting deeper than MAX_JSON_DEPTH is an invalid_json / invalid_request error. */
export function parseJsonBody(buf: Uint8Array): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8'));
  } catch (err) {
    throw new WarmpathError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(body)) throw new WarmpathError('invalid_request', 'Request body must be a JSON object.');
  checkDepth(body);
  return body;
}

/** A token count the schema already checked (an integer in range, or null/absent). */
function tokenCount(body: Record<string, unknown>, key: string): number | undefined {
  const v = body[key];
  return typeof v === 'number' ? v : undefined;
}

/**
 * Validates the body against its endpoint's schema (request-schema.ts) and
 * computes the request's prefix chain and work estimate. Throws WarmpathError
 * on invalid input; the `resolveModel` callback returning undefined means
 * model_not_found.
 */
export function describeRequest(
  body: Record<string, unknown>,
  kind: RequestKind,
  opts: DescribeOptions = {},
): RequestInfo {
  const chunkChars = opts.chunkChars ?? FLEET_DEFAULTS.chunkChars;
  const maxChunks = opts.maxChunks ?? FLEET_DEFAULTS.maxChunks;
  const charsPerToken = opts.charsPerToken ?? FLEET_DEFAULTS.charsPerToken;
  const requested = body.model;
  if (requested === undefined || requested === null || requested === '')
    throw new WarmpathError('model_required', undefined, 'model');
  if (typeof requested !== 'string') throw new WarmpathError('invalid_request', '"model" must be a string.', 'model');
  checkBody(body, kind);
  const ref = opts.resolveModel ? opts.resolveModel(requested) : { model: requested, adapter: '' };
  if (ref === undefined)
    throw new WarmpathError(
      'model_not_found',
      `The model "${requested}" does not exist or no replica serves it.`,
      'model',
    );
  const maxTokens =
    tokenCount(body, 'max_completion_tokens') ??
    tokenCount(body, 'max_tokens') ??
    tokenCount(body, 'max_output_tokens') ??
    (kind === 'embedding' ? 0 : (opts.defaultMaxTokens ?? FLEET_DEFAULTS.defaultMaxTokens));
  const salt = typeof body.cache_salt === 'string' ? body.cache_salt : '';
  const text = canonicalText(body, kind);
  const session = requestKey(opts.sessionHeader);
  return {
    kind,
    requested,
    model: ref.model,
    adapter: ref.adapter,
    stream: body.stream === true,
    routingKey: requestKey(opts.keyHeader) ?? requestKey(body.prompt_cache_key),
    ...(session !== undefined ? { sessionKey: session } : {}),
    promptChars: text.length,
    promptTokens: Math.ceil(text.length / charsPerToken),
    maxTokens,
    hashes: chainHashes(text, chunkChars, prefixSeed(ref.model, ref.adapter, salt), maxChunks),
    tailHash: hashString32(text.length > chunkChars ? text.slice(-chunkChars) : text),
  };
}
