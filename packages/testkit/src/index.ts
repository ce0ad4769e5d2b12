/**
 * Test helpers shared by every package's tests (and only by tests).
 *
 * `waitFor(predicate, { timeoutMs, intervalMs, message })` re-evaluates a
 * condition until it holds and resolves with the predicate's truthy value.
 * Use it for state that changes without an event the test can await (a
 * counter in a fleet view, a replica's published load); where there is an
 * event — a server's 'listening', a process's 'exit', a gossip message — await
 * the event itself (`once` from node:events, a callback) instead.
 *
 * A predicate that throws or rejects counts as "not yet" (a server still
 * starting refuses connections); on timeout the error names what was awaited
 * and the last value or error seen, so a failure says why.
 * The timeout only bounds a failure: a condition that holds resolves at the
 * next check, never after a fixed wait.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { inspect } from 'node:util';

export interface WaitForOptions {
  /** Give up after this long, ms. */
  timeoutMs?: number;
  /** Re-check period, ms. */
  intervalMs?: number;
  /** What is awaited, in words, for the timeout error. */
  message?: string;
}

export const WAIT_FOR_DEFAULTS = {
  timeoutMs: 10_000, // 10 s: far above any healthy wait, well under the 30 s test timeout
  intervalMs: 20, // 20 ms
} as const;

/** The values `if (v)` accepts. */
export type Truthy<T> = Exclude<T, false | 0 | 0n | '' | null | undefined>;

/** Thrown by `waitFor` on timeout; `cause` is the predicate's last error, if its last check threw. */
export class WaitForTimeoutError extends Error {
  override readonly name = 'WaitForTimeoutError';
}

const show = (v: unknown): string => {
  const s = inspect(v, { depth: 3, breakLength: Infinity, maxArrayLength: 20, maxStringLength: 200 });
  return s.length > 500 ? `${s.slice(0, 500)}…` : s;
};

const EXPIRED: unique symbol = Symbol('expired');

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves with the first truthy value of `predicate()`, checked now and then
 * every `intervalMs`; rejects with a WaitForTimeoutError after `timeoutMs`.
 * A check still pending at the deadline is not waited for.
 */
