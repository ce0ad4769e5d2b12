/**
 * The simulator's HTTP face: vLLM's OpenAI-compatible dialect over node:http,
 * backed by one EngineModel driven in (scaled) real time.
 *
 * Per request: validate → prompt identity (canonical text, chain hashes) →
 * model.submit → the driver's step events write SSE chunks / the final JSON.
 * One timer per replica (the driver), none per request; a client that goes
 * away aborts its sequence and frees its blocks.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WarmpathError, sendError } from '@warmpath/shared/wire';
import { mulberry32 } from '@warmpath/shared/runtime';
import type { ErrorCode } from '@warmpath/shared/wire';
import { EngineError, EngineModel } from '../model/engine.ts';
import type { StepResult } from '../model/scheduler.ts';
import { SeqStatus } from '../model/sequence.ts';
import type { Sequence } from '../model/sequence.ts';
import type { EngineSnapshot } from '../model/views.ts';
import { PROFILES, isProfileName } from '../model/profiles.ts';
import type { EngineProfile, ProfileName } from '../model/profiles.ts';
import { promptIdentityOfBody } from '../model/prompt.ts';
import { RealTimeDriver } from './driver.ts';
import { FaultSyntaxError, applyFaultJson, applyFaultSpec, noFaults } from './faults.ts';
import type { FaultState } from './faults.ts';
import { renderMetrics } from './metrics.ts';
import { ChunkWriter, completionResponse, parseInference, usageOf } from './openai.ts';
import type { InferenceKind, InferenceRequest } from './openai.ts';

export const DEFAULT_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
export const VLLM_VERSION = '0.11.0';

export interface SimServerOptions {
  /** 0 = chosen by the OS. */
  readonly port?: number;
  readonly host?: string;
  readonly profile?: ProfileName | EngineProfile;
  /** Served base model id. */
  readonly model?: string;
  /** LoRA adapters registered at start. */
  readonly adapters?: readonly string[];
  /** LoRA on even without static adapters (dynamic loading). Implied by `adapters`. */
  readonly enableLora?: boolean;
  readonly maxLoras?: number;
  readonly maxCpuLoras?: number;
  /** Simulated time runs `speed`× faster than wall time. */
  readonly speed?: number;
  /** Start-up faults, CLI syntax (`crash-after=30s`, `slow=2`, ...). */
  readonly faults?: readonly string[];
  readonly charsPerToken?: number;
  /** Output tokens when the request names no max_tokens. */
  readonly defaultMaxTokens?: number;
  readonly bodyLimitBytes?: number;
  readonly enablePrefixCaching?: boolean;
  /** Serve /v1/load_lora_adapter and /v1/unload_lora_adapter. */
  readonly allowRuntimeLora?: boolean;
  /** Seed of the error-rate fault's PRNG. */
  readonly seed?: number;
  /** Called by the crash fault. Default: drop every connection and stop listening. */
  readonly onCrash?: () => void;
}

export interface SimServer {
  readonly url: string;
  readonly port: number;
  readonly model: EngineModel;
  readonly modelName: string;
  /** Current faults; `setFaults` takes the runtime JSON shape. */
  faults(): FaultState;
  setFaults(update: unknown): FaultState;
  close(): Promise<void>;
}

interface Inflight {
  readonly seq: Sequence;
  readonly req: InferenceRequest;
  readonly res: ServerResponse;
  readonly id: string;
  readonly created: number;
  readonly writer: ChunkWriter | undefined;
  started: boolean;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      req.resume();
      reject(new WarmpathError('body_too_large', `Request body exceeds ${limit} bytes.`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) over = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (over) reject(new WarmpathError('body_too_large', `Request body exceeds ${limit} bytes.`));
      else resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new WarmpathError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
  }
}

