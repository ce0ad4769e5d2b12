/**
 * Fault injection: what can go wrong with a replica, settable at start
 * (`--fault key=value`, repeatable or comma-joined) and at runtime
 * (`POST /sim/v1/fault` with a JSON object).
 *
 *   crash                  exit now (CLI: process exits with code 1)
 *   crash-after=30s        exit after that much simulated time
 *   hang | hang-after=10s  stop answering (inference, /health, /metrics); /sim/v1/* still answers
 *   slow=3                 every engine step takes 3× longer
 *   error-rate=0.2         that fraction of inference requests fail with 500 internal_error
 *   die-after-tokens=5     every response is cut (socket destroyed) after 5 generated tokens
 *   kv-fail=0.5            that fraction of KV transfers into this (decode) worker fail after the link latency
 *   kv-timeout=0.5         that fraction of KV transfers time out (the worker waits its KV timeout first)
 *   kv-overstate | kv-overstate=2   /metrics announces that many times the real KV (num_gpu_blocks; usage
 *                          scaled down to match): the agent publishes it, routers over-predict hits
 *                          (docs/OPERATIONS.md, "Receipts")
 *
 * A failed or timed-out transfer is recomputed locally or fails the request,
 * as --kv-load-failure-policy says (disagg.ts).
 * Durations: a number with unit ms, s or m (bare numbers are seconds).
 * JSON keys: crash, crashAfterMs, hang, hangAfterMs, slow, errorRate, dieAfterTokens, kvFail, kvTimeout, kvOverstate
 * (null clears), clear (true resets everything first), spec ("slow=2,error-rate=0.1").
 */

export interface FaultState {
  /** Simulated ms from now until the crash; 0 = now. */
  crashAfterMs: number | null;
  hang: boolean;
  hangAfterMs: number | null;
  slow: number;
  errorRate: number;
  dieAfterTokens: number | null;
  /** Fraction of incoming KV transfers that fail. */
  kvFail: number;
  /** Fraction of incoming KV transfers that time out. */
  kvTimeout: number;
  /** /metrics announces this many times the real KV capacity (1 = the truth). */
  kvOverstate: number;
}

export function noFaults(): FaultState {
  return {
    crashAfterMs: null,
    hang: false,
    hangAfterMs: null,
    slow: 1,
    errorRate: 0,
    dieAfterTokens: null,
    kvFail: 0,
    kvTimeout: 0,
    kvOverstate: 1,
  };
}

export class FaultSyntaxError extends Error {
  readonly code = 'config_invalid';
  constructor(message: string) {
    super(message);
    this.name = 'FaultSyntaxError';
  }
}

export const FAULT_HELP = `faults (--fault, repeatable or comma-joined; runtime: POST /sim/v1/fault):
  crash | crash-after=DUR     exit the process (now / after DUR of simulated time)
  hang  | hang-after=DUR      stop answering every route except /sim/v1/*
  slow=F                      every engine step takes F times longer
  error-rate=P                fraction P of inference requests answer 500
  die-after-tokens=N          cut every response's connection after N tokens
  kv-fail=P | kv-timeout=P    fraction P of incoming KV transfers fail / time out
  kv-overstate[=F]            /metrics announces F (default 2) times the real KV capacity
  DUR: 500ms, 30s, 2m (a bare number is seconds)`;

export function parseDuration(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim());
  if (m === null) throw new FaultSyntaxError(`fault duration "${raw}" must look like 500ms, 30s or 2m`);
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return unit === 'ms' ? n : unit === 's' ? n * 1e3 : n * 60e3;
}

function num(key: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < min || n > max)
    throw new FaultSyntaxError(`fault ${key}=${raw}: must be a number in [${min}, ${max}]`);
  return n;
}