export async function waitFor<T>(
  predicate: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<Truthy<Awaited<T>>> {
  const timeoutMs = options.timeoutMs ?? WAIT_FOR_DEFAULTS.timeoutMs;
  const intervalMs = options.intervalMs ?? WAIT_FOR_DEFAULTS.intervalMs;
  const what = options.message ?? 'a condition';
  const deadline = performance.now() + timeoutMs;
  let last: { value: unknown } | { error: unknown } | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<typeof EXPIRED>((resolve) => (timer = setTimeout(resolve, timeoutMs, EXPIRED)));
  try {
    for (;;) {
      const check = (async () => predicate())().then(
        (value) => ((last = { value }), value),
        (error: unknown) => ((last = { error }), undefined),
      );
      const v = await Promise.race([check, expired]);
      if (v === EXPIRED) break;
      if (v) return v as Truthy<Awaited<T>>;
      const left = deadline - performance.now();
      if (left <= 0) break;
      await sleep(Math.min(intervalMs, left));
    }
  } finally {
    clearTimeout(timer);
  }
  const tail =
    last === undefined
      ? 'no check finished'
      : 'error' in last
        ? `last error: ${last.error instanceof Error ? last.error.message : show(last.error)}`
        : `last value: ${show(last.value)}`;
  throw new WaitForTimeoutError(
    `timed out after ${timeoutMs} ms waiting for ${what}; ${tail}`,
    last !== undefined && 'error' in last ? { cause: last.error } : undefined,
  );
}

/**
 * A clock for transport-free cores in tests: `now()` and `schedule(ms, fn) →
 * cancel` as the cores take them, in virtual time that moves only when the
 * test calls `advance(ms)`, running due timers in time order (ties in the
 * order they were scheduled).
 */
export function manualClock(start = 0) {
  let now = start;
  let seq = 0;
  const timers: Array<{ at: number; seq: number; fn: () => void; live: boolean }> = [];
  return {
    now: () => now,
    schedule(ms: number, fn: () => void): () => void {
      const t = { at: now + Math.max(0, ms), seq: seq++, fn, live: true };
      timers.push(t);
      return () => {
        t.live = false;
      };
    },
    advance(ms: number): void {
      const end = now + ms;
      for (;;) {
        timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
        const i = timers.findIndex((t) => t.live);
        if (i < 0 || timers[i]!.at > end) break;
        const [t] = timers.splice(i, 1);
        now = t!.at;
        t!.fn();
      }
      now = end;
    },
  };
}

/**
 * Spawns a process; `line` resolves with its first stdout line (the "ready"
 * line the warmpath commands print) and rejects, with its stderr, if it exits
 * first. The child is returned at once so the caller can always stop it.
 */
export function spawnUntilLine(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): { child: ChildProcess; line: Promise<string> } {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const line = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${[command, ...args].join(' ')} exited ${code}: ${err}`)));
  });
  return { child, line };
}

/** The absolute path of the executable `program` on PATH (as a shell finds it), or undefined. */
export function findProgram(program: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, program);
    try {
      accessSync(path, constants.X_OK);
      if (statSync(path).isFile()) return path;
    } catch {
      // Not here: the next directory.
    }
  }
  return undefined;
}

/**
 * The skip message of a test that needs `program`, from Debian's package
 * `debianPackage`: what is missing and how to install it.
 */
export function missingProgram(program: string, debianPackage: string): string {
  return `SKIPPED: ${program} is not on PATH; it comes with Debian's \`${debianPackage}\` package (apt-get install -y --no-install-recommends ${debianPackage}; .ci/run installs it)`;
}

/** What a flood stream sends in all, bytes (128 MiB: far more than any socket buffers hold). */
export const FLOOD_BYTES = 128 * 1024 * 1024;

/** A flood stream in progress (see `flood`). */
export interface Flood {
  /** Bytes written so far. */
  written(): number;
  /**
   * Resolves once one write has waited `forMs` straight for 'drain' (write()
   * returned false and the connection took nothing more): the reader is
   * holding the stream back. Rejects after `timeoutMs` (and once the whole
   * stream went out), so a reader that keeps taking bytes fails the wait.
   */
  heldBack(forMs?: number, timeoutMs?: number): Promise<void>;
}

/**
 * Answers `res` with an SSE stream of FLOOD_BYTES (16 KB chunk events), written
 * as fast as the connection takes it: back-pressure is respected, so
 * `written()` says how far a slow reader let it get and `heldBack()` that the
 * reader has stopped taking it.
 */
export function flood(res: import('node:http').ServerResponse): Flood {
  const event = Buffer.from(
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x'.repeat(16_000) } }] })}\n\n`,
  );
  let written = 0;
  /** When the write now waiting for 'drain' was refused; undefined while writing. */
  let refusedAt: number | undefined;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const pump = (): void => {
    refusedAt = undefined;
    while (written < FLOOD_BYTES && !res.destroyed) {
      written += event.length;
      if (!res.write(event)) {
        refusedAt = performance.now();
        return void res.once('drain', pump);
      }
    }
    if (!res.destroyed) res.end('data: [DONE]\n\n');
  };
  pump();
  return {
    written: () => written,
    heldBack: async (forMs = 500, timeoutMs = 15_000) => {
      await waitFor(() => refusedAt !== undefined && performance.now() - refusedAt >= forMs, {
        timeoutMs,
        intervalMs: 20,
        message: `a write of the flood to wait ${forMs} ms straight for 'drain' (the reader to hold the stream back; ${written} bytes written when the wait began)`,
      });
    },
  };
}

/**
 * Writes `bytes` (latin1) to a fresh TCP connection to 127.0.0.1:`port` and
 * resolves with everything the server sends until it closes the connection:
 * for requests no HTTP client would send (a malformed head, a bad
 * Content-Length). Rejects on a reset.
 */
export async function rawExchange(port: number, bytes: string): Promise<string> {
  const { connect } = await import('node:net');
  return new Promise<string>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(Buffer.from(bytes, 'latin1')));
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('end', () => resolve(got));
    s.on('error', reject);
  });
}

/**
 * The access-log line (`msg: 'request'`) of one request among captured JSON
 * log lines. A line is written once the response has closed, which can come
 * a few event-loop turns after the client has read it: looks again for up to
 * 100 turns, then fails naming the lines it saw.
 */
export async function accessLine<L extends Record<string, unknown>>(
  lines: readonly L[],
  requestId: string,
): Promise<L> {
  for (let i = 0; i < 100; i++) {
    const line = lines.find((l) => l.msg === 'request' && l.requestId === requestId);
    if (line !== undefined) return line;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`no access-log line for ${requestId}: ${JSON.stringify(lines)}`);
}
