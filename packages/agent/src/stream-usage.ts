/**
 * Cache feedback that does not depend on the client. The cache model learns
 * from the engine's `cached_tokens`, which a stream carries only when the
 * client set `stream_options.include_usage`; most clients do not. So the
 * agent asks on the client's behalf and takes the extra event back out.
 *
 * Steps:
 *  1. `askForUsage`: a streaming chat or completion request whose client did
 *     not ask, to an engine whose usage carries cached tokens, is sent with
 *     `"stream_options":{"include_usage":true}` spliced into the raw body
 *     (re-serialized only when the client sent `include_usage: false|null`).
 *  2. `UsageStrip`: the response is cut into SSE events at blank lines; an
 *     event whose data is a chunk with `"choices": []` and a usage object is
 *     dropped; in dialects that add `"usage": null` to every chunk only when
 *     asked, that trailing member is removed. Every other byte passes as the
 *     engine sent it, in order. The usage tap reads the unstripped stream.
 * Complexity: O(bytes) scanning for blank lines; JSON.parse only on events
 * that mention both `"usage"` and an empty `choices`.
 * Trade-off: an incomplete event is held until its blank line (a client
 * cannot parse half an event anyway); an event larger than MAX_EVENT_BYTES
 * passes unexamined, since a usage chunk is a few hundred bytes.
 */
import type { EngineKind, RequestKind } from '@warmpath/shared/wire';

/** How each engine kind answers include_usage (docs/ENGINE-SIGNALS.md, "Cached tokens per response"). */
export const USAGE_DIALECTS = {
  // vLLM ≥ 0.5: cached_tokens with --enable-prompt-tokens-details. Builds that
  // mark every chunk `"usage":null` do so only when asked (as OpenAI does).
  vllm: { ask: true, nullOnlyWhenAsked: true },
  // SGLang: cached_tokens with --enable-cache-report. Older builds write
  // `"usage":null` on every chunk whether asked or not, so it stays.
  sglang: { ask: true, nullOnlyWhenAsked: false },
  // llama.cpp puts timings.cache_n on the last chunk unasked; asking would move
  // the timings from the finish chunk onto the usage chunk.
  llamacpp: { ask: false, nullOnlyWhenAsked: false },
  // TGI's usage has no cached tokens: nothing to learn.
  tgi: { ask: false, nullOnlyWhenAsked: false },
} as const satisfies Record<EngineKind, { ask: boolean; nullOnlyWhenAsked: boolean }>;

/** A usage chunk is far smaller; a bigger event is passed on unexamined. */
export const MAX_EVENT_BYTES = 64 * 1024;

const STREAM_OPTIONS = '"stream_options":{"include_usage":true}';

export interface UsageAsk {
  /** The body to send to the engine. */
  body: Buffer;
  /** Strip a trailing `"usage":null` member from each event as well. */
  dropNullUsage: boolean;
}

/**
 * The body to send when the agent should ask the engine for usage on the
 * client's behalf; undefined to forward the request as it came.
 */
export function askForUsage(
  engine: EngineKind,
  kind: RequestKind,
  parsed: Record<string, unknown>,
  raw: Buffer,
): UsageAsk | undefined {
  const dialect = USAGE_DIALECTS[engine];
  if (!dialect.ask || (kind !== 'chat' && kind !== 'completion') || parsed.stream !== true) return undefined;
  const dropNullUsage = dialect.nullOnlyWhenAsked;
  if (!('stream_options' in parsed)) {
    const open = raw.indexOf(0x7b); // '{'
    if (open < 0) return undefined;
    const empty = /^\s*\}/.test(raw.subarray(open + 1, open + 64).toString('latin1'));
    const insert = Buffer.from(empty ? STREAM_OPTIONS : `${STREAM_OPTIONS},`);
    return { body: Buffer.concat([raw.subarray(0, open + 1), insert, raw.subarray(open + 1)]), dropNullUsage };
  }
  const so = parsed.stream_options;
  const own =
    so === null
      ? []
      : typeof so === 'object' && !Array.isArray(so)
        ? Object.entries(so as Record<string, unknown>)
        : undefined;
  // The client asked, or set other stream options we must not second-guess.
  if (own === undefined || own.some(([k, v]) => k !== 'include_usage' || (v !== false && v !== null))) return undefined;
  return { body: Buffer.from(JSON.stringify({ ...parsed, stream_options: { include_usage: true } })), dropNullUsage };
}

