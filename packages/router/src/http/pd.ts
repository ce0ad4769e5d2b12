/**
 * A disaggregated attempt over HTTP (docs/DISAGGREGATION.md): the prefill
 * leg in the engines' own dialect, then the decode leg through the usual
 * forward (forward.ts). The dialect is the prefill replica's engine kind.
 *
 * vLLM (its disaggregated proxy's protocol, NixlConnector): POST the request
 * to the prefill replica's agent with `kv_transfer_params: {do_remote_decode:
 * true, …}`, `max_tokens: 1` and `stream: false`; its answer's
 * kv_transfer_params go with the original request to the decode replica.
 * SGLang: the same request to both with bootstrap_host, bootstrap_port (the
 * prefill replica's published kvBootstrap) and a random bootstrap_room; the
 * prefill answer is discarded, the decode answer relayed.
 *
 * Failures before the decode leg answered: the prefill leg's connect failure,
 * reset, refusal or 5xx is reported with `leg: 'prefill'` (the core retries
 * on another prefill replica, within its budget); for SGLang the decode leg
 * is aborted first, unless its answer has already begun. A prefill answer
 * the router cannot use (another 4xx, no kv_transfer_params, no bootstrap
 * address) sends the original request to the decode replica, which prefills
 * it itself and answers the client as any replica would. A failed transfer
 * is the decode engine's to handle (recompute or fail, its
 * kv_load_failure_policy).
 * vLLM's decode leg refused by its agent after the prefill answered: the
 * refusal carries the transfer (the prefill replica and its
 * kv_transfer_params; the prefill engine holds those blocks until a decode
 * engine reads them), and a redecode (Dispatch.transfer, placement/pair.ts
 * step 5) sends the original request with them to another decode replica,
 * no prefill leg. SGLang's legs start together on one bootstrap room, so
 * its refused decode leg is placed again as a pair.
 * Complexity: one more upstream request per attempt and a re-encoded body.
 */
import { randomInt } from 'node:crypto';
import { HEADERS } from '@warmpath/shared/wire';
import { callUpstream, type UpstreamResponse } from '@warmpath/shared/runtime';
import type { Dispatch, SendResult } from '../core/types.ts';
import type { Replica } from '../fleet/view.ts';
import type { Transferred } from '../placement/types.ts';
import type { Exchange } from './exchange.ts';
import { classify, type Upstreams } from './upstream.ts';

/** A prefill answer is read up to this many characters (it is one token and the transfer params). */
const PREFILL_ANSWER_MAX = 1 << 20;
/** SGLang's rooms are random integers; below 2^48 they stay exact in JSON numbers. */
const ROOM_MAX = 2 ** 48 - 1;

/** How the transport sends one leg to a replica: the decode leg goes through forward.ts with this body. */
export type ForwardLeg = (d: Dispatch<Exchange>) => Promise<SendResult>;

export interface PairDeps {
  readonly id: string;
  readonly upstreams: Upstreams;
  readonly authorization: string | undefined;
}

/** vLLM's prefill request: the prompt only, one token, not streamed, asking for remote decode. */
export function vllmPrefillBody(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...body,
    kv_transfer_params: {
      do_remote_decode: true,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    },
    max_tokens: 1,
    stream: false,
  };
  if ('max_completion_tokens' in out) out.max_completion_tokens = 1;
  delete out.stream_options;
  return out;
}

/** SGLang's request to both legs: the client's, with the prefill replica's bootstrap address and the room. */
export function sglangBody(
  body: Readonly<Record<string, unknown>>,
  bootstrap: { host: string; port: number },
  room: number,
): Record<string, unknown> {
  return { ...body, bootstrap_host: bootstrap.host, bootstrap_port: bootstrap.port, bootstrap_room: room };
}

/** `host:port` (an IPv6 host in brackets) → its parts; undefined when malformed. */
export function parseBootstrap(s: string | undefined): { host: string; port: number } | undefined {
  if (s === undefined) return undefined;
  const colon = s.lastIndexOf(':');
  const port = Number(s.slice(colon + 1));
  const host = s.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return colon > 0 && Number.isInteger(port) && port > 0 && port < 65536 && host !== '' ? { host, port } : undefined;
}

/** The decode leg: the dispatch with another body (and signal). */
function withBody(d: Dispatch<Exchange>, body: Record<string, unknown>, signal?: AbortSignal): Dispatch<Exchange> {
  const raw = Buffer.from(JSON.stringify(body));
  return { ...d, ctx: { ...d.ctx, raw, ...(signal !== undefined ? { signal } : {}) } };
}

/** One request to a replica's agent, as forward.ts sends it, but not relayed. */
function post(deps: PairDeps, d: Dispatch<Exchange>, replica: Replica, body: Buffer, signal: AbortSignal) {
  const url = replica.state.url;
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  const origin = slash < 0 ? url : url.slice(0, slash);
  const base = slash < 0 ? '' : url.slice(slash).replace(/\/+$/, '');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(body.byteLength),
    accept: 'application/json',
    [HEADERS.router]: deps.id,
    [HEADERS.attempt]: String(d.attempt + 1),
  };
  if (d.info.routingKey !== undefined) headers[HEADERS.key] = d.info.routingKey;
  if (deps.authorization !== undefined) headers.authorization = deps.authorization;
  return callUpstream(deps.upstreams.pool(origin), { path: base + d.ctx.path, method: 'POST', headers, body }, signal);
}

