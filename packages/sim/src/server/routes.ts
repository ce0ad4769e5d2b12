/**
 * The simulator's route table: vLLM's own routes (inference, models, health,
 * version, metrics, LoRA loading, prefix-cache reset) and the simulator's
 * control routes under /sim/v1/ (probe, state, faults, KV sharing's lookup
 * and peers). While a hang fault
 * holds, every route outside /sim/ is held until it clears. Errors become
 * OpenAI-shaped bodies with the registry's codes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from '@warmpath/shared/runtime';
import { WarmpathError, parseJsonBody, sendError } from '@warmpath/shared/wire';
import type { ErrorCode } from '@warmpath/shared/wire';
import type { SimContext } from './context.ts';
import { FaultSyntaxError } from './faults.ts';
import { inference, probe } from './inference.ts';
import { renderMetrics } from './metrics.ts';
import { decodeHashes } from './peer-kv.ts';

export const VLLM_VERSION = '0.11.0';

/** True if the request's method is `m`; otherwise sets `allow` and throws method_not_allowed. */
type Want = (m: string) => boolean;

export async function handle(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    await route(ctx, req, res);
  } catch (err) {
    if (res.destroyed) return;
    if (err instanceof WarmpathError) {
      sendError(res, err.code, err.message, {
        param: err.param,
        ...(err.code === 'body_too_large' ? { headers: { connection: 'close' } } : {}),
      });
    } else {
      const code: ErrorCode = 'internal_error';
      sendError(res, code, (err as Error).message);
    }
  }
}

async function route(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const method = req.method ?? 'GET';
  if (ctx.faults.state.hang && !path.startsWith('/sim/')) {
    ctx.faults.hold(() => void handle(ctx, req, res));
    return;
  }
  const want: Want = (m) => {
    if (method === m) return true;
    res.setHeader('allow', m);
    throw new WarmpathError('method_not_allowed', `${method} is not allowed on ${path}; use ${m}.`);
  };
  if (await engineRoute(ctx, req, res, path, want)) return;
  if (await controlRoute(ctx, req, res, path, method, want)) return;
  throw new WarmpathError('not_found', `No route ${method} ${path}.`);
}

/** vLLM's own routes; false if `path` is not one of them. */
async function engineRoute(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  want: Want,
): Promise<boolean> {
  switch (path) {
    case '/v1/chat/completions':
      if (want('POST')) await inference(ctx, req, res, 'chat');
      return true;
    case '/v1/completions':
      if (want('POST')) await inference(ctx, req, res, 'completion');
      return true;
    case '/v1/models':
      if (want('GET')) sendJson(res, 200, modelsList(ctx));
      return true;
    case '/health':
      if (want('GET')) {
        res.writeHead(200, { 'content-length': 0 });
        res.end();
      }
      return true;
    case '/version':
      if (want('GET')) sendJson(res, 200, { version: VLLM_VERSION });
      return true;
    case '/metrics':
      if (want('GET')) sendMetrics(ctx, res);
      return true;
    case '/v1/load_lora_adapter':
      if (!ctx.allowRuntimeLora) return false;
      if (want('POST')) await loadLora(ctx, req, res);
      return true;
    case '/v1/unload_lora_adapter':
      if (!ctx.allowRuntimeLora) return false;
      if (want('POST')) await unloadLora(ctx, req, res);
      return true;
    case '/reset_prefix_cache':
      if (want('POST')) {
        ctx.model.resetPrefixCache();
        res.writeHead(200, { 'content-length': 0 });
        res.end();
      }
      return true;
  }
  return false;
}

/** The simulator's control routes; false if `path` is not one of them. */
async function controlRoute(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  method: string,
  want: Want,
): Promise<boolean> {
  switch (path) {
    case '/sim/v1/probe':
      if (want('POST')) await probe(ctx, req, res);
      return true;
    case '/sim/v1/state':
      if (want('GET')) sendJson(res, 200, state(ctx));
      return true;
    case '/sim/v1/fault':
      if (method === 'GET') sendJson(res, 200, ctx.faults.state);
      else if (want('POST')) await setFaults(ctx, req, res);
      return true;
    case '/sim/v1/reset_prefix_cache':
      if (want('POST')) sendJson(res, 200, { dropped: ctx.model.resetPrefixCache() });
      return true;
    case '/sim/v1/held':
      if (want('POST')) await held(ctx, req, res);
      return true;
    case '/sim/v1/kv-peers':
      if (method === 'GET') sendJson(res, 200, { peers: ctx.peerKv.peers });
      else if (want('POST')) await setPeers(ctx, req, res);
      return true;
  }
  if (path.startsWith(KV_ROUTE)) {
    if (want('GET')) await sendKv(ctx, res, decodeURIComponent(path.slice(KV_ROUTE.length)), req.url ?? '');
    return true;
  }
  return false;
}

const KV_ROUTE = '/sim/v1/kv/';
/** Longest wall time a side-channel fetch may wait for its key. */
const MAX_KV_WAIT_MS = 600_000;