/** The index just past the blank line that ends the event starting at `from`, or -1. */
function eventEnd(buf: Buffer, from: number): number {
  for (let i = buf.indexOf(0x0a, from); i >= 0 && i + 1 < buf.length; i = buf.indexOf(0x0a, i + 1)) {
    if (buf[i + 1] === 0x0a) return i + 2;
    if (buf[i + 1] === 0x0d && i + 2 < buf.length && buf[i + 2] === 0x0a) return i + 3;
  }
  return -1;
}

const EMPTY = Buffer.alloc(0);
const NULL_USAGE = /,\s*"usage"\s*:\s*null\s*\}(\s*)$/;
const EMPTY_CHOICES = /"choices"\s*:\s*\[\s*\]/;

/** Removes the usage the agent asked for from an SSE stream; feed it every chunk, then call `end`. */
export class UsageStrip {
  readonly #dropNull: boolean;
  #held: Buffer = EMPTY;
  /** The current event outgrew MAX_EVENT_BYTES: pass it on up to its blank line. */
  #passing = false;
  /** Events dropped (one per stream when the engine answered as asked). */
  dropped = 0;

  constructor(dropNullUsage: boolean) {
    this.#dropNull = dropNullUsage;
  }

  /** The bytes to send the client for this chunk (possibly none). */
  push(chunk: Buffer): Buffer {
    const buf = this.#held.length > 0 ? Buffer.concat([this.#held, chunk]) : chunk;
    const out: Buffer[] = [];
    let start = 0;
    for (let end = eventEnd(buf, 0); end >= 0; end = eventEnd(buf, start)) {
      const event = buf.subarray(start, end);
      const kept = this.#passing ? event : this.#filter(event);
      this.#passing = false;
      if (kept !== undefined) out.push(kept);
      start = end;
    }
    const rest = buf.subarray(start);
    if (this.#passing || rest.length > MAX_EVENT_BYTES) {
      this.#passing = true;
      this.#held = EMPTY;
      out.push(rest);
    } else {
      this.#held = rest;
    }
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** What is still held when the stream ends (an event without its blank line). */
  end(): Buffer {
    const rest = this.#held;
    this.#held = EMPTY;
    if (rest.length === 0 || this.#passing) return rest;
    return this.#filter(rest) ?? EMPTY;
  }

  #filter(event: Buffer): Buffer | undefined {
    if (event.indexOf('"usage"') < 0) return event;
    const text = event.toString('utf8');
    const lines = text.split('\n');
    const data = lines
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l[5] === ' ' ? 6 : 5).replace(/\r$/, ''));
    if (data.length === 1 && EMPTY_CHOICES.test(data[0]!) && isUsageOnly(data[0]!)) {
      this.dropped++;
      return undefined;
    }
    if (!this.#dropNull) return event;
    let changed = false;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (!line.startsWith('data:') || !NULL_USAGE.test(line)) continue;
      lines[i] = line.replace(NULL_USAGE, '}$1');
      changed = true;
    }
    return changed ? Buffer.from(lines.join('\n')) : event;
  }
}

function isUsageOnly(data: string): boolean {
  try {
    const o: unknown = JSON.parse(data);
    if (o === null || typeof o !== 'object') return false;
    const { choices, usage } = o as { choices?: unknown; usage?: unknown };
    return Array.isArray(choices) && choices.length === 0 && usage !== null && typeof usage === 'object';
  } catch {
    return false;
  }
}
