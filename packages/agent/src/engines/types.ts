/**
 * One interface for every engine kind: the agent scrapes an EngineSnapshot
 * and reads the models/adapters list; adapters translate each engine's own
 * metric names and endpoints (docs/ENGINE-SIGNALS.md). Fields an engine does not expose
 * are `undefined`, never guessed.
 */
import type { Dispatcher } from 'undici';
import type { Endpoint, EngineKind } from '@warmpath/shared/wire';
import type { Buckets } from '@warmpath/shared/runtime';

export interface EngineSnapshot {
  /** Sequences running in the engine's batch. */
  running: number;
  /** Requests queued in the engine. */
  waiting: number;
  /** KV cache in use, fraction 0–1. */
  kvUsedFraction: number | undefined;
  /** KV capacity, tokens. */
  kvCapacityTokens: number | undefined;
  /** Max concurrent sequences (slots), when known. */
  maxRunning: number | undefined;
  /** Cumulative prefix-cache query tokens (counter). */
  prefixQueries: number | undefined;
  /** Cumulative prefix-cache hit tokens (counter). */
  prefixHits: number | undefined;
  /** Cumulative preemptions (counter). */
  preemptions: number | undefined;
  /** Adapters currently on the GPU (running or loaded). */
  hotAdapters: string[];
  /** GPU adapter slots (0 = LoRA off or unknown). */
  adapterSlots: number;
  /** Counters that only grow while the engine lives; any going backwards means a restart. */
  counters: number[];
  /** Engine configuration fingerprint (e.g. num_gpu_blocks); a change means a restart. */
  configHint: string;
  /** The engine's inter-token latency histogram, seconds, cumulative; undefined when it exposes none. */
  itl?: Buckets;
}

export interface ModelEntry {
  id: string;
  /** Base model id when this entry is a LoRA adapter. */
  parent: string | undefined;
}

export interface EngineAdapter {
  readonly kind: EngineKind;
  /** Endpoints the engine serves by default (embeddings need a pooling model: opt in with --endpoints). */
  readonly endpoints: readonly Endpoint[];
  scrape(signal: AbortSignal): Promise<EngineSnapshot>;
  models(signal: AbortSignal): Promise<ModelEntry[]>;
}

/**
 * The agent core's view of its engine: a snapshot and the models list, each
 * answered through a callback (at once in the simulator, after HTTP live).
 * `endpoints`: what the engine serves by default.
 */
export interface EngineSource {
  readonly endpoints: readonly Endpoint[];
  scrape(done: (error: unknown, snap?: EngineSnapshot) => void): void;
  models(done: (error: unknown, models?: ModelEntry[]) => void): void;
}

export interface AdapterContext {
  /** Keep-alive dispatcher for control traffic to the engine. */
  dispatcher: Dispatcher;
  /** Engine base URL, no trailing slash. */
  baseUrl: string;
  /** Headers on every control request (the engine's API key, when it has one). */
  headers?: Readonly<Record<string, string>>;
}

/** Error with a stable code for a failed engine call. */
export class EngineError extends Error {
  readonly code: 'ENGINE_HTTP' | 'ENGINE_FORMAT';
  constructor(code: 'ENGINE_HTTP' | 'ENGINE_FORMAT', message: string) {
    super(message);
    this.name = 'EngineError';
    this.code = code;
  }
}

const MAX_CONTROL_BYTES = 16 * 1024 * 1024;

/** GET a text body with a size bound; non-2xx is an EngineError carrying the status. */
export async function getText(
  ctx: AdapterContext,
  path: string,
  signal: AbortSignal,
): Promise<{ status: number; text: string }> {
  const res = await ctx.dispatcher.request({
    origin: ctx.baseUrl,
    path,
    method: 'GET',
    signal,
    ...(ctx.headers !== undefined ? { headers: ctx.headers } : {}),
  });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_CONTROL_BYTES) {
      res.body.destroy();
      throw new EngineError('ENGINE_FORMAT', `${path}: body over ${MAX_CONTROL_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return { status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') };
}

export async function getOk(ctx: AdapterContext, path: string, signal: AbortSignal): Promise<string> {
  const { status, text } = await getText(ctx, path, signal);
  if (status < 200 || status >= 300) throw new EngineError('ENGINE_HTTP', `${path}: HTTP ${status}`);
  return text;
}

export async function getJson(ctx: AdapterContext, path: string, signal: AbortSignal): Promise<unknown> {
  const text = await getOk(ctx, path, signal);
  try {
    return JSON.parse(text);
  } catch {
    throw new EngineError('ENGINE_FORMAT', `${path}: not JSON`);
  }
}

export const isRecord = (x: unknown): x is Record<string, unknown> =>
  x !== null && typeof x === 'object' && !Array.isArray(x);

export const finiteOr = (x: unknown, d: number): number => (typeof x === 'number' && Number.isFinite(x) ? x : d);

/** Non-negative finite number or undefined. */
export const nonNeg = (x: number | undefined): number | undefined =>
  x !== undefined && Number.isFinite(x) && x >= 0 ? x : undefined;

/** OpenAI `/v1/models` list → entries; tolerant of junk. */
export function parseModelList(body: unknown): ModelEntry[] {
  const data = isRecord(body) && Array.isArray(body.data) ? body.data : [];
  const out: ModelEntry[] = [];
  for (const m of data) {
    if (!isRecord(m) || typeof m.id !== 'string' || m.id === '' || m.id.length > 256) continue;
    const parent = typeof m.parent === 'string' && m.parent !== '' && m.parent !== m.id ? m.parent : undefined;
    out.push({ id: m.id, parent });
    if (out.length >= 1024) break;
  }
  return out;
}

export async function openAiModels(ctx: AdapterContext, signal: AbortSignal): Promise<ModelEntry[]> {
  return parseModelList(await getJson(ctx, '/v1/models', signal));
}

export function emptySnapshot(): EngineSnapshot {
  return {
    running: 0,
    waiting: 0,
    kvUsedFraction: undefined,
    kvCapacityTokens: undefined,
    maxRunning: undefined,
    prefixQueries: undefined,
    prefixHits: undefined,
    preemptions: undefined,
    hotAdapters: [],
    adapterSlots: 0,
    counters: [],
    configHint: '',
  };
}