/** The prefill leg's answer as the core reads it: a failure (with `leg`), or undefined when the decode leg may go. */
function prefillFailure(up: UpstreamResponse): SendResult | undefined {
  const status = up.statusCode;
  const reason = up.headers[HEADERS.rejectReason];
  if (status === 429 || status === 503 || (status === 400 && reason === 'too_large'))
    return { kind: 'rejected', status, ...(typeof reason === 'string' ? { reason } : {}), leg: 'prefill' };
  if (status >= 500) return { kind: 'failed', status, leg: 'prefill' };
  return undefined;
}

/** The prefill leg failed to answer: the client left, or the replica failed (connect, reset, timeout). */
function noAnswer(ex: Exchange, err: unknown): SendResult {
  const kind = classify(err);
  if (ex.deadline.aborted) return { kind: 'timeout' };
  if (kind === 'aborted' || ex.signal.aborted) return { kind: 'done', outcome: 'aborted' };
  return kind === 'connect' ? { kind: 'connect', leg: 'prefill' } : { kind: 'reset', leg: 'prefill' };
}

/** vLLM: the prefill leg, then the decode leg with its kv_transfer_params. */
async function vllmPair(deps: PairDeps, d: Dispatch<Exchange>, body: Record<string, unknown>, forward: ForwardLeg) {
  const ex = d.ctx;
  let params: unknown;
  try {
    const up = await post(deps, d, d.prefill!, Buffer.from(JSON.stringify(vllmPrefillBody(body))), ex.signal);
    const failure = prefillFailure(up);
    if (failure !== undefined) {
      up.body.dump().catch(() => {});
      d.prefillDone?.(false);
      return failure;
    }
    const text = await up.body.text(PREFILL_ANSWER_MAX);
    if (up.statusCode < 300) params = (JSON.parse(text) as { kv_transfer_params?: unknown }).kv_transfer_params;
  } catch (err) {
    if (!(err instanceof SyntaxError)) {
      d.prefillDone?.(false);
      return noAnswer(ex, err);
    }
  }
  const usable = params !== null && typeof params === 'object';
  d.prefillDone?.(usable);
  if (!usable) return forward(withBody(d, body));
  return decodeLeg(d, body, { prefill: d.prefill!, params }, forward);
}

/** vLLM's decode leg with a finished prefill's kv_transfer_params; its agent's refusal carries them on. */
async function decodeLeg(
  d: Dispatch<Exchange>,
  body: Record<string, unknown>,
  transfer: Transferred,
  forward: ForwardLeg,
): Promise<SendResult> {
  const r = await forward(withBody(d, { ...body, kv_transfer_params: transfer.params }));
  return r.kind === 'rejected' ? { ...r, transfer } : r;
}

/** A redecode (d.transfer set, no prefill leg): the decode leg alone, with the transfer's kv_transfer_params. */
export async function forwardDecode(d: Dispatch<Exchange>, forward: ForwardLeg): Promise<SendResult> {
  const t = d.transfer!;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(d.ctx.raw.toString()) as Record<string, unknown>;
  } catch {
    return forward(d);
  }
  return t.params === undefined ? forward(d) : decodeLeg(d, body, t, forward);
}

/** SGLang: both legs at once; a prefill failure before the decode leg answered aborts it and is reported. */
async function sglangPair(deps: PairDeps, d: Dispatch<Exchange>, body: Record<string, unknown>, forward: ForwardLeg) {
  const ex = d.ctx;
  const bootstrap = parseBootstrap(d.prefill!.state.kvBootstrap);
  if (bootstrap === undefined) {
    d.prefillDone?.(false);
    return forward(withBody(d, body));
  }
  const both = Buffer.from(JSON.stringify(sglangBody(body, bootstrap, randomInt(0, ROOM_MAX))));
  const abort = new AbortController();
  let failure: SendResult | undefined;
  const prefill = post(deps, d, d.prefill!, both, ex.signal).then(
    async (up) => {
      failure = prefillFailure(up);
      await up.body.dump().catch(() => {});
    },
    (err: unknown) => {
      const r = noAnswer(ex, err);
      if (r.kind !== 'done') failure = r;
    },
  );
  void prefill.then(() => {
    d.prefillDone?.(failure === undefined);
    if (failure !== undefined && !ex.res.headersSent) abort.abort(new Error('the prefill leg failed'));
  });
  const signal = AbortSignal.any([ex.signal, abort.signal]);
  const r = await forward({ ...d, ctx: { ...ex, raw: both, signal } });
  return abort.signal.aborted && failure !== undefined && !ex.signal.aborted ? failure : r;
}

/** One disaggregated attempt (d.prefill set): the legs in the prefill replica's dialect. */
export async function forwardPair(deps: PairDeps, d: Dispatch<Exchange>, forward: ForwardLeg): Promise<SendResult> {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(d.ctx.raw.toString()) as Record<string, unknown>;
  } catch {
    d.prefillDone?.(false);
    return forward(d);
  }
  return d.prefill!.state.engine === 'sglang' ? sglangPair(deps, d, body, forward) : vllmPair(deps, d, body, forward);
}
