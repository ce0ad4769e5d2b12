/**
 * Upstream connections: one undici keep-alive Pool per replica origin,
 * created on first use and closed when the replica is forgotten. Errors are
 * classified once here into the kinds the router acts on.
 */
import { Pool } from 'undici';
import { UPSTREAM_KEEP_ALIVE_MS } from '@warmpath/shared/runtime';
import type { FleetView } from '../fleet/view.ts';

export interface UpstreamOptions {
  connections: number;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

export class Upstreams {
  readonly #pools = new Map<string, Pool>();
  readonly #opts: UpstreamOptions;

  constructor(opts: UpstreamOptions) {
    this.#opts = opts;
  }

  pool(origin: string): Pool {
    let p = this.#pools.get(origin);
    if (p === undefined) {
      p = new Pool(origin, {
        connections: this.#opts.connections,
        connectTimeout: this.#opts.connectTimeoutMs,
        headersTimeout: this.#opts.headersTimeoutMs,
        bodyTimeout: this.#opts.bodyTimeoutMs,
        keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS,
        pipelining: 1,
      });
      this.#pools.set(origin, p);
    }
    return p;
  }

  /** Close pools whose origin no longer belongs to a known replica. */
  retain(origins: Set<string>): void {
    for (const [origin, p] of this.#pools) {
      if (origins.has(origin)) continue;
      this.#pools.delete(origin);
      p.close().catch(() => {});
    }
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => {})));
  }
}

export type FailureKind = 'connect' | 'timeout' | 'aborted' | 'error';

/** Did the request never reach the replica (safe to retry elsewhere)? */
export function classify(err: unknown): FailureKind {
  const e = err as { code?: string; name?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (e?.name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR') return 'aborted';
  if (
    code === 'ECONNREFUSED' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'ENOTFOUND' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === 'EAI_AGAIN'
  )
    return 'connect';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  return 'error';
}

/** Origins of every known replica: upstream pools of the others are closed. */
export function originsOf(view: FleetView): Set<string> {
  const origins = new Set<string>();
  for (const r of view.replicas.values()) {
    const u = r.state.url;
    const s = u.indexOf('/', u.indexOf('//') + 2);
    origins.add(s < 0 ? u : u.slice(0, s));
  }
  return origins;
}
