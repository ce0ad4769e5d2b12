/**
 * Usage from engine responses, read on the fly while bytes pass through.
 *
 * Steps: SSE — split complete lines, look only at `data:` lines that mention
 * `"usage"` with an object (or llama.cpp `"timings"`), parse just those; JSON
 * — keep at most MAX_JSON_BYTES and parse at the end. The last usage seen wins.
 * Complexity: O(bytes) substring scans; JSON.parse only on the usage chunk.
 * Trade-off: a body over MAX_JSON_BYTES yields no usage (the cache model then
 * goes without that one feedback) rather than unbounded buffering.
 */

export interface Usage {
  promptTokens: number | undefined;
  cachedTokens: number | undefined;
  completionTokens: number | undefined;
}

const MAX_JSON_BYTES = 1 << 20;
const MAX_LINE_CHARS = 1 << 20;

const num = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : undefined);
const rec = (x: unknown): Record<string, unknown> | undefined =>
  x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : undefined;

/** Usage from one parsed response object or stream chunk (OpenAI chat/completions/responses, llama.cpp timings). */
export function usageOf(obj: unknown): Usage | undefined {
  const o = rec(obj);
  if (o === undefined) return undefined;
  const u = rec(o.usage) ?? rec(rec(o.response)?.usage);
  const details = rec(u?.prompt_tokens_details) ?? rec(u?.input_tokens_details);
  const fromUsage: Usage | undefined =
    u === undefined
      ? undefined
      : {
          promptTokens: num(u.prompt_tokens) ?? num(u.input_tokens),
          cachedTokens: num(details?.cached_tokens),
          completionTokens: num(u.completion_tokens) ?? num(u.output_tokens),
        };
  // llama.cpp's last chunk carries both: `usage` without cached tokens, `timings` with them.
  const t = fromUsage?.cachedTokens === undefined ? rec(o.timings) : undefined;
  if (t === undefined) return fromUsage;
  const cached = num(t.cache_n);
  const processed = num(t.prompt_n);
  return {
    promptTokens: cached !== undefined && processed !== undefined ? cached + processed : fromUsage?.promptTokens,
    cachedTokens: cached,
    completionTokens: num(t.predicted_n) ?? fromUsage?.completionTokens,
  };
}

export class UsageTap {
  readonly #sse: boolean;
  #carry = '';
  #json: Buffer[] = [];
  #jsonBytes = 0;
  #overflow = false;
  usage: Usage | undefined;

  constructor(contentType: string) {
    this.#sse = contentType.includes('text/event-stream');
  }

  write(chunk: Buffer): void {
    if (this.#sse) {
      const text = this.#carry + chunk.toString('utf8');
      const last = text.lastIndexOf('\n');
      if (last === -1) {
        this.#carry = text.length > MAX_LINE_CHARS ? '' : text;
        return;
      }
      this.#carry = text.length - last - 1 > MAX_LINE_CHARS ? '' : text.slice(last + 1);
      if (!text.includes('"usage"') && !text.includes('"timings"')) return;
      this.#scan(text.slice(0, last));
      return;
    }
    if (this.#overflow) return;
    this.#jsonBytes += chunk.length;
    if (this.#jsonBytes > MAX_JSON_BYTES) {
      this.#overflow = true;
      this.#json = [];
      return;
    }
    this.#json.push(chunk);
  }

  end(): Usage | undefined {
    if (this.#sse) {
      if (this.#carry !== '') this.#scan(this.#carry);
    } else if (!this.#overflow && this.#json.length > 0) {
      try {
        this.#take(JSON.parse(Buffer.concat(this.#json).toString('utf8')));
      } catch {
        // Not JSON: no usage.
      }
      this.#json = [];
    }
    return this.usage;
  }

  #scan(block: string): void {
    for (const line of block.split('\n')) {
      if (!line.startsWith('data:')) continue;
      if (!/"usage"\s*:\s*\{/.test(line) && !line.includes('"timings"')) continue;
      try {
        this.#take(JSON.parse(line.slice(5)));
      } catch {
        // Malformed event: skip.
      }
    }
  }

  #take(obj: unknown): void {
    const u = usageOf(obj);
    if (u !== undefined) this.usage = u;
  }
}
