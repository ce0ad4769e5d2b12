/**
 * One HTTP request to an upstream over undici's dispatch API: the response
 * head as a promise, and the body as an async iterable of chunks.
 *
 * undici's `request()` wraps every response body in a Readable stream; on a
 * proxy's hot path that stream (its state, events and async iterator) costs
 * more CPU than the rest of undici's work for a small answer. The body here
 * is a plain queue with the same contract the proxies rely on: chunks in
 * order, an error thrown where a stream would throw it, `break` out of a
 * `for await` aborting the request, and back-pressure (the connection is
 * paused while more than BODY_BUFFER_MAX bytes wait unread).
 *
 * Errors are undici's own (connect, timeouts from the dispatcher's options),
 * or the signal's reason when it aborts, so callers classify them as they
 * classified `request()`'s.
 * Complexity: O(1) per chunk.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** Unread bytes past which the connection is paused until the reader catches up (undici's streams pause at 64 KiB too). */
export const BODY_BUFFER_MAX = 64 * 1024;

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
}

export interface UpstreamRequest {
  path: string;
  method: string;
  headers?: Record<string, string | string[]>;
  body?: Buffer | string;
  /** An origin for dispatchers that serve several (an Agent); a Pool has its own. */
  origin?: string;
  /** Per-request overrides of the dispatcher's timeouts (ms). */
  headersTimeout?: number;
  bodyTimeout?: number;
}

/** Sends `opts` on `dispatcher`; resolves at the response head, rejects if none comes. */
export function callUpstream(
  dispatcher: Dispatcher,
  opts: UpstreamRequest,
  signal?: AbortSignal,
): Promise<UpstreamResponse> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    dispatcher.dispatch(opts as Dispatcher.DispatchOptions, new Call(resolve, reject, signal));
  });
}

/** The response body: iterate it once, or dump it. */
export class UpstreamBody implements AsyncIterable<Buffer> {
  readonly #call: Call;

  constructor(call: Call) {
    this.#call = call;
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    const call = this.#call;
    return {
      next: () => call.next(),
      return: () => {
        call.abandon();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  /** Stops reading: aborts the request unless its body has already ended. */
  destroy(): void {
    this.#call.abandon();
  }

  /** Discards the body: resolves once it has been read to its end (or failed). */
  dump(): Promise<void> {
    return this.#call.dump();
  }

  /** The whole body as text, read until it passes `max` characters (then the request is aborted). */
  async text(max = Infinity): Promise<string> {
    let text = '';
    for await (const chunk of this) {
      text += chunk.toString();
      if (text.length > max) break;
    }
    return text;
  }
}

/** The error a request ends with when its reader stops early (an abort, as undici names one). */
const abandoned = (): Error =>
  Object.assign(new Error('the response body was abandoned by its reader'), {
    code: 'UND_ERR_ABORTED',
    name: 'AbortError',
  });

class Call implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  #resolve: ((r: UpstreamResponse) => void) | undefined;
  #reject: ((e: unknown) => void) | undefined;
  readonly #signal: AbortSignal | undefined;
  #chunks: Buffer[] = [];
  #head = 0;
  #buffered = 0;
  #ended = false;
  #error: unknown;
  #discard = false;
  /** A reader waiting for the next chunk, the end or an error. */
  #wake: (() => void) | undefined;

  constructor(resolve: (r: UpstreamResponse) => void, reject: (e: unknown) => void, signal: AbortSignal | undefined) {
    this.#resolve = resolve;
    this.#reject = reject;
    this.#signal = signal;
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  readonly #onAbort = (): void => {
    this.#controller?.abort(this.#signal!.reason as Error);
  };

  #settled(): void {
    this.#signal?.removeEventListener('abort', this.#onAbort);
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal?.aborted) controller.abort(this.#signal.reason as Error);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // An informational answer (100 Continue, 103 Early Hints): the final one follows.
    if (statusCode < 200) return;
    const resolve = this.#resolve;
    this.#resolve = this.#reject = undefined;
    resolve?.({ statusCode, headers, body: new UpstreamBody(this) });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#discard) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    if (this.#buffered > BODY_BUFFER_MAX) controller.pause();
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.#settled();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const reject = this.#reject;
    this.#resolve = this.#reject = undefined;
    if (reject !== undefined) reject(err);
    else this.#error ??= err;
    this.#settled();
  }

  /** The next chunk, or the end; throws the request's error after the chunks that came before it. */
  next(): Promise<IteratorResult<Buffer>> {
    if (this.#head < this.#chunks.length) {
      const chunk = this.#chunks[this.#head]!;
      this.#chunks[this.#head++] = undefined as unknown as Buffer;
      if (this.#head === this.#chunks.length) {
        this.#chunks = [];
        this.#head = 0;
      }
      this.#buffered -= chunk.length;
      if (this.#controller?.paused && this.#buffered <= BODY_BUFFER_MAX / 2) this.#controller.resume();
      return Promise.resolve({ done: false, value: chunk });
    }
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise<void>((wake) => {
      this.#wake = wake;
    }).then(() => this.next());
  }

  /** The reader stopped before the end: abort the request (its connection is not reused mid-body). */
  abandon(): void {
    this.#chunks = [];
    this.#head = 0;
    this.#buffered = 0;
    if (this.#ended || this.#error !== undefined) return;
    const err = abandoned();
    this.#error = err;
    this.#controller?.abort(err);
  }

  dump(): Promise<void> {
    this.#discard = true;
    this.#chunks = [];
    this.#head = 0;
    this.#buffered = 0;
    if (this.#controller?.paused) this.#controller.resume();
    if (this.#ended || this.#error !== undefined) return Promise.resolve();
    return new Promise<void>((wake) => {
      this.#wake = wake;
    });
  }
}