/** The KV side channel (kv-store.ts): the record filed under `key`, waiting up to wait_ms for it. */
async function sendKv(ctx: SimContext, res: ServerResponse, key: string, url: string): Promise<void> {
  const wait = Number(new URL(url, 'http://x').searchParams.get('wait_ms') ?? 0);
  const record = await ctx.disagg.store.take(
    key,
    Number.isFinite(wait) ? Math.min(Math.max(wait, 0), MAX_KV_WAIT_MS) : 0,
  );
  if (res.destroyed) return;
  if (record === undefined) throw new WarmpathError('not_found', `No KV filed under ${key}.`);
  sendJson(res, 200, record);
}

/** KV sharing's lookup (peer-kv.ts): the leading blocks of the posted chain hashes this engine holds in either tier. */
async function held(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const hashes = decodeHashes(parseJsonBody(await readBody(req, ctx.bodyLimit)).hashes);
  if (hashes === undefined)
    throw new WarmpathError('invalid_request', 'hashes must be a list of hex chain hashes', 'hashes');
  sendJson(res, 200, { blocks: ctx.model.heldBlocks(hashes, hashes.length) });
}

/** KV sharing on (the other simulators' URLs) or off (none). */
async function setPeers(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const peers = parseJsonBody(await readBody(req, ctx.bodyLimit)).peers;
  if (!Array.isArray(peers) || !peers.every((u) => typeof u === 'string' && /^https?:\/\/[^/]+/.test(u)))
    throw new WarmpathError('invalid_request', 'peers must be a list of http:// base URLs', 'peers');
  ctx.peerKv.peers = peers as string[];
  sendJson(res, 200, { peers: ctx.peerKv.peers });
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function modelsList(ctx: SimContext): Record<string, unknown> {
  const created = Math.floor(Date.now() / 1000);
  const { model, modelName } = ctx;
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
        id: `modelperm-${ctx.boot}`,
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
    data: [
      card(modelName, modelName, null),
      ...model.adapters.map((a) => card(a, ctx.loraPaths.get(a) ?? a, modelName)),
    ],
  };
}

function sendMetrics(ctx: SimContext, res: ServerResponse): void {
  const text = renderMetrics(ctx.model, {
    modelName: ctx.modelName,
    createdUnix: ctx.createdUnix,
    cacheInfo: ctx.cacheInfo,
    loraEnabled: ctx.loraEnabled,
    loraUpdatedUnix: Date.now() / 1000,
    kvOverstate: ctx.faults.state.kvOverstate,
  });
  res.writeHead(200, {
    'content-type': 'text/plain; version=0.0.4; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function loadLora(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const b = parseJsonBody(await readBody(req, ctx.bodyLimit));
  if (!ctx.loraEnabled)
    throw new WarmpathError(
      'invalid_request',
      'LoRA is not enabled on this server (start it with --enable-lora or --adapters).',
    );
  const name = b.lora_name;
  const path = b.lora_path;
  if (typeof name !== 'string' || name === '')
    throw new WarmpathError('invalid_request', 'lora_name must be a non-empty string', 'lora_name');
  if (typeof path !== 'string' || path === '')
    throw new WarmpathError('invalid_request', 'lora_path must be a non-empty string', 'lora_path');
  if (name === ctx.modelName || !ctx.model.registerAdapter(name))
    throw new WarmpathError('invalid_request', `The lora adapter '${name}' has already been loaded.`, 'lora_name');
  ctx.loraPaths.set(name, path);
  sendText(res, 200, `Success: LoRA adapter '${name}' added successfully.`);
}

async function unloadLora(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const b = parseJsonBody(await readBody(req, ctx.bodyLimit));
  const name = b.lora_name;
  if (typeof name !== 'string' || name === '')
    throw new WarmpathError('invalid_request', 'lora_name must be a non-empty string', 'lora_name');
  if (!ctx.model.unregisterAdapter(name))
    throw new WarmpathError('adapter_not_found', `The lora adapter '${name}' cannot be found.`, 'lora_name');
  ctx.loraPaths.delete(name);
  sendText(res, 200, `Success: LoRA adapter '${name}' removed successfully.`);
}

function state(ctx: SimContext): Record<string, unknown> {
  return {
    model: ctx.modelName,
    profile: ctx.profile.name,
    speed: ctx.speed,
    simTimeMs: ctx.driver.now(),
    hung: ctx.driver.isPaused,
    faults: ctx.faults.state,
    inflight: ctx.streams.size,
    held: ctx.faults.heldCount,
    maxModelLen: ctx.model.maxModelLen,
    blockSize: ctx.profile.blockSize,
    role: ctx.disagg.role,
    kv: {
      engineId: ctx.disagg.engineId,
      filed: ctx.disagg.store.size,
      heldRequests: ctx.model.heldCount,
      ...ctx.disagg.stats,
    },
    peerKv: { peers: ctx.peerKv.peers.length, ...ctx.peerKv.stats },
    engine: ctx.model.snapshot(),
  };
}

async function setFaults(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseJsonBody(await readBody(req, ctx.bodyLimit));
  try {
    sendJson(res, 200, ctx.faults.set(body));
  } catch (err) {
    if (err instanceof FaultSyntaxError) throw new WarmpathError('invalid_request', err.message);
    throw err;
  }
}