/** Applies `key=value` items (CLI syntax) onto a state. */
export function applyFaultSpec(state: FaultState, items: readonly string[]): FaultState {
  const out = { ...state };
  for (const item of items.flatMap((s) => s.split(','))) {
    const trimmed = item.trim();
    if (trimmed === '') continue;
    const eq = trimmed.indexOf('=');
    const key = eq < 0 ? trimmed : trimmed.slice(0, eq);
    const value = eq < 0 ? '' : trimmed.slice(eq + 1);
    switch (key) {
      case 'crash':
        out.crashAfterMs = 0;
        break;
      case 'crash-after':
        out.crashAfterMs = parseDuration(value);
        break;
      case 'hang':
        out.hang = value === '' ? true : value === 'true' || value === '1';
        break;
      case 'hang-after':
        out.hangAfterMs = parseDuration(value);
        break;
      case 'slow':
        out.slow = num(key, value, 0.01, 1e6);
        break;
      case 'error-rate':
        out.errorRate = num(key, value, 0, 1);
        break;
      case 'die-after-tokens':
        out.dieAfterTokens = Math.floor(num(key, value, 0, 1e9));
        break;
      case 'kv-fail':
        out.kvFail = num(key, value, 0, 1);
        break;
      case 'kv-timeout':
        out.kvTimeout = num(key, value, 0, 1);
        break;
      case 'kv-overstate':
        out.kvOverstate = value === '' ? 2 : num(key, value, 1, 64);
        break;
      default:
        throw new FaultSyntaxError(
          `unknown fault "${key}" (known: crash, crash-after, hang, hang-after, slow, error-rate, die-after-tokens, kv-fail, kv-timeout, kv-overstate)`,
        );
    }
  }
  return out;
}

/** Applies a runtime JSON update; throws FaultSyntaxError naming the bad key. */
export function applyFaultJson(state: FaultState, body: unknown): FaultState {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new FaultSyntaxError('fault body must be a JSON object');
  const b = body as Record<string, unknown>;
  let out = b.clear === true ? noFaults() : { ...state };
  const bad = (k: string, want: string): never => {
    throw new FaultSyntaxError(`fault field "${k}" must be ${want}`);
  };
  for (const [k, v] of Object.entries(b)) {
    switch (k) {
      case 'clear':
        if (typeof v !== 'boolean') bad(k, 'a boolean');
        break;
      case 'spec':
        if (typeof v !== 'string') bad(k, 'a string like "slow=2,error-rate=0.1"');
        out = applyFaultSpec(out, [v as string]);
        break;
      case 'crash':
        if (typeof v !== 'boolean') bad(k, 'a boolean');
        if (v === true) out.crashAfterMs = 0;
        break;
      case 'crashAfterMs':
      case 'hangAfterMs':
        if (v !== null && (typeof v !== 'number' || !(v >= 0))) bad(k, 'a number of ms >= 0 or null');
        out[k] = v as number | null;
        break;
      case 'hang':
        if (typeof v !== 'boolean') bad(k, 'a boolean');
        out.hang = v as boolean;
        if (v === false) out.hangAfterMs = null;
        break;
      case 'slow':
        if (typeof v !== 'number' || !(v > 0)) bad(k, 'a number > 0');
        out.slow = v as number;
        break;
      case 'errorRate':
      case 'kvFail':
      case 'kvTimeout':
        if (typeof v !== 'number' || !(v >= 0 && v <= 1)) bad(k, 'a number in [0, 1]');
        out[k] = v as number;
        break;
      case 'kvOverstate':
        if (typeof v !== 'number' || !(v >= 1 && v <= 64)) bad(k, 'a number in [1, 64]');
        out.kvOverstate = v as number;
        break;
      case 'dieAfterTokens':
        if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) bad(k, 'an integer >= 0 or null');
        out.dieAfterTokens = v as number | null;
        break;
      default:
        throw new FaultSyntaxError(
          `unknown fault field "${k}" (known: clear, spec, crash, crashAfterMs, hang, hangAfterMs, slow, errorRate, dieAfterTokens, kvFail, kvTimeout, kvOverstate)`,
        );
    }
  }
  return out;
}
