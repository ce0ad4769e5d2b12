/**
 * The KV link between a prefill and a decode worker: how long a prompt's KV
 * takes to arrive. Pure: the HTTP simulator adds the result to the request's
 * readiness (SimRequest.readyDelayMs) and marks it received (kvReceived).
 *
 *   transfer_ms = latencyMs + tokens × kvBytesPerToken × 8 / (gbps × 1e9) × 1e3
 *
 * Only the tokens the decode worker does not already hold cross the link (its
 * prefix cache is consulted first, as vLLM's consumer pulls only uncached
 * blocks). Trade-off: the transfer is a delay before admission, so the decode
 * worker's blocks are taken when the KV has arrived rather than while it
 * arrives; the prefill worker holds its blocks (SimRequest.holdKv) until the
 * decode worker fetches the KV record, not until the modelled transfer ends.
 */
import type { EngineProfile } from './profiles.ts';

export interface KvLink {
  /** Link bandwidth per GPU, gigabits per second. */
  readonly gbps: number;
  /** Fixed cost of one transfer (handshake, first byte), ms. */
  readonly latencyMs: number;
}

/** Time for `tokens` tokens of KV to cross `link` (ms); the latency alone when nothing is sent. */
export function kvTransferMs(profile: EngineProfile, tokens: number, link: KvLink): number {
  if (tokens <= 0) return link.latencyMs;
  return link.latencyMs + ((tokens * profile.kvBytesPerToken * 8) / (link.gbps * 1e9)) * 1e3;
}
