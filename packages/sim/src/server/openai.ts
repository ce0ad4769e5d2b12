/**
 * The OpenAI/vLLM wire format: validating inference requests and shaping
 * responses and SSE chunks. Pure functions; the server does the I/O.
 *
 * Streaming is the hot path: per request, the JSON around a token is rendered
 * once into a prefix and a suffix, and each token is prefix + word + suffix
 * (words are pre-stringified), so a chunk costs one string concat.
 */
import { WarmpathError } from '@warmpath/shared/wire';

export type InferenceKind = 'chat' | 'completion';

export interface InferenceRequest {
  readonly kind: InferenceKind;
  /** The model as the client named it (base id or adapter name). */
  readonly model: string;
  /** '' for the base model. */
  readonly adapter: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly maxTokens: number;
  /** vLLM's `priority` (lower first); 0 when absent. */
  readonly priority: number;
  readonly cacheSalt: string | undefined;
  readonly body: Record<string, unknown>;
}

export interface ParseContext {
  readonly baseModel: string;
  readonly hasAdapter: (name: string) => boolean;
  readonly defaultMaxTokens: number;
}

function invalid(message: string, param: string): WarmpathError {
  return new WarmpathError('invalid_request', message, param);
}

function optionalInt(b: Record<string, unknown>, key: string, min: number): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
    throw invalid(`${key} must be an integer >= ${min}`, key);
  return v;
}

function optionalNumber(b: Record<string, unknown>, key: string, min: number, max: number): void {
  const v = b[key];
  if (v === undefined || v === null) return;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw invalid(`${key} must be a number in [${min}, ${max}]`, key);
}

/**
 * The content part types vLLM's chat parser knows (its supported-types list,
 * built from its multimodal parser map and the parts it skips). Any other
 * type is a 400 with `param: "type"`, as vLLM answers it.
 */
const PART_TYPES: ReadonlySet<string> = new Set([
  'audio_embeds',
  'audio_url',
  'image_embeds',
  'image_pil',
  'image_url',
  'input_audio',
  'input_image',
  'input_text',
  'output_text',
  'prompt_embeds',
  'refusal',
  'text',
  'thinking',
  'tool_reference',
  'video_url',
]);
const PART_TYPE_LIST = [...PART_TYPES].join(', ');

/** A message's content: a string, null, or parts whose `type` vLLM knows (a bare string part passes, as in vLLM). */
function checkContentParts(content: unknown): void {
  if (!Array.isArray(content)) return;
  for (const part of content as unknown[]) {
    if (typeof part === 'string') continue;
    const type = part !== null && typeof part === 'object' ? (part as { type?: unknown }).type : undefined;
    if (typeof type !== 'string' || !PART_TYPES.has(type))
      throw invalid(
        `Unsupported chat content part type: ${typeof type === 'string' ? `'${type}'` : String(type)}. Supported types: ${PART_TYPE_LIST}`,
        'type',
      );
  }
}

/** Validates a /v1/chat/completions or /v1/completions body; throws WarmpathError. */
export function parseInference(raw: unknown, kind: InferenceKind, ctx: ParseContext): InferenceRequest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new WarmpathError('invalid_request', 'Request body must be a JSON object.');
  const b = raw as Record<string, unknown>;
  const modelField = b.model;
  if (modelField !== undefined && modelField !== null && typeof modelField !== 'string')
    throw invalid('model must be a string', 'model');
  const model = typeof modelField === 'string' && modelField !== '' ? modelField : ctx.baseModel;
  let adapter = '';
  if (model !== ctx.baseModel) {
    if (!ctx.hasAdapter(model))
      throw new WarmpathError('model_not_found', `The model \`${model}\` does not exist.`, 'model');
    adapter = model;
  }
  if (kind === 'chat') {
    const m = b.messages;
    if (!Array.isArray(m) || m.length === 0) throw invalid('messages must be a non-empty array', 'messages');
    for (let i = 0; i < m.length; i++) {
      const msg = m[i] as unknown;
      if (msg === null || typeof msg !== 'object' || typeof (msg as { role?: unknown }).role !== 'string')
        throw invalid(`messages[${i}] must be an object with a string role`, 'messages');
      checkContentParts((msg as { content?: unknown }).content);
    }
  } else {
    const p = b.prompt;
    const ok =
      (typeof p === 'string' && p !== '') ||
      (Array.isArray(p) &&
        p.length > 0 &&
        (p.every((x) => typeof x === 'string') || p.every((x) => typeof x === 'number')));
    if (!ok) throw invalid('prompt must be a non-empty string, array of strings or array of token ids', 'prompt');
  }
  const stream = b.stream;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean')
    throw invalid('stream must be a boolean', 'stream');
  const so = b.stream_options;
  let includeUsage = false;
  if (so !== undefined && so !== null) {
    if (stream !== true) throw invalid('Stream options can only be defined when `stream=True`.', 'stream_options');
    if (typeof so !== 'object' || Array.isArray(so))
      throw invalid('stream_options must be an object', 'stream_options');
    const iu = (so as Record<string, unknown>).include_usage;
    if (iu !== undefined && iu !== null && typeof iu !== 'boolean')
      throw invalid('stream_options.include_usage must be a boolean', 'stream_options');
    includeUsage = iu === true;
  }
  const n = optionalInt(b, 'n', 1);
  if (n !== undefined && n !== 1) throw invalid('the simulator supports only n=1', 'n');
  optionalNumber(b, 'temperature', 0, 2);
  optionalNumber(b, 'top_p', 0, 1);
  const ie = b.ignore_eos;
  if (ie !== undefined && ie !== null && typeof ie !== 'boolean')
    throw invalid('ignore_eos must be a boolean', 'ignore_eos');
  const salt = b.cache_salt;
  if (salt !== undefined && salt !== null && typeof salt !== 'string')
    throw invalid('cache_salt must be a string', 'cache_salt');
  const maxTokens =
    (kind === 'chat' ? optionalInt(b, 'max_completion_tokens', 1) : undefined) ??
    optionalInt(b, 'max_tokens', 1) ??
    ctx.defaultMaxTokens;
  const priority = b.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isInteger(priority))
    throw invalid('priority must be an integer', 'priority');
  return {
    kind,
    model,
    adapter,
    stream: stream === true,
    includeUsage,
    maxTokens,
    priority,
    cacheSalt: typeof salt === 'string' ? salt : undefined,
    body: b,
  };
}

