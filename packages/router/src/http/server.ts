/**
 * The router's HTTP surface: OpenAI endpoints (proxied), /v1/models (the
 * fleet's union), health, readiness, metrics and the fleet view. With API
 * keys configured, every route but /healthz and /readyz (the probes) needs
 * one: the admin data (metrics, agent URLs) as much as the inference API.
 * Every request is counted by the drain (drain.ts), which refuses new ones
 * once shutdown has closed the listener.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { groupOf, HEADERS, ROUTES, sendError } from '@warmpath/shared/wire';
import { bearerToken, sendJson } from '@warmpath/shared/runtime';
import { groupsJson } from '../fleet/served.ts';
import type { FleetView } from '../fleet/view.ts';
import type { RouterMetrics } from '../metrics.ts';
import { observe, type ObserveDeps } from './observe.ts';
import type { Drain } from './drain.ts';
import type { ProxyHandler } from './proxy.ts';
import type { Tenancy } from '../tenants/tenancy.ts';
import type { Tenant } from '../tenants/types.ts';

export interface ServerContext {
  id: string;
  view: FleetView;
  metrics: RouterMetrics;
  proxy: ProxyHandler;
  apiKeys: ReadonlySet<string> | undefined;
  /** With a tenants file: every route but the probes needs a tenant's key (or an apiKeys key), and the inference routes run as that tenant. */
  tenancy?: Tenancy;
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
    const guarded = (ctx.apiKeys !== undefined || ctx.tenancy !== undefined) && !OPEN_PATHS.has(path);
    const key = guarded ? bearerToken(req.headers.authorization) : undefined;
    const tenant: Tenant | undefined = ctx.tenancy?.byKey(key);
    if (guarded && tenant === undefined && !(key !== undefined && ctx.apiKeys?.has(key) === true)) {
      req.resume();
      ctx.metrics.responses.inc({ code: 'unauthorized' });
      return sendError(res, 'unauthorized', undefined, { headers: { 'www-authenticate': 'Bearer' } });
    }
    if (kind !== undefined) {
      if (req.method !== 'POST')
        return sendError(res, 'method_not_allowed', `Use POST ${path}.`, { headers: { allow: 'POST' } });
      ctx.proxy(req, res, kind, path, tenant).catch(() => {
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
          path === '/warmpath/v1/usage' ||
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
      case '/warmpath/v1/usage':
        if (ctx.tenancy === undefined) return sendError(res, 'not_found', 'No tenants file: no usage per tenant.');
        return sendJson(res, 200, usage(ctx.id, ctx.tenancy, ctx.view.now(), tenant?.name), {
          [HEADERS.router]: ctx.id,
          'cache-control': 'no-store',
        });
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

/** Usage per tenant and model, since start and over the last minute, as this router counted it; a tenant's key sees only its own. */
export function usage(id: string, tenancy: Tenancy, now: number, only?: string): Record<string, unknown> {
  const tenants = tenancy.usage.snapshot(now).filter((u) => only === undefined || u.tenant === only);
  return { router: id, windowSeconds: 60, tenants };
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
      role: r.state.role ?? 'both',
      ...(r.state.zone !== undefined ? { zone: r.state.zone } : {}),
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

/** The host a client on this machine reaches a listener on `host` at. */
export function reachableHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The --api-keys file: one key a line, blank lines and # comments skipped. */
export function readApiKeys(path: string): Set<string> {
  const keys = new Set(
    readFileSync(path, 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#')),
  );
  if (keys.size === 0) throw Object.assign(new Error(`API key file ${path} holds no keys`), { code: 'config_invalid' });
  return keys;
}
