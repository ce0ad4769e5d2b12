/**
 * Prefix identity (docs/DESIGN-RATIONALE.md §2): the one implementation agent, router, sim and
 * bench share.
 *
 * Steps: render the request canonically → split into chunks of C characters
 * (only full chunks) → hash chunk i with xxh64 seeded by chunk i-1's hash; the
 * first seed comes from (model, adapter, cache_salt). Two requests share chain
 * hash i exactly when their first i chunks and their seeds match.
 * Complexity: O(min(len, C·maxChunks)) characters, one wasm call per chunk.
 * Trade-off: characters, not tokens — no tokenizer needed on the router, at the
 * price of chunk edges that do not align with the engine's token blocks; the
 * agent's cache model absorbs the difference.
 *
 * Speed: the text is UTF-8 encoded once into a reusable buffer; pure-ASCII text
 * (the common case) maps character offsets to byte offsets 1:1, so each chunk is
 * a subarray view, with no per-chunk encoding.
 */
import xxhash from 'xxhash-wasm';

const xx = await xxhash();

/** Record separators that cannot appear in JSON-encoded text parts. */
const SEP = '\u001f';
const END = '\u001e';

/** Stable JSON: object keys sorted, so equal content renders equal text. */
export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

function renderContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    let out = '';
    for (const part of content) {
      if (typeof part === 'string') out += part;
      else if (
        part !== null &&
        typeof part === 'object' &&
        (part as { type?: unknown }).type === 'text' &&
        typeof (part as { text?: unknown }).text === 'string'
      )
        out += (part as { text: string }).text;
      else if (
        part !== null &&
        typeof part === 'object' &&
        (part as { type?: unknown }).type === 'input_text' &&
        typeof (part as { text?: unknown }).text === 'string'
      )
        out += (part as { text: string }).text;
      else out += stableJson(part);
    }
    return out;
  }
  return stableJson(content);
}

function renderMessage(m: unknown): string {
  if (m === null || typeof m !== 'object') return `${SEP}${renderContent(m)}${END}`;
  const msg = m as Record<string, unknown>;
  const role = typeof msg.role === 'string' ? msg.role : typeof msg.type === 'string' ? msg.type : '';
  let extra = '';
  if (typeof msg.name === 'string') extra += `${SEP}${msg.name}`;
  if (msg.tool_calls !== undefined) extra += `${SEP}${stableJson(msg.tool_calls)}`;
  if (typeof msg.tool_call_id === 'string') extra += `${SEP}${msg.tool_call_id}`;
  return `${role}${SEP}${renderContent(msg.content)}${extra}${END}`;
}

export type RequestKind = 'chat' | 'completion' | 'responses' | 'embedding';

/**
 * Canonical text of an OpenAI request body. Chat: tools first, then each
 * message as role, separator, content, terminator. Completions: the prompt.
 * Responses: `instructions` as a system turn, then `input` (string or items).
 * Unknown shapes render as stable JSON so they still hash deterministically.
 */
export function canonicalText(body: Record<string, unknown>, kind: RequestKind): string {
  switch (kind) {
    case 'chat': {
      let out = body.tools !== undefined ? `tools${SEP}${stableJson(body.tools)}${END}` : '';
      const messages = Array.isArray(body.messages) ? body.messages : [];
      for (const m of messages) out += renderMessage(m);
      return out;
    }
    case 'completion':
    case 'embedding': {
      const p = kind === 'completion' ? body.prompt : body.input;
      if (typeof p === 'string') return p;
      if (Array.isArray(p) && p.every((x) => typeof x === 'string')) return p.join('');
      return p === undefined ? '' : stableJson(p);
    }
    case 'responses': {
      let out = body.tools !== undefined ? `tools${SEP}${stableJson(body.tools)}${END}` : '';
      if (typeof body.instructions === 'string') out += `system${SEP}${body.instructions}${END}`;
      const input = body.input;
      if (typeof input === 'string') out += `user${SEP}${input}${END}`;
      else if (Array.isArray(input)) for (const item of input) out += renderMessage(item);
      return out;
    }
  }
}

/** Seed of a chain: model, adapter ('' for the base model) and cache_salt. */
export function prefixSeed(model: string, adapter = '', cacheSalt = ''): bigint {
  return xx.h64(`${model}\u0000${adapter}\u0000${cacheSalt}`);
}

let scratch = new Uint8Array(1 << 16);
const encoder = new TextEncoder();

/**
 * Chained hashes of the full C-character chunks of `text`, at most `maxChunks`.
 * Result[i] identifies the first i+1 chunks under `seed`.
 */
export function chainHashes(text: string, chunkChars: number, seed: bigint, maxChunks: number): BigUint64Array {
  const n = Math.min(Math.floor(text.length / chunkChars), maxChunks);
  const out = new BigUint64Array(n);
  if (n === 0) return out;
  const chars = n * chunkChars;
  const slice = chars === text.length ? text : text.slice(0, chars);
  if (scratch.length < chars * 3) scratch = new Uint8Array(Math.max(chars * 3, scratch.length * 2));
  const { read, written } = encoder.encodeInto(slice, scratch);
  let h = seed;
  if (written === read && read === chars) {
    // ASCII: one byte per character.
    for (let i = 0; i < n; i++) {
      h = xx.h64Raw(scratch.subarray(i * chunkChars, (i + 1) * chunkChars), h);
      out[i] = h;
    }
  } else {
    for (let i = 0; i < n; i++) {
      h = xx.h64Raw(encoder.encode(slice.slice(i * chunkChars, (i + 1) * chunkChars)), h);
      out[i] = h;
    }
  }
  return out;
}

/** 64-bit hash of a string (routing keys, adapter homes). */
export function hashString(s: string, seed = 0n): bigint {
  return xx.h64(s, seed);
}

/** 32-bit hash of a string (ring points). */
export function hashString32(s: string, seed = 0): number {
  return xx.h32(s, seed);
}

/** The longest i such that hashes[0..i) are all in `has` (prefix lengths are monotone). */
export function matchedPrefix(hashes: BigUint64Array, has: (h: bigint) => boolean): number {
  // Chains are prefix-closed in a well-kept cache; scan from the start and stop
  // at the first miss, which is what an engine's prefix reuse does too.
  let i = 0;
  while (i < hashes.length && has(hashes[i]!)) i++;
  return i;
}