// ---- generated text ---------------------------------------------------------

const WORDS = (
  'the quick brown fox jumps over a lazy dog while warm caches keep every prefix close and ' +
  'routers send each request where its tokens already live so replicas answer sooner'
).split(' ');
/** Token i of every answer (deterministic filler). */
export const wordAt = (i: number): string => ` ${WORDS[i % WORDS.length]!}`;
const WORDS_JSON = WORDS.map((w) => JSON.stringify(` ${w}`));
export const wordJsonAt = (i: number): string => WORDS_JSON[i % WORDS_JSON.length]!;

export function fillerText(tokens: number): string {
  let s = '';
  for (let i = 0; i < tokens; i++) s += wordAt(i);
  return s;
}

// ---- responses --------------------------------------------------------------

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export function usageOf(promptTokens: number, completionTokens: number, cachedTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

export function completionResponse(
  req: InferenceRequest,
  id: string,
  created: number,
  generated: number,
  usage: Usage,
  finishReason: string,
  kvTransferParams: Record<string, unknown> | null = null,
): Record<string, unknown> {
  const text = fillerText(generated);
  if (req.kind === 'chat') {
    return {
      id,
      object: 'chat.completion',
      created,
      model: req.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text,
            refusal: null,
            annotations: null,
            audio: null,
            function_call: null,
            tool_calls: [],
            reasoning_content: null,
          },
          logprobs: null,
          finish_reason: finishReason,
          stop_reason: null,
        },
      ],
      service_tier: null,
      system_fingerprint: null,
      usage,
      prompt_logprobs: null,
      kv_transfer_params: kvTransferParams,
    };
  }
  return {
    id,
    object: 'text_completion',
    created,
    model: req.model,
    choices: [
      { index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null, prompt_logprobs: null },
    ],
    service_tier: null,
    system_fingerprint: null,
    usage,
    kv_transfer_params: kvTransferParams,
  };
}

/** Pre-rendered SSE framing for one streaming request. */
export class ChunkWriter {
  private readonly head: string;
  private readonly midTail: string;
  private readonly lastTail: string;
  private readonly req: InferenceRequest;
  private readonly id: string;
  private readonly created: number;

  constructor(req: InferenceRequest, id: string, created: number) {
    this.req = req;
    this.id = id;
    this.created = created;
    const obj = req.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    const usage = req.includeUsage ? ',"usage":null' : '';
    this.head = `data: {"id":"${id}","object":"${obj}","created":${created},"model":${JSON.stringify(req.model)},"choices":[{"index":0,${req.kind === 'chat' ? '"delta":{"content":' : '"text":'}`;
    const close = req.kind === 'chat' ? '}' : '';
    this.midTail = `${close},"logprobs":null,"finish_reason":null,"stop_reason":null}]${usage}}\n\n`;
    this.lastTail = `${close},"logprobs":null,"finish_reason":"length","stop_reason":null}]${usage}}\n\n`;
  }

  /** The chat stream's opening chunk (role); '' for completions. */
  opening(): string {
    if (this.req.kind !== 'chat') return '';
    const usage = this.req.includeUsage ? ',"usage":null' : '';
    return `data: {"id":"${this.id}","object":"chat.completion.chunk","created":${this.created},"model":${JSON.stringify(this.req.model)},"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]${usage}}\n\n`;
  }

  /** Chunk for output token `index` (0-based). */
  token(index: number, last: boolean): string {
    return this.head + wordJsonAt(index) + (last ? this.lastTail : this.midTail);
  }

  /** Usage chunk (only with include_usage) and the terminator. */
  closing(usage: Usage): string {
    const obj = this.req.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    const u = this.req.includeUsage
      ? `data: ${JSON.stringify({ id: this.id, object: obj, created: this.created, model: this.req.model, choices: [], usage })}\n\n`
      : '';
    return `${u}data: [DONE]\n\n`;
  }
}
