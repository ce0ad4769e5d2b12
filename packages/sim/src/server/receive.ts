/**
 * The decode side of a disaggregated request: fetch the KV record from the
 * prefill worker's side channel (kv-store.ts), then model the transfer over
 * the link (model/transfer.ts) for the tokens this worker does not already
 * cache. A transfer that fails (unreachable or dead prefill worker, unknown
 * key, the kv-fail fault) or times out (the kv-timeout fault, or SGLang's room
 * never filled) is recomputed here or fails the request, as the failure
 * policy says; vLLM's default is to recompute.
 */
import { WarmpathError } from '@warmpath/shared/wire';
import type { PromptIdentity } from '../model/prompt.ts';
import { kvTransferMs } from '../model/transfer.ts';
import type { SimContext } from './context.ts';
import type { KvSource } from './disagg.ts';
import { fetchKv } from './kv-store.ts';

/** How the request enters the engine: extra delay before it is schedulable, and whether its prompt KV is already there. */
export interface Arrival {
  readonly readyDelayMs: number;
  readonly kvReceived: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function receiveKv(
  ctx: SimContext,
  source: KvSource,
  identity: PromptIdentity,
  adapter: string,
): Promise<Arrival> {
  const disagg = ctx.disagg;
  // vLLM's proxy sends the decode leg after the prefill answered, so its KV is filed already; SGLang's may still be coming.
  const waitMs = source.protocol === 'sglang' ? disagg.timeoutMs / ctx.speed : 0;
  const record = await fetchKv(source.host, source.port, source.key, waitMs);
  const faults = ctx.faults.state;
  let failure: string | undefined;
  let costMs = 0; // simulated time the failed attempt still costs
  if (record === undefined) failure = `no KV for ${source.key} at ${source.host}:${source.port}`;
  else if (faults.kvTimeout > 0 && ctx.random() < faults.kvTimeout) {
    failure = 'transfer timed out (injected fault: kv-timeout)';
    costMs = disagg.timeoutMs;
  } else if (faults.kvFail > 0 && ctx.random() < faults.kvFail) {
    failure = 'transfer failed (injected fault: kv-fail)';
    costMs = disagg.link.latencyMs;
  }
  if (failure === undefined) {
    const held = ctx.model.probe(identity.promptTokens, identity.blockHashes, adapter).cachedTokens;
    disagg.stats.received++;
    return {
      readyDelayMs: kvTransferMs(ctx.profile, identity.promptTokens - held, disagg.link),
      kvReceived: true,
    };
  }
  disagg.stats.failed++;
  if (disagg.failurePolicy === 'fail') {
    if (costMs > 0) await sleep(costMs / ctx.speed);
    throw new WarmpathError('internal_error', `KV load failed: ${failure}.`);
  }
  disagg.stats.recomputed++;
  return { readyDelayMs: costMs, kvReceived: false };
}
