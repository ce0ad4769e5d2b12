/**
 * The client side of one attempt: when its response is committed, and the
 * SSE heartbeat that keeps an idle-timeout load balancer (often 60 s)
 * between the client and the router from cutting a silent stream.
 *
 * Steps: a streaming request arms one timer of `heartbeatMs` at dispatch →
 * every write re-arms it → when it fires, a response not yet committed is
 * committed as `200 text/event-stream` (the replica is still prefilling and
 * has not sent its headers; this ends the chance of a retry elsewhere, which
 * after that long would cost the client more than it saves), then the
 * comment `: keep-alive` is written, only at an event boundary so it never
 * splits an event.
 * Complexity: O(1) per write (a timer refresh and a look at the chunk's last
 * two bytes).
 * Trade-off: committing early means a replica's later error arrives as an SSE
 * error event rather than an HTTP status; only streams silent for a whole
 * heartbeat period pay it.
 */
import type { ServerResponse } from 'node:http';

const KEEP_ALIVE = ': keep-alive\n\n';
const LF = 0x0a;
const CR = 0x0d;

export class Downstream {
  readonly #res: ServerResponse;
  /** Headers a committed response carries whatever the replica sent (x-warmpath-*). */
  readonly #own: Record<string, string>;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #committed = false;
  /** Committed here, before the replica's headers: its status and headers are no longer ours to pass on. */
  #early = false;
  /** The last chunk written ended an SSE event (or nothing was written yet). */
  #boundary = true;
  #lastLf = true;

  /** `heartbeatMs` > 0 arms the heartbeat at once (streaming requests). */
  constructor(res: ServerResponse, own: Record<string, string>, heartbeatMs: number) {
    this.#res = res;
    this.#own = own;
    if (heartbeatMs > 0) {
      this.#timer = setTimeout(() => this.#beat(), heartbeatMs);
      this.#timer.unref();
    }
  }

  /** Was the response committed (status and headers sent)? */
  get committed(): boolean {
    return this.#committed;
  }

  /** Committed by the heartbeat before the replica answered. */
  get early(): boolean {
    return this.#early;
  }

  /** Commit with the replica's status and headers (plus ours); SSE headers are flushed at once. */
  commit(status: number, headers: Record<string, string | string[]>, sse: boolean): void {
    this.#committed = true;
    this.#res.writeHead(status, { ...headers, ...this.#own });
    if (sse) this.#res.flushHeaders();
    else this.stop(); // a plain body gets no comments
  }

  /** Relay one chunk; false when the client's buffer is full (await drained). */
  write(chunk: Buffer): boolean {
    this.#timer?.refresh();
    const n = chunk.length;
    if (n > 0) {
      // An event ends with a blank line: "\n\n" or "\r\n\r\n", possibly split across chunks.
      const endsLf = chunk[n - 1] === LF;
      const before =
        n >= 2
          ? chunk[n - 2] === LF || (chunk[n - 2] === CR && (n >= 3 ? chunk[n - 3] === LF : this.#lastLf))
          : this.#lastLf;
      this.#boundary = endsLf && before;
      this.#lastLf = endsLf;
    }
    return this.#res.write(chunk);
  }

  end(tail?: string): void {
    this.stop();
    if (tail === undefined) this.#res.end();
    else this.#res.end(tail);
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #beat(): void {
    const res = this.#res;
    if (res.destroyed || res.writableEnded) return this.stop();
    if (!this.#committed) {
      this.#committed = true;
      this.#early = true;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        ...this.#own,
      });
    }
    if (this.#boundary) res.write(KEEP_ALIVE);
    this.#timer?.refresh();
  }
}