export async function startSimServer(options: SimServerOptions = {}): Promise<SimServer> {
  const profile: EngineProfile =
    options.profile === undefined ? PROFILES['h100-llama3-8b'] : typeof options.profile === 'string' ? profileByName(options.profile) : options.profile;
  const modelName = options.model ?? DEFAULT_MODEL;
  const adapters = options.adapters ?? [];
  const loraEnabled = options.enableLora === true || adapters.length > 0;
  const speed = options.speed ?? 1;
  if (!(speed > 0)) throw new RangeError('speed must be > 0');
  const charsPerToken = options.charsPerToken ?? 4;
  const defaultMaxTokens = options.defaultMaxTokens ?? 16;
  const bodyLimit = options.bodyLimitBytes ?? 16 * 1024 * 1024;
  const allowRuntimeLora = options.allowRuntimeLora ?? true;
  const model = new EngineModel(profile, {
    maxLoras: loraEnabled ? (options.maxLoras ?? 1) : 0,
    ...(options.maxCpuLoras !== undefined ? { maxCpuLoras: options.maxCpuLoras } : {}),
    adapters,
    enablePrefixCaching: options.enablePrefixCaching ?? true,
  });
  const loraPaths = new Map<string, string>(adapters.map((a) => [a, `/adapters/${a}`]));
  const createdUnix = Math.floor(Date.now() / 1000);
  const cacheInfo = {
    block_size: String(profile.blockSize),
    cache_dtype: 'auto',
    calculate_kv_scales: 'False',
    cpu_offload_gb: '0',
    enable_prefix_caching: model.enablePrefixCaching ? 'True' : 'False',
    gpu_memory_utilization: '0.9',
    is_attention_free: 'False',
    num_cpu_blocks: 'None',
    num_gpu_blocks: String(profile.numGpuBlocks),
    num_gpu_blocks_override: 'None',
    prefix_caching_hash_algo: 'sha256',
    sliding_window: 'None',
    swap_space: '4',
  };
  const random = mulberry32(options.seed ?? 1); // seeded so error-rate faults are reproducible
  const inflight = new Map<string, Inflight>();
  const held: (() => void)[] = [];
  let faults = applyFaultSpec(noFaults(), options.faults ?? []);
  let crashTimer: NodeJS.Timeout | undefined;
  let hangTimer: NodeJS.Timeout | undefined;
  let crashed = false;
  let closed = false;
  let seqCounter = 0;
  const boot = Math.floor(Math.random() * 0xffffff)
    .toString(16)
    .padStart(6, '0');

  const driver = new RealTimeDriver(model, speed, (r) => deliver(r));

  // ---- step events → HTTP ---------------------------------------------------

  function deliver(r: StepResult): void {
    for (const s of r.emitted) {
      const f = inflight.get(s.id);
      if (f !== undefined) onToken(f, s);
    }
  }

  function onToken(f: Inflight, s: Sequence): void {
    const last = s.status === SeqStatus.finished;
    if (f.writer !== undefined) {
      let out = '';
      if (!f.started) {
        f.started = true;
        f.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
        out += f.writer.opening();
      }
      out += f.writer.token(s.generated - 1, last);
      if (last) out += f.writer.closing(usageOf(s.promptTokens, s.generated, s.cachedTokens));
      if (last) {
        inflight.delete(s.id);
        f.res.end(out);
        return;
      }
      if (faults.dieAfterTokens !== null && s.generated >= faults.dieAfterTokens) {
        kill(f);
        f.res.write(out, () => f.res.destroy()); // flush the N-th token, then reset
        return;
      }
      f.res.write(out);
    } else if (last) {
      inflight.delete(s.id);
      sendJson(f.res, 200, completionResponse(f.req, f.id, f.created, s.generated, usageOf(s.promptTokens, s.generated, s.cachedTokens), 'length'));
    } else if (faults.dieAfterTokens !== null && s.generated >= faults.dieAfterTokens) {
      kill(f);
      f.res.destroy();
    }
  }

  /** die-after-tokens: the replica "dies" under this request: no terminator, connection reset. */
  function kill(f: Inflight): void {
    inflight.delete(f.seq.id);
    model.abort(f.seq.id);
  }

  // ---- routes ---------------------------------------------------------------

  /** The prompt's token count and block hashes, as the engine would compute them. */
  function identityOf(parsed: InferenceRequest, kind: InferenceKind) {
    return promptIdentityOfBody(parsed.body, kind, { model: modelName, adapter: parsed.adapter, cacheSalt: parsed.cacheSalt, charsPerToken, blockSize: profile.blockSize });
  }

  async function inference(req: IncomingMessage, res: ServerResponse, kind: InferenceKind): Promise<void> {
    const body = parseJson(await readBody(req, bodyLimit));
    const parsed = parseInference(body, kind, { baseModel: modelName, hasAdapter: (a) => model.hasAdapter(a), defaultMaxTokens });
    if (faults.errorRate > 0 && random() < faults.errorRate) throw new WarmpathError('internal_error', 'Injected fault: error-rate.');
    const identity = identityOf(parsed, kind);
    const seqId = `${boot}-${(seqCounter++).toString(36)}`;
    let seq: Sequence;
    try {
      seq = model.submit({ id: seqId, promptTokens: identity.promptTokens, maxTokens: parsed.maxTokens, blockHashes: identity.blockHashes, adapter: parsed.adapter }, driver.now());
    } catch (err) {
      if (err instanceof EngineError) {
        throw new WarmpathError(
          err.code === 'adapter_not_found' ? 'model_not_found' : 'invalid_request',
          err.message,
          err.code === 'adapter_not_found' ? 'model' : kind === 'chat' ? 'messages' : 'prompt',
        );
      }
      throw err;
    }
    const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${seqId}`;
    const created = Math.floor(Date.now() / 1000);
    const f: Inflight = {
      seq,
      req: parsed,
      res,
      id,
      created,
      writer: parsed.stream ? new ChunkWriter(parsed, id, created) : undefined,
      started: false,
    };
    inflight.set(seqId, f);
    res.on('close', () => {
      if (inflight.get(seqId) === f) {
        inflight.delete(seqId);
        model.abort(seqId);
      }
    });
    if (faults.dieAfterTokens === 0) {
      kill(f);
      res.destroy();
      return;
    }
    driver.kick();
  }

  function modelsList(): Record<string, unknown> {
    const created = Math.floor(Date.now() / 1000);
    const card = (id: string, root: string, parent: string | null): Record<string, unknown> => ({
      id,
      object: 'model',
      created,
      owned_by: 'vllm',
      root,
      parent,
      max_model_len: model.maxModelLen,
      permission: [
        {
          id: `modelperm-${boot}`,
          object: 'model_permission',
          created,
          allow_create_engine: false,
          allow_sampling: true,
          allow_logprobs: true,
          allow_search_indices: false,
          allow_view: true,
          allow_fine_tuning: false,
          organization: '*',
          group: null,
          is_blocking: false,
        },
      ],
    });
    return {
      object: 'list',
      data: [card(modelName, modelName, null), ...model.adapters.map((a) => card(a, loraPaths.get(a) ?? a, modelName))],
    };
  }

  async function loadLora(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const b = parseJson(await readBody(req, bodyLimit)) as Record<string, unknown> | null;
    if (!loraEnabled) throw new WarmpathError('invalid_request', 'LoRA is not enabled on this server (start it with --enable-lora or --adapters).');
    const name = b?.lora_name;
    const path = b?.lora_path;
    if (typeof name !== 'string' || name === '') throw new WarmpathError('invalid_request', 'lora_name must be a non-empty string', 'lora_name');
    if (typeof path !== 'string' || path === '') throw new WarmpathError('invalid_request', 'lora_path must be a non-empty string', 'lora_path');
    if (name === modelName || !model.registerAdapter(name))
      throw new WarmpathError('invalid_request', `The lora adapter '${name}' has already been loaded.`, 'lora_name');
    loraPaths.set(name, path);
    sendText(res, 200, `Success: LoRA adapter '${name}' added successfully.`);
  }

  async function unloadLora(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const b = parseJson(await readBody(req, bodyLimit)) as Record<string, unknown> | null;
    const name = b?.lora_name;
    if (typeof name !== 'string' || name === '') throw new WarmpathError('invalid_request', 'lora_name must be a non-empty string', 'lora_name');
    if (!model.unregisterAdapter(name)) throw new WarmpathError('adapter_not_found', `The lora adapter '${name}' cannot be found.`, 'lora_name');
    loraPaths.delete(name);
    sendText(res, 200, `Success: LoRA adapter '${name}' removed successfully.`);
  }

  async function probe(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = parseJson(await readBody(req, bodyLimit));
    const kind: InferenceKind = body !== null && typeof body === 'object' && 'messages' in body ? 'chat' : 'completion';
    const parsed = parseInference(body, kind, { baseModel: modelName, hasAdapter: (a) => model.hasAdapter(a), defaultMaxTokens });
    const identity = identityOf(parsed, kind);
    sendJson(res, 200, model.probe(identity.promptTokens, identity.blockHashes, parsed.adapter));
  }

  function state(): Record<string, unknown> {
    const snap: EngineSnapshot = model.snapshot();
    return {
      model: modelName,
      profile: profile.name,
      speed,
      simTimeMs: driver.now(),
      hung: driver.isPaused,
      faults,
      inflight: inflight.size,
      held: held.length,
      maxModelLen: model.maxModelLen,
      blockSize: profile.blockSize,
      engine: snap,
    };
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    if (faults.hang && !path.startsWith('/sim/')) {
      held.push(() => void handle(req, res));
      return;
    }
    const want = (m: string): boolean => {
      if (method === m) return true;
      res.setHeader('allow', m);
      throw new WarmpathError('method_not_allowed', `${method} is not allowed on ${path}; use ${m}.`);
    };
    switch (path) {
      case '/v1/chat/completions':
        if (want('POST')) await inference(req, res, 'chat');
        return;
      case '/v1/completions':
        if (want('POST')) await inference(req, res, 'completion');
        return;
      case '/v1/models':
        if (want('GET')) sendJson(res, 200, modelsList());
        return;
      case '/health':
        if (want('GET')) {
          res.writeHead(200, { 'content-length': 0 });
          res.end();
        }
        return;
      case '/version':
        if (want('GET')) sendJson(res, 200, { version: VLLM_VERSION });
        return;
      case '/metrics':
        if (want('GET')) {
          const text = renderMetrics(model, {
            modelName,
            createdUnix,
            cacheInfo,
            loraEnabled,
            loraUpdatedUnix: Date.now() / 1000,
          });
          res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) });
          res.end(text);
        }
        return;
      case '/v1/load_lora_adapter':
        if (!allowRuntimeLora) break;
        if (want('POST')) await loadLora(req, res);
        return;
      case '/v1/unload_lora_adapter':
        if (!allowRuntimeLora) break;
        if (want('POST')) await unloadLora(req, res);
        return;
      case '/sim/v1/probe':
        if (want('POST')) await probe(req, res);
        return;
      case '/sim/v1/state':
        if (want('GET')) sendJson(res, 200, state());
        return;
      case '/sim/v1/fault':
        if (method === 'GET') sendJson(res, 200, faults);
        else if (want('POST')) {
          const body = parseJson(await readBody(req, bodyLimit));
          try {
            sendJson(res, 200, setFaults(body));
          } catch (err) {
            if (err instanceof FaultSyntaxError) throw new WarmpathError('invalid_request', err.message);
            throw err;
          }
        }
        return;
      case '/reset_prefix_cache':
      case '/sim/v1/reset_prefix_cache':
        if (want('POST')) {
          const dropped = model.resetPrefixCache();
          if (path === '/reset_prefix_cache') {
            res.writeHead(200, { 'content-length': 0 });
            res.end();
          } else sendJson(res, 200, { dropped });
        }
        return;
    }
    throw new WarmpathError('not_found', `No route ${method} ${path}.`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await route(req, res);
    } catch (err) {
      if (res.destroyed) return;
      if (err instanceof WarmpathError) {
        sendError(res, err.code, err.message, { param: err.param, ...(err.code === 'body_too_large' ? { headers: { connection: 'close' } } : {}) });
      } else {
        const code: ErrorCode = 'internal_error';
        sendError(res, code, (err as Error).message);
      }
    }
  }

  // ---- faults -----------------------------------------------------------------

  function setFaults(update: unknown): FaultState {
    faults = applyFaultJson(faults, update);
    applyFaults();
    return faults;
  }

  function applyFaults(): void {
    model.slowFactor = faults.slow;
    if (crashTimer !== undefined) clearTimeout(crashTimer);
    crashTimer = undefined;
    if (faults.crashAfterMs !== null) crashTimer = setTimeout(crash, faults.crashAfterMs / speed);
    if (hangTimer !== undefined) clearTimeout(hangTimer);
    hangTimer = undefined;
    if (faults.hangAfterMs !== null && !faults.hang)
      hangTimer = setTimeout(() => {
        faults = { ...faults, hang: true, hangAfterMs: null };
        applyFaults();
      }, faults.hangAfterMs / speed);
    if (faults.hang) driver.pause();
    else if (driver.isPaused) {
      driver.resume();
      for (const h of held.splice(0)) h();
    }
  }

  function crash(): void {
    if (crashed) return;
    crashed = true;
    if (options.onCrash !== undefined) {
      options.onCrash();
      return;
    }
    driver.stop();
    server.close();
    server.closeAllConnections();
  }

  // ---- listen -------------------------------------------------------------------

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => void handle(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  applyFaults();
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;

  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    model,
    modelName,
    faults: () => faults,
    setFaults,
    close: async () => {
      if (closed) return;
      closed = true;
      driver.stop();
      if (crashTimer !== undefined) clearTimeout(crashTimer);
      if (hangTimer !== undefined) clearTimeout(hangTimer);
      for (const f of inflight.values()) f.res.destroy();
      inflight.clear();
      held.length = 0;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function profileByName(name: string): EngineProfile {
  if (!isProfileName(name)) throw new RangeError(`unknown profile "${name}" (known: ${Object.keys(PROFILES).join(', ')})`);
  return PROFILES[name];
}
