/**
 * Graceful shutdown of the router's HTTP server.
 *
 * Steps of drain(): /readyz fails at once (load balancers stop sending) →
 * for shutdownDelayMs requests are still served (the balancers' own
 * deregistration takes a few seconds) → the listener closes and a request
 * arriving on a kept-alive connection gets 503 `draining` with
 * `connection: close` → each connection is closed as soon as its response
 * ends → once no request is in flight, or after shutdownTimeoutMs, every
 * connection left is cut and drain resolves.
 * Complexity: O(1) per request.
 * Trade-off: streams still running at the deadline are cut; the deadline
 * must stay inside the orchestrator's grace period (Kubernetes: 30 s).
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { HEADERS, sendError } from '@warmpath/shared/wire';

export interface DrainOptions {
  readonly shutdownDelayMs: number;
  readonly shutdownTimeoutMs: number;
  readonly retryAfterS: number;
}

export class Drain {
  readonly #server: Server;
  readonly #o: DrainOptions;
  readonly #id: string;
  #inflight = 0;
  #draining = false;
  #closed = false;
  #idle: (() => void) | undefined;

  constructor(server: Server, id: string, o: DrainOptions) {
    this.#server = server;
    this.#id = id;
    this.#o = o;
  }

  /** SIGTERM was received: readiness fails from now on. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Requests being answered. */
  get inflight(): number {
    return this.#inflight;
  }

  /** Count a request while it is answered; false (and answered 503) once the listener is closed. */
  admit(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.#closed) {
      req.resume();
      sendError(res, 'draining', 'This router is shutting down; retry on another.', {
        headers: { 'retry-after': this.#o.retryAfterS, connection: 'close', [HEADERS.router]: this.#id },
      });
      return false;
    }
    this.#inflight++;
    res.once('close', () => {
      this.#inflight--;
      // Its connection is idle now (after this tick): close it rather than keep it alive.
      if (this.#closed) setImmediate(() => this.#server.closeIdleConnections());
      if (this.#inflight === 0) this.#idle?.();
    });
    return true;
  }

  /** Fail readiness, serve on for the delay, stop accepting, let in-flight requests finish until the timeout. */
  async drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    await new Promise((resolve) => setTimeout(resolve, this.#o.shutdownDelayMs));
    this.#closed = true;
    const closed = once(this.#server, 'close');
    this.#server.close();
    this.#server.closeIdleConnections();
    if (this.#inflight > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#idle = resolve;
        timer = setTimeout(resolve, this.#o.shutdownTimeoutMs);
      });
      clearTimeout(timer);
    }
    this.#server.closeAllConnections();
    await closed;
  }
}
