/**
 * The router's HTTP surface: OpenAI endpoints (proxied), /v1/models (the
 * fleet's union), health, readiness, metrics and the fleet view. With API
 * keys configured, every route but /healthz and /readyz (the probes) needs
 * one: the admin data (metrics, agent URLs) as much as the inference API.
 * Every request is counted by the drain (drain.ts), which refuses new ones
 * once shutdown has closed the listener.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { groupOf, HEADERS, ROUTES, sendError } from '@warmpath/shared/wire';
import { bearerToken, sendJson } from '@warmpath/shared/runtime';
import { groupsJson } from '../fleet/served.ts';
import type { FleetView } from '../fleet/view.ts';
import type { RouterMetrics } from '../metrics.ts';
import { observe, type ObserveDeps } from './observe.ts';
import type { Drain } from './drain.ts';
import type { ProxyHandler } from './proxy.ts';

export interface ServerContext {
  id: string;
  view: FleetView;
  metrics: RouterMetrics;
  proxy: ProxyHandler;
  apiKeys: ReadonlySet<string> | undefined;
  /** Not draining, and the view holds a ready replica's fresh state. */
  ready: () => boolean;
  /** The live status document (/warmpath/v1/status.json) and its page (/warmpath/v1/status). */
  status?: { json: () => Record<string, unknown>; page: () => string };
  /** Request ids, access log, request metrics (observe.ts). */
  observe: ObserveDeps;
  drain: Drain;
}

/** The status page loads nothing but its own JSON. */
const STATUS_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'",
  'cache-control': 'no-store',
} as const;

export function createHandler(ctx: ServerContext): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    observe(req, res, ctx.observe);
    if (!ctx.drain.admit(req, res)) return;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const kind = ROUTES[path];
    if (ctx.apiKeys !== undefined && !OPEN_PATHS.has(path) && !authorized(req, ctx.apiKeys)) {
      req.resume();
      ctx.metrics.responses.inc({ code: 'unauthorized' });
      return sendError(res, 'unauthorized', undefined, { headers: { 'www-authenticate': 'Bearer' } });
    }
    if (kind !== undefined) {
      if (req.method !== 'POST')
        return sendError(res, 'method_not_allowed', `Use POST ${path}.`, { headers: { allow: 'POST' } });
      ctx.proxy(req, res, kind, path).catch(() => {
        if (!res.headersSent) sendError(res, 'internal_error');
        else res.destroy();
      });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      req.resume();
      return sendError(
        res,
        path === '/v1/models' ||
          path === '/warmpath/v1/fleet' ||
          path === '/healthz' ||
          path === '/readyz' ||
          path === '/metrics'
          ? 'method_not_allowed'
          : 'not_found',
      );
    }
    switch (path) {
      case '/v1/models':
        return sendJson(res, 200, models(ctx.view), { [HEADERS.router]: ctx.id });
      case '/healthz':
        return sendJson(res, 200, { ok: true, router: ctx.id });
      case '/readyz': {
        const counts = ctx.view.statusCounts();
        return sendJson(res, ctx.ready() ? 200 : 503, { ready: ctx.ready(), router: ctx.id, replicas: counts });
      }
      case '/warmpath/v1/fleet':
        return sendJson(res, 200, fleet(ctx.view), { [HEADERS.router]: ctx.id });
      case '/warmpath/v1/status.json':
        if (ctx.status === undefined) return sendError(res, 'not_found', `No route ${path}.`);
        return sendJson(res, 200, ctx.status.json(), { [HEADERS.router]: ctx.id, 'cache-control': 'no-store' });
      case '/warmpath/v1/status':
        if (ctx.status === undefined) return sendError(res, 'not_found', `No route ${path}.`);
        res.writeHead(200, STATUS_PAGE_HEADERS);
        res.end(req.method === 'HEAD' ? undefined : ctx.status.page());
        return;
      case '/metrics':
        ctx.metrics.registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': ctx.metrics.registry.contentType });
            res.end(text);
          },
          () => sendError(res, 'internal_error'),
        );
        return;
      default:
        return sendError(res, 'not_found', `No route ${path}.`);
    }
  };
}

/** Routes open even with API keys: the liveness and readiness probes (readiness shows replica counts, no URLs). */
const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

function authorized(req: IncomingMessage, keys: ReadonlySet<string>): boolean {
  const key = bearerToken(req.headers.authorization);
  return key !== undefined && keys.has(key);
}

/** The router's fleet view as JSON: what it would route on, for operators, the demo and the status page. */
export function fleet(view: FleetView): {
  fleet: string;
  groups: ReturnType<typeof groupsJson>;
  replicas: Array<Record<string, unknown>>;
} {
  const now = view.now();
  const replicas = [...view.replicas.values()]
    .map((r) => ({
      id: r.id,
      status: r.state.status,
      fresh: view.fresh(r, now),
      ageMs: Math.round(now - r.receivedAt),
      chunkMismatch: r.chunkMismatch,
      url: r.state.url,
      engine: r.state.engine,
      models: r.state.models,
      group: groupOf(r.state) ?? null,
      adapters: r.state.adapters,
      hotAdapters: r.state.hotAdapters,
      capacity: r.state.capacity,
      load: r.state.load,
      digestSize: r.digestSize,
      boot: r.state.boot,
      seq: r.state.seq,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { fleet: view.fleet, groups: groupsJson(view.served, view.replicas.values()), replicas };
}

/** OpenAI's model list: base models, and adapters with `parent` (vLLM's shape). */
export function models(view: FleetView): { object: 'list'; data: Array<Record<string, unknown>> } {
  const data = view
    .models()
    .map(({ model, adapter }) =>
      adapter === ''
        ? { id: model, object: 'model', created: 0, owned_by: 'warmpath', root: model, parent: null }
        : { id: adapter, object: 'model', created: 0, owned_by: 'warmpath', root: adapter, parent: model },
    );
  data.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { object: 'list', data };
}
