/**
 * Open-loop HTTP load generator for OpenAI-compatible streaming endpoints.
 *
 * Steps: each planned request fires at its offset (Poisson or trace times
 * come from the workload) against its target router; the SSE stream is read
 * as it arrives: TTFT = first content event, inter-token latency = gaps
 * between later content events, e2e = [DONE]; usage (with cached_tokens)
 * comes from the final include_usage chunk.
 * Complexity: O(events) per request; parsing looks only at line starts.
 * Trade-off: client-side timing includes the router hop and loopback HTTP —
 * what a user sees — rather than engine-internal timings.
 */
import { parseRoute } from '@warmpath/router/route';
import { Agent, request } from 'undici';

export interface PlannedRequest {
  /** Send time, ms after the run starts. */
  at: number;
  path?: string;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Index into the targets (routers); default round-robins by index. */
  target?: number;
  /** Free-form label (phase of a scenario…). */
  tag?: string;
  /** The session (or client) this request belongs to: sent as the session header, and kept on one router under sticky L4. */
  session?: string;
}

export interface RequestResult {
  tag: string | undefined;
  target: number;
  ok: boolean;
  status: number;
  error: string | undefined;
  /** ms from send to first token. */
  ttftMs: number;
  /** ms from send to end of stream. */
  e2eMs: number;
  /** Inter-token gaps, ms. */
  itlMs: number[];
  promptTokens: number;
  cachedTokens: number;
  outputTokens: number;
  replica: string | undefined;
  route: string | undefined;
  /** In a disaggregated fleet: whether the request's KV was transferred (`transfer`) or its decode replica prefilled it (`local`); absent otherwise. */
  pd?: string;
  sentAt: number;
}

export interface LoadOptions {
  /** Per-request timeout, ms. */
  timeoutMs?: number;
  onResult?: (r: RequestResult, done: number, total: number) => void;
  /** Caps concurrent requests (closed-loop safety); default unlimited. */
  maxInFlight?: number;
  /** Picks the base URL per request instead of the targets (the oracle sends straight to a replica). */
  chooseTarget?: (p: PlannedRequest) => Promise<string>;
}

// Open loop: no connection cap, so a slow policy's backlog waits in the fleet (where routers and
// agents see it), never hidden in the client's connection pool.
const dispatcher = new Agent({
  connections: null,
  pipelining: 1,
  keepAliveTimeout: 30_000,
  headersTimeout: 0,
  bodyTimeout: 0,
});

