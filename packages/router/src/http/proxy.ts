/**
 * The inference path: parse once → describe once → place → forward → stream
 * back, retrying another replica only while no byte has reached the client.
 *
 * Steps per request:
 *  1. read the body (limit), JSON.parse once, describeRequest once (model →
 *     (base, adapter) through the fleet view).
 *  2. place with the policy (pure); no replica: `saturated` waits in the
 *     bounded queue for a state update or a completion, else 429 with
 *     Retry-After; `no-replica` is 503.
 *  3. forward the raw body over the replica's keep-alive Pool. Connect
 *     failure, reset before headers, or the agent's 429/503: exclude that
 *     replica and place again (up to maxAttempts); connect failures also mark
 *     the replica suspect here.
 *  4. from the first byte on, stream through unbuffered; a mid-stream failure
 *     ends an SSE stream with an error event, a plain body by closing.
 *     A client disconnect aborts the upstream request.
 * Observability: metrics counters and diagnostics_channel
 * `warmpath:router:placement`; no logging on this path.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeRequest, HEADERS, parseJsonBody, sendError, sseErrorEvent, WarmpathError, type ErrorCode, type RequestInfo } from '@warmpath/shared/wire';
import { readBody, drained } from '@warmpath/shared/runtime';
import type { RequestKind } from '@warmpath/shared/wire';
import type { RouterConfig } from '../config.ts';
import type { FleetView, Replica } from '../fleet/view.ts';
import type { RouterMetrics } from '../metrics.ts';
import { affinityKey } from '../placement/eligible.ts';
import type { LocalState } from '../placement/local.ts';
import { notifyComplete, notifyDispatch, placeRequest } from '../placement/place.ts';
import type { Branch, Outcome, Placement, PlacementRequest, Policy } from '../placement/types.ts';
import { classify, copyHeaders, type Upstreams } from './upstream.ts';
import type { WaitQueue } from './queue.ts';

export const placementChannel = diagnostics_channel.channel('warmpath:router:placement');

export interface ProxyContext {
  id: string;
  config: RouterConfig;
  view: FleetView;
  local: LocalState;
  policy: Policy;
  metrics: RouterMetrics;
  upstreams: Upstreams;
  queue: WaitQueue;
}

type Attempt = { done: true } | { done: false; kind: 'connect' | 'reset' | 'rejected'; status?: number; reason?: string };

export function createProxy(ctx: ProxyContext): (req: IncomingMessage, res: ServerResponse, kind: RequestKind, path: string) => Promise<void> {
  const { config, view, local, policy, metrics } = ctx;
  const branchCounters = new Map<string, { inc(): void }>();
  const countBranch = (b: Branch): void => {
    let c = branchCounters.get(b);
    if (c === undefined) branchCounters.set(b, (c = metrics.branches.labels(policy.name, b)));
    c.inc();
  };
  const placeTimer = metrics.placementSeconds.labels(policy.name);
  const resolveModel = (n: string) => view.resolveModel(n);
  const fail = (res: ServerResponse, code: ErrorCode, message?: string, headers?: Record<string, string | number>): void => {
    metrics.responses.inc({ code });
    sendError(res, code, message, headers === undefined ? {} : { headers });
  };
  const retryAfter = { 'retry-after': String(config.retryAfterS), [HEADERS.router]: ctx.id };

  return async function proxy(req, res, kind, path) {
    let info: RequestInfo;
    let raw: Buffer;
    let body: Record<string, unknown>;
    try {
      raw = await readBody(req, config.maxBodyBytes);
      body = parseJsonBody(raw);
      const keyHeader = req.headers[HEADERS.key];
      info = describeRequest(body, kind, {
        chunkChars: config.chunkChars,
        maxChunks: config.maxChunks,
        charsPerToken: config.charsPerToken,
        defaultMaxTokens: config.defaultMaxTokens,
        resolveModel,
        keyHeader: typeof keyHeader === 'string' ? keyHeader : undefined,
      });
    } catch (err) {
      if (err instanceof WarmpathError) {
        metrics.responses.inc({ code: err.code });
        sendError(res, err.code, err.message, { param: err.param, headers: { [HEADERS.router]: ctx.id } });
      } else if (!res.headersSent) {
        res.destroy();
      }
      return;
    }
    if (!view.supports(info.model, info.adapter, kind)) return fail(res, 'unsupported_endpoint', `No replica serving "${info.requested}" offers ${path}.`);

    const ac = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) ac.abort();
    });
    const key = affinityKey(info, config.keyDepthChunks);
    let exclude: Set<string> | undefined;
    let attempt = 0;
    let queued = false;
    let deadline = 0;
    let last: Attempt | undefined;

    for (;;) {
      if (ac.signal.aborted) return;
      const preq: PlacementRequest = { info, endpoint: kind, key, body, exclude, now: Date.now() };
      const t0 = performance.now();
      const placement: Placement = placeRequest(policy, preq, view, local);
      placeTimer.observe((performance.now() - t0) / 1e3);
      if (placementChannel.hasSubscribers) placementChannel.publish({ router: ctx.id, request: preq, placement });
      const replica = placement.replica;
      if (replica === undefined) {
        if (placement.branch === 'saturated' || (last?.done === false && last.kind === 'rejected')) {
          // Wait for room: a state update or one of our own completions re-runs placement.
          if (!queued) {
            queued = true;
            deadline = Date.now() + config.queueTimeoutMs;
            countBranch('saturated');
          }
          const left = deadline - Date.now();
          if (left > 0 && (await ctx.queue.wait(left, ac.signal))) {
            exclude?.clear();
            continue;
          }
          if (ac.signal.aborted) return;
          return fail(res, 'fleet_saturated', undefined, retryAfter);
        }
        countBranch('no-replica');
        if (last?.done === false) return fail(res, 'upstream_error', `No replica could take the request (last: ${last.kind}${last.status ? ` ${last.status}` : ''}).`, retryAfter);
        return fail(res, 'no_replica', undefined, retryAfter);
      }
      const branch: Branch = attempt > 0 ? 'retry' : queued ? 'queued' : placement.branch;
      countBranch(branch);
      const work = placement.work ?? info.promptTokens + info.maxTokens;
      const ticket = local.dispatch(replica.id, work, preq.now);
      notifyDispatch(policy, preq, replica, local);
      let outcome: Outcome = { kind: 'error' };
      try {
        last = await forward(ctx, replica, path, raw, req, res, info, branch, attempt, ac.signal);
        outcome = last.done ? { kind: res.writableFinished ? 'ok' : 'aborted' } : last.kind === 'rejected' ? { kind: 'rejected', ...(last.status ? { status: last.status } : {}) } : { kind: 'connect' };
      } finally {
        local.complete(ticket);
        ctx.queue.wake();
        notifyComplete(policy, preq, replica, outcome);
      }
      if (last.done) return;
      metrics.upstreamErrors.inc({ kind: last.kind });
      if (last.kind === 'connect') local.markSuspect(replica.id, Date.now());
      attempt++;
      if (attempt >= config.maxAttempts) {
        if (last.kind === 'rejected') return fail(res, 'fleet_saturated', 'Every replica tried refused the request.', retryAfter);
        return fail(res, 'upstream_error', `Replicas tried: ${attempt}; last failure: ${last.kind}.`, retryAfter);
      }
      metrics.retries.inc();
      (exclude ??= new Set()).add(replica.id);
    }
  };
}

async function forward(
  ctx: ProxyContext,
  replica: Replica,
  path: string,
  raw: Buffer,
  req: IncomingMessage,
  res: ServerResponse,
  info: RequestInfo,
  branch: Branch,
  attempt: number,
  signal: AbortSignal,
): Promise<Attempt> {
  const url = replica.state.url;
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  const origin = slash < 0 ? url : url.slice(0, slash);
  const base = slash < 0 ? '' : url.slice(slash).replace(/\/+$/, '');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(raw.byteLength),
    accept: typeof req.headers.accept === 'string' ? req.headers.accept : info.stream ? 'text/event-stream' : 'application/json',
    [HEADERS.router]: ctx.id,
    [HEADERS.attempt]: String(attempt + 1),
  };
  if (info.routingKey !== undefined) headers[HEADERS.key] = info.routingKey;
  let up;
  try {
    up = await ctx.upstreams.pool(origin).request({ path: base + path, method: 'POST', headers, body: raw, signal });
  } catch (err) {
    const kind = classify(err);
    if (kind === 'aborted' || signal.aborted) return { done: true };
    if (kind === 'timeout') {
      ctx.metrics.upstreamErrors.inc({ kind: 'timeout' });
      sendError(res, 'upstream_timeout');
      return { done: true };
    }
    return { done: false, kind: kind === 'connect' ? 'connect' : 'reset' };
  }
  const status = up.statusCode;
  if (status === 429 || status === 503) {
    const reason = up.headers[HEADERS.rejectReason];
    up.body.dump().catch(() => {});
    return { done: false, kind: 'rejected', status, ...(typeof reason === 'string' ? { reason } : {}) };
  }
  const out = copyHeaders(up.headers as Record<string, string | string[] | undefined>, {});
  out[HEADERS.replica] = replica.id;
  out[HEADERS.route] = branch;
  out[HEADERS.router] = ctx.id;
  const ct = up.headers['content-type'];
  const sse = typeof ct === 'string' && ct.startsWith('text/event-stream');
  res.writeHead(status, out);
  if (sse) res.flushHeaders();
  try {
    for await (const chunk of up.body) {
      if (!res.write(chunk)) await drained(res);
      if (res.destroyed) break;
    }
    res.end();
  } catch (err) {
    if (signal.aborted || res.destroyed) {
      ctx.metrics.upstreamErrors.inc({ kind: 'aborted' });
    } else {
      ctx.metrics.upstreamErrors.inc({ kind: 'interrupted' });
      if (sse) res.end(sseErrorEvent('stream_interrupted'));
      else res.destroy(err as Error);
    }
  }
  return { done: true };
}
