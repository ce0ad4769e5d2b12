/**
 * Admin API (separate port): digest snapshot for routers that missed deltas,
 * JSON state, liveness, readiness, Prometheus metrics. With the routers'
 * shared token configured, everything but /healthz and /readyz (the probes)
 * needs it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { encodeSnapshot, sendError, SNAPSHOT_CONTENT_TYPE } from '@warmpath/shared/wire';
import { bearerToken, secretMatches, sendJson } from '@warmpath/shared/runtime';
import type { AgentCore } from './core.ts';

export interface AdminDeps {
  core: AgentCore;
  boot: string;
  /** Extra state for /warmpath/v1/state (engine, gossip). */
  extra: () => Record<string, unknown>;
  /** The routers' shared token; undefined = no auth. */
  token?: string | undefined;
}

/** Routes open even with a token: the liveness and readiness probes, which reveal nothing. */
const OPEN_PATHS: ReadonlySet<string | undefined> = new Set(['/healthz', '/readyz']);

export function createAdminHandler(deps: AdminDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { ledger, publisher } = deps.core;
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (
      deps.token !== undefined &&
      !OPEN_PATHS.has(path) &&
      !secretMatches(bearerToken(req.headers.authorization), deps.token)
    ) {
      req.resume();
      return sendError(res, 'unauthorized', undefined, { headers: { 'www-authenticate': 'Bearer' } });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendError(res, 'method_not_allowed');
    switch (path) {
      case '/warmpath/v1/digest': {
        const body = encodeSnapshot(publisher.snapshot());
        res.writeHead(200, {
          'content-type': SNAPSHOT_CONTENT_TYPE,
          'content-length': body.byteLength,
          'x-warmpath-seq': publisher.seq,
        });
        res.end(body);
        return;
      }
      case '/warmpath/v1/state': {
        const last = publisher.last;
        sendJson(res, 200, {
          replica: deps.core.replica,
          boot: deps.boot,
          seq: publisher.seq,
          status: ledger.status,
          models: ledger.models,
          adapters: ledger.adapters,
          endpoints: ledger.endpoints(),
          capacity: ledger.capacity(),
          load: ledger.load(),
          engine: ledger.snapshot ?? null,
          engineUp: ledger.engineUp,
          cache: {
            size: ledger.cache.size,
            capacity: ledger.cache.capacity,
            nominalCapacity: ledger.cache.nominalCapacity,
            ...ledger.cache.stats,
          },
          lastPublished:
            last === undefined
              ? null
              : { seq: last.seq, sentAt: last.sentAt, status: last.status, digestSize: last.digest.size },
          gossip: { bytes: publisher.bytes, messages: publisher.messages },
          ...deps.extra(),
        });
        return;
      }
      case '/healthz':
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        return;
      case '/readyz': {
        const ready = ledger.status === 'ready';
        res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ready' : ledger.status);
        return;
      }
      case '/metrics':
        ledger.metrics.registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': ledger.metrics.registry.contentType }).end(text);
          },
          (err: unknown) => sendError(res, 'internal_error', (err as Error).message),
        );
        return;
      default:
        sendError(res, 'not_found');
    }
  };
}