export async function runOne(
  target: string,
  planned: PlannedRequest,
  targetIndex: number,
  timeoutMs = 300_000,
): Promise<RequestResult> {
  const body = { ...planned.body, stream: true, stream_options: { include_usage: true } };
  const start = performance.now();
  const result = pendingResult(planned, targetIndex, Date.now());
  try {
    const res = await request(`${target}${planned.path ?? '/v1/chat/completions'}`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', ...planned.headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    result.status = res.statusCode;
    const h = (k: string) => {
      const v = res.headers[k];
      return Array.isArray(v) ? v[0] : v;
    };
    result.replica = h('x-warmpath-replica');
    // The branch: x-warmpath-route's first part (docs/PLACEMENT.md, 'Reading the header').
    const route = h('x-warmpath-route');
    const parsed = route === undefined ? undefined : parseRoute(route);
    result.route = parsed?.branch;
    if (parsed?.pd !== undefined) result.pd = parsed.pd.mode;
    if (res.statusCode !== 200) {
      result.error = errorCode(res.statusCode, await res.body.text());
      result.e2eMs = performance.now() - start;
      return result;
    }
    const sawDone = await readStream(res.body, result, start);
    result.e2eMs = performance.now() - start;
    result.ok = sawDone && result.error === undefined;
    if (!sawDone && result.error === undefined) result.error = 'stream_truncated';
  } catch (err) {
    result.error = (err as { code?: string }).code ?? (err as Error).name ?? 'error';
    result.e2eMs = performance.now() - start;
  }
  return result;
}

/** An error answer's code: its body's error.code, else http_<status>. */
function errorCode(status: number, text: string): string {
  try {
    return (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? `http_${status}`;
  } catch {
    return `http_${status}`; // not JSON
  }
}

/**
 * Reads an SSE stream into `result`: the first token's time, the gaps between
 * tokens, the usage, an error event. True when the stream ended with [DONE].
 */
async function readStream(body: AsyncIterable<unknown>, result: RequestResult, start: number): Promise<boolean> {
  let last = 0;
  let buf = '';
  let sawDone = false;
  for await (const chunk of body) {
    buf += (chunk as Buffer).toString('utf8');
    let nl: number;
    while ((nl = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      if (!event.startsWith('data: ')) continue;
      const data = event.slice(6);
      if (data === '[DONE]') {
        sawDone = true;
        continue;
      }
      const now = performance.now();
      if (data.includes('"error"') && data.startsWith('{"error"')) {
        result.error = (JSON.parse(data) as { error: { code?: string } }).error.code ?? 'stream_error';
        continue;
      }
      if (data.includes('"usage":{')) {
        const parsed = JSON.parse(data) as {
          usage?: {
            prompt_tokens?: number;
            completion_tokens?: number;
            prompt_tokens_details?: { cached_tokens?: number };
          };
        };
        const u = parsed.usage;
        if (u) {
          result.promptTokens = u.prompt_tokens ?? 0;
          result.outputTokens = u.completion_tokens ?? 0;
          result.cachedTokens = u.prompt_tokens_details?.cached_tokens ?? 0;
        }
        if (data.includes('"choices":[]')) continue;
      }
      if (Number.isNaN(result.ttftMs)) result.ttftMs = now - start;
      else result.itlMs.push(now - last);
      last = now;
    }
  }
  return sawDone;
}

/** Runs a plan open-loop against the targets; resolves when every request has finished. */
export async function runLoad(
  plan: readonly PlannedRequest[],
  targets: readonly string[],
  opts: LoadOptions = {},
): Promise<RequestResult[]> {
  const sorted = [...plan].sort((a, b) => a.at - b.at);
  const results: RequestResult[] = [];
  const t0 = performance.now();
  let inFlight = 0;
  let done = 0;
  const waiters: Array<() => void> = [];
  const pending: Promise<void>[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const p = sorted[i]!;
    const delay = t0 + p.at - performance.now();
    if (delay > 1) await new Promise((r) => setTimeout(r, delay));
    if (opts.maxInFlight !== undefined)
      while (inFlight >= opts.maxInFlight) await new Promise<void>((r) => waiters.push(r));
    const ti = (p.target ?? i) % Math.max(1, targets.length);
    inFlight++;
    const target = opts.chooseTarget !== undefined ? opts.chooseTarget(p) : Promise.resolve(targets[ti]!);
    pending.push(
      target
        .then((t) => runOne(t, p, ti, opts.timeoutMs))
        .then((r) => {
          inFlight--;
          done++;
          results.push(r);
          opts.onResult?.(r, done, sorted.length);
          waiters.shift()?.();
        }),
    );
  }
  await Promise.all(pending);
  return results;
}

/** The last arrival's time in a plan, ms (0 when empty); a loop, as a spread overflows the stack on large plans. */
/** A request's result before anything came back: not ok, no tokens, no timings. */
export function pendingResult(planned: PlannedRequest, target: number, sentAt: number): RequestResult {
  return {
    tag: planned.tag,
    target,
    ok: false,
    status: 0,
    error: undefined,
    ttftMs: Number.NaN,
    e2eMs: Number.NaN,
    itlMs: [],
    promptTokens: 0,
    cachedTokens: 0,
    outputTokens: 0,
    replica: undefined,
    route: undefined,
    sentAt,
  };
}

export function lastArrivalMs(plan: readonly PlannedRequest[]): number {
  let last = 0;
  for (const p of plan) if (p.at > last) last = p.at;
  return last;
}

export function percentile(values: readonly number[] | Float64Array, p: number): number {
  return percentiles(values, [p])[0]!;
}

/** Several percentiles of the finite values, sorting them once (NaN each when there are none). */
export function percentiles(values: readonly number[] | Float64Array, ps: readonly number[]): number[] {
  // A typed array sorts numerically without a comparator call per step (a run's every inter-token gap: millions).
  const finite = (x: number): boolean => Number.isFinite(x);
  const v = (values instanceof Float64Array ? values.filter(finite) : Float64Array.from(values.filter(finite))).sort();
  return ps.map((p) =>
    v.length === 0 ? Number.NaN : v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))]!,
  );
}

export function mean(values: readonly number[]): number {
  const v = values.filter((x) => Number.isFinite(x));
  return v.length === 0 ? Number.NaN : v.reduce((s, x) => s + x, 0) / v.length;
}
