/**
 * Error registry: every error Warmpath answers with has a stable code, an HTTP
 * status, an OpenAI error `type`, and a row in docs/ERRORS.md (a test keeps the
 * two in sync). Callers match on `code`, never on message text.
 */

export const ERRORS = {
  invalid_json: { status: 400, type: 'invalid_request_error', message: 'Request body is not valid JSON.' },
  invalid_request: { status: 400, type: 'invalid_request_error', message: 'Request is invalid.' },
  model_required: { status: 400, type: 'invalid_request_error', message: 'The "model" field is required.' },
  model_not_found: {
    status: 404,
    type: 'invalid_request_error',
    message: 'The model does not exist or no replica serves it.',
  },
  body_too_large: {
    status: 413,
    type: 'invalid_request_error',
    message: 'Request body is larger than the configured limit.',
  },
  unauthorized: { status: 401, type: 'authentication_error', message: 'Missing or invalid API key.' },
  not_found: { status: 404, type: 'invalid_request_error', message: 'No such route.' },
  method_not_allowed: { status: 405, type: 'invalid_request_error', message: 'Method not allowed on this route.' },
  unsupported_endpoint: { status: 404, type: 'invalid_request_error', message: 'No replica serves this endpoint.' },
  no_replica: { status: 503, type: 'service_unavailable', message: 'No ready replica can serve this request.' },
  fleet_saturated: {
    status: 429,
    type: 'rate_limit_error',
    message: 'Every eligible replica is at capacity; retry after the indicated delay.',
  },
  rate_limit_exceeded: {
    status: 429,
    type: 'rate_limit_error',
    message: "The tenant's rate limit is reached; retry after the indicated delay.",
  },
  admission_rejected: {
    status: 429,
    type: 'rate_limit_error',
    message: 'This replica cannot take the request now (queue or KV headroom); try another replica.',
  },
  draining: {
    status: 503,
    type: 'service_unavailable',
    message: 'This replica is draining and accepts no new requests.',
  },
  engine_unavailable: {
    status: 503,
    type: 'service_unavailable',
    message: 'The inference engine behind this agent is unreachable.',
  },
  upstream_error: { status: 502, type: 'api_error', message: 'The upstream replica failed before answering.' },
  upstream_timeout: { status: 504, type: 'api_error', message: 'The upstream replica did not answer in time.' },
  stream_interrupted: {
    status: 502,
    type: 'api_error',
    message: 'The upstream replica failed in the middle of the stream.',
  },
  adapter_not_found: { status: 404, type: 'invalid_request_error', message: 'The LoRA adapter is not registered.' },
  internal_error: { status: 500, type: 'api_error', message: 'Internal error.' },
  context_length_exceeded: {
    status: 400,
    type: 'invalid_request_error',
    message: "The prompt plus max_tokens is larger than any replica's KV cache can hold.",
  },
} as const satisfies Record<string, { status: number; type: string; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: ErrorCode };
}

/** A thrown/returned error that knows how to answer over HTTP. */
export class WarmpathError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | null;
  constructor(code: ErrorCode, message?: string, param?: string | null) {
    super(message ?? ERRORS[code].message);
    this.name = 'WarmpathError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.param = param ?? null;
  }
  toJSON(): OpenAIErrorBody {
    return errorBody(this.code, this.message, this.param);
  }
}

export function errorBody(code: ErrorCode, message?: string, param?: string | null): OpenAIErrorBody {
  return { error: { message: message ?? ERRORS[code].message, type: ERRORS[code].type, param: param ?? null, code } };
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERRORS, value);
}

/** Minimal response surface shared by node:http ServerResponse and friends. */
interface ErrorSink {
  headersSent: boolean;
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  end(body?: string): unknown;
}

/**
 * Answers an OpenAI-shaped error. `headers` adds e.g. Retry-After. Safe to call
 * after headers were sent (then it only ends the response).
 */
export function sendError(
  res: ErrorSink,
  code: ErrorCode,
  message?: string,
  options: { param?: string | null; headers?: Record<string, string | number> } = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify(errorBody(code, message, options.param));
  res.writeHead(ERRORS[code].status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...options.headers,
  });
  res.end(body);
}

/** The SSE event a proxy writes when a stream fails after its first byte. */
export function sseErrorEvent(code: ErrorCode, message?: string): string {
  return `data: ${JSON.stringify(errorBody(code, message))}\n\n`;
}
