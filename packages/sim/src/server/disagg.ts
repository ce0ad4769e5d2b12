/**
 * Prefill/decode disaggregation in the engines' own dialects: what a request
 * asks this worker to do, given its role.
 *
 * vLLM (NixlConnector, as its toy proxy drives it):
 *  - to the prefill worker: `kv_transfer_params: {do_remote_decode: true, ...}`
 *    (and `max_tokens: 1`, set by the proxy); the answer carries
 *    `kv_transfer_params: {do_remote_prefill: true, do_remote_decode: false,
 *    remote_engine_id, remote_request_id, remote_block_ids, remote_host,
 *    remote_port, tp_size}`;
 *  - to the decode worker: the same request with those params; it pulls the
 *    KV from remote_host:remote_port instead of prefilling.
 * SGLang: the same request to both workers with `bootstrap_host`,
 * `bootstrap_port`, `bootstrap_room`; the prefill worker runs the prompt and
 * one token, the decode worker waits for the KV of that room.
 *
 * A request with neither is served locally whatever the role (vLLM's workers
 * are kv_both-capable; SGLang's null mode ignores bootstrap fields). A worker
 * asked for the direction its role lacks answers 400 (a kv_consumer cannot
 * produce KV, a kv_producer cannot consume it).
 */
import { WarmpathError } from '@warmpath/shared/wire';

export const ROLES = ['both', 'prefill', 'decode'] as const;
export type Role = (typeof ROLES)[number];
export const KV_FAILURE_POLICIES = ['recompute', 'fail'] as const;
export type KvFailurePolicy = (typeof KV_FAILURE_POLICIES)[number];

/** Where a decode worker fetches the KV from: the prefill worker's side channel and the key it filed the KV under. */
export interface KvSource {
  readonly host: string;
  readonly port: number;
  readonly key: string;
  readonly protocol: 'vllm' | 'sglang';
}

/** What this worker does with a request. */
export type DisaggPlan =
  | { readonly kind: 'local' }
  /** Run the prompt, then file its KV under a key (vLLM: the sequence id; SGLang: the room). */
  | { readonly kind: 'produce'; readonly protocol: 'vllm' | 'sglang'; readonly room: string | undefined }
  | { readonly kind: 'consume'; readonly source: KvSource };

const invalid = (message: string, param: string): WarmpathError => new WarmpathError('invalid_request', message, param);

function field(o: Record<string, unknown>, key: string, type: 'string' | 'number', param: string): unknown {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== type || (type === 'number' && !Number.isInteger(v)))
    throw invalid(`${param}.${key} must be ${type === 'string' ? 'a string' : 'an integer'}`, param);
  return v;
}

/** The SGLang room key a prefill worker files its KV under. */
export const roomKey = (room: number | string): string => `room-${room}`;

/** Reads the request's disaggregation fields; throws 400 on malformed ones or on a direction the role lacks. */
export function planOf(body: Record<string, unknown>, role: Role): DisaggPlan {
  const p = body.kv_transfer_params;
  if (p !== undefined && p !== null) {
    if (typeof p !== 'object' || Array.isArray(p))
      throw invalid('kv_transfer_params must be an object', 'kv_transfer_params');
    return vllmPlan(p as Record<string, unknown>, role);
  }
  const room = body.bootstrap_room;
  if (room === undefined || room === null || role === 'both') return { kind: 'local' };
  if (typeof room !== 'number' || !Number.isInteger(room) || room < 0)
    throw invalid('bootstrap_room must be a non-negative integer', 'bootstrap_room');
  if (role === 'prefill') return { kind: 'produce', protocol: 'sglang', room: roomKey(room) };
  const host = field(body, 'bootstrap_host', 'string', 'body');
  const port = field(body, 'bootstrap_port', 'number', 'body');
  if (host === undefined || port === undefined)
    throw invalid('a decode worker needs bootstrap_host and bootstrap_port with bootstrap_room', 'bootstrap_host');
  return {
    kind: 'consume',
    source: { host: host as string, port: port as number, key: roomKey(room), protocol: 'sglang' },
  };
}

function vllmPlan(p: Record<string, unknown>, role: Role): DisaggPlan {
  if (p.do_remote_decode === true) {
    if (role === 'decode')
      throw invalid(
        'this worker is a KV consumer (--role decode); it cannot prefill for a remote decode',
        'kv_transfer_params',
      );
    return { kind: 'produce', protocol: 'vllm', room: undefined };
  }
  if (p.do_remote_prefill !== true) return { kind: 'local' };
  if (role === 'prefill')
    throw invalid('this worker is a KV producer (--role prefill); it cannot take remote KV', 'kv_transfer_params');
  const param = 'kv_transfer_params';
  const host = field(p, 'remote_host', 'string', param);
  const port = field(p, 'remote_port', 'number', param);
  const key = field(p, 'remote_request_id', 'string', param);
  // vLLM's consumer warns and serves locally when the params are incomplete.
  if (host === undefined || port === undefined || key === undefined) return { kind: 'local' };
  return {
    kind: 'consume',
    source: { host: host as string, port: port as number, key: key as string, protocol: 'vllm' },
  };
}

/** The kv_transfer_params a vLLM prefill worker answers with (NixlConnector's request_finished). */
export function producedParams(
  engineId: string,
  requestId: string,
  blockIds: readonly number[],
  host: string,
  port: number,
): Record<string, unknown> {
  return {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: blockIds,
    remote_engine_id: engineId,
    remote_request_id: requestId,
    remote_host: host,
    remote_port: port,
    tp_size: 1,
  };
}
