/**
 * The inference path's HTTP end: read the body (bounded), parse it once,
 * describe it once (model → base/adapter through the fleet view), check that
 * some replica offers the endpoint, then hand the request to the router
 * core, which places, retries and queues it and forwards each attempt through
 * `send` (forward.ts). A client that leaves cancels the request: it leaves
 * the queue, and an attempt in flight is aborted.
 * Observability: metrics counters and diagnostics_channel
 * `warmpath:router:placement` (in the core); the access log and request
 * metrics are observe.ts's, fed by one note per step.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  HEADERS,
  parseJsonBody,
  sendError,
  WarmpathError,
  type ErrorCode,
  type RequestInfo,
  type RequestKind,
} from '@warmpath/shared/wire';
import { readBody } from '@warmpath/shared/runtime';
import type { RouterCore } from '../core/router-core.ts';
import type { RouteError } from '../core/types.ts';
import type { ReplicaView } from '../fleet/view.ts';
import type { RouterMetrics } from '../metrics.ts';
import type { Exchange } from './exchange.ts';
import { noteError, noteRequest } from './observe.ts';
import { bandFor } from '../tenants/tenancy.ts';
import type { Tenant } from '../tenants/types.ts';

/** `tenant`: whose key the request carried, with a tenants file (server.ts checked it). */
export type ProxyHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  kind: RequestKind,
  path: string,
  tenant?: Tenant,
) => Promise<void>;

/** The core's `answer` over HTTP: the error body, Retry-After when the fleet may have room later, and this router's id. */
export function createAnswer(
  id: string,
  retryAfterS: number,
  metrics: RouterMetrics,
): (ex: Exchange, e: RouteError) => void {
  return (ex, e) => {
    metrics.responses.inc({ code: e.code });
    noteError(ex.res, e.code);
    const headers: Record<string, string> = { ...e.headers, [HEADERS.router]: id };
    if (e.retryAfter) headers['retry-after'] = String(e.retryAfterS ?? retryAfterS);
    sendError(ex.res, e.code, e.message, { headers });
  };
}

/** The field a too-long prompt is in, per endpoint (OpenAI's `param`). */
const PROMPT_PARAM: Readonly<Record<RequestKind, string>> = {
  chat: 'messages',
  completion: 'prompt',
  embedding: 'input',
  responses: 'input',
};

/**
 * The most tokens one replica of a group can hold (its KV cache), or undefined
 * when some member does not publish its capacity: a request over it can never
 * run anywhere, so it gets a 400 rather than a retryable 429.
 */
export function largestKv(members: readonly ReplicaView[] | undefined): number | undefined {
  if (members === undefined || members.length === 0) return undefined;
  let max = 0;
  for (const r of members) {
    if (r.state.capacity.kvTokens <= 0) return undefined;
    if (r.state.capacity.kvTokens > max) max = r.state.capacity.kvTokens;
  }
  return max;
}

export function createProxy(core: RouterCore<Exchange>, metrics: RouterMetrics): ProxyHandler {
  const fail = (res: ServerResponse, code: ErrorCode, message: string | undefined, param: string | null): void => {
    metrics.responses.inc({ code });
    noteError(res, code);
    sendError(res, code, message, { param, headers: { [HEADERS.router]: core.id } });
  };
  // A model or endpoint this router has not heard of may only not have been heard of yet (a restart, a gossip outage): retryable.
  const notYet = (res: ServerResponse): void => {
    metrics.responses.inc({ code: 'no_replica' });
    noteError(res, 'no_replica');
    const message = 'This router has not heard from the whole fleet yet; retry shortly.';
    sendError(res, 'no_replica', message, {
      headers: { [HEADERS.router]: core.id, 'retry-after': core.config.retryAfterS },
    });
  };
  const settled = (): boolean => core.view.settled(core.view.now());

  return async function proxy(req, res, kind, path, tenant) {
    const t0 = performance.now();
    let raw: Buffer;
    let model: unknown;
    let body: Record<string, unknown>;
    let info: RequestInfo;
    try {
      raw = await readBody(req, core.config.maxBodyBytes);
      body = parseJsonBody(raw);
      model = body.model;
      const header = (name: string): string | undefined => {
        const v = req.headers[name];
        return typeof v === 'string' ? v : undefined;
      };
      info = core.describe(body, kind, { key: header(HEADERS.key), session: header(HEADERS.session) });
      noteRequest(res, info, body);
    } catch (err) {
      const notFound = err instanceof WarmpathError && err.code === 'model_not_found';
      if (notFound && !settled()) notYet(res);
      // A router serving some model groups says so, and where to go instead.
      else if (notFound && !core.view.served.all)
        fail(res, err.code, core.view.served.notServed(String(model)), 'model');
      else if (err instanceof WarmpathError) fail(res, err.code, err.message, err.param);
      else if (!req.readableAborted) fail(res, 'internal_error', undefined, null);
      return;
    }
    if (!core.supports(info))
      return settled()
        ? fail(res, 'unsupported_endpoint', `No replica serving "${info.requested}" offers ${path}.`, null)
        : notYet(res);
    const room = largestKv(core.view.group(info.model, info.adapter)?.members);
    if (room !== undefined && info.promptTokens + info.maxTokens > room)
      return fail(
        res,
        'context_length_exceeded',
        `The prompt (about ${info.promptTokens} tokens) plus max_tokens (${info.maxTokens}) exceeds the largest KV cache serving "${info.requested}" (${room} tokens).`,
        PROMPT_PARAM[kind],
      );

    // One controller for "stop": the client left or the total deadline passed (then `expired` says which).
    // A plain timer cleared at the end, not AbortSignal.timeout: that one would live out the whole deadline.
    const ac = new AbortController();
    const expired = new AbortController();
    const timer = setTimeout(
      () => {
        expired.abort();
        ac.abort();
      },
      Math.max(1, core.config.totalTimeoutMs - (performance.now() - t0)),
    );
    const asked = req.headers[HEADERS.priority];
    const who = tenant && { tenant, band: bandFor(tenant, typeof asked === 'string' ? asked : undefined) };
    const job = core.route({ req, res, raw, path, signal: ac.signal, deadline: expired.signal }, info, body, who);
    res.on('close', () => {
      clearTimeout(timer);
      if (res.writableFinished) return;
      ac.abort();
      core.cancel(job);
    });
  };
}
