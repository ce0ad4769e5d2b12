/**
 * The inference routes: validate → prompt identity (canonical text, chain
 * hashes) → with KV sharing, the peers' lookup (peer-kv.ts) → model.submit
 * → the response streams as the driver's steps emit tokens (streams.ts).
 * The probe route runs the same first two steps and answers the model's
 * probe instead of submitting.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from '@warmpath/shared/runtime';
import { WarmpathError, parseJsonBody } from '@warmpath/shared/wire';
import { EngineError } from '../model/engine.ts';
import { promptIdentityOfBody } from '../model/prompt.ts';
import type { PromptIdentity } from '../model/prompt.ts';
import type { Sequence } from '../model/sequence.ts';
import type { SimContext } from './context.ts';
import { ChunkWriter, parseInference } from './openai.ts';
import type { InferenceKind, InferenceRequest } from './openai.ts';
import { planOf, producedParams } from './disagg.ts';
import { receiveKv } from './receive.ts';
import type { Arrival } from './receive.ts';
import type { Inflight } from './streams.ts';

/** A request prefilled here: no extra delay, nothing received (the SimRequest stays as it was before disaggregation). */
const LOCAL_ARRIVAL: Arrival = { readyDelayMs: 0, kvReceived: false };

/**
 * A prefill finished: its KV is filed for the decode worker (under the SGLang
 * room, or the vLLM request id) and, for vLLM, the answer names where it is.
 * Its blocks stay held (SimRequest.holdKv) until the decode worker reads them
 * or the entry expires, as vLLM's prefill worker delays freeing them.
 */
function fileKv(ctx: SimContext, s: Sequence, room: string | undefined): Record<string, unknown> | null {
  const d = ctx.disagg;
  const blockIds = s.blocks.slice();
  d.store.put(room ?? s.id, { engineId: d.engineId, promptTokens: s.promptTokens, blockIds }, () =>
    ctx.model.releaseHeld(s.id),
  );
  d.stats.produced++;
  if (room !== undefined) return null;
  return producedParams(d.engineId, s.id, blockIds, d.address.host, d.address.port);
}

/** The prompt's token count and block hashes, as the engine would compute them. */
function identityOf(ctx: SimContext, parsed: InferenceRequest, kind: InferenceKind): PromptIdentity {
  return promptIdentityOfBody(parsed.body, kind, {
    model: ctx.modelName,
    adapter: parsed.adapter,
    cacheSalt: parsed.cacheSalt,
    charsPerToken: ctx.charsPerToken,
    blockSize: ctx.profile.blockSize,
  });
}

function parse(ctx: SimContext, body: unknown, kind: InferenceKind): InferenceRequest {
  return parseInference(body, kind, {
    baseModel: ctx.modelName,
    hasAdapter: (a) => ctx.model.hasAdapter(a),
    defaultMaxTokens: ctx.defaultMaxTokens,
  });
}

export async function inference(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  kind: InferenceKind,
): Promise<void> {
  const body = parseJsonBody(await readBody(req, ctx.bodyLimit));
  const parsed = parse(ctx, body, kind);
  const faults = ctx.faults.state;
  if (faults.errorRate > 0 && ctx.random() < faults.errorRate)
    throw new WarmpathError('internal_error', 'Injected fault: error-rate.');
  const plan = planOf(parsed.body, ctx.disagg.role);
  // SGLang's prefill worker runs the prompt and one token; the decode worker streams the answer.
  const ir = plan.kind === 'produce' && plan.protocol === 'sglang' ? { ...parsed, maxTokens: 1 } : parsed;
  const identity = identityOf(ctx, ir, kind);
  const arrival = plan.kind === 'consume' ? await receiveKv(ctx, plan.source, identity, ir.adapter) : LOCAL_ARRIVAL;
  if (plan.kind !== 'consume') await askPeers(ctx, identity);
  const seqId = ctx.nextSeqId();
  const seq = submit(ctx, seqId, ir, identity, kind, arrival, plan.kind === 'produce');
  const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${seqId}`;
  const created = Math.floor(Date.now() / 1000);
  const f: Inflight = {
    seq,
    req: ir,
    res,
    id,
    created,
    writer: ir.stream ? new ChunkWriter(ir, id, created) : undefined,
    started: false,
    onFinish: plan.kind === 'produce' ? (s) => fileKv(ctx, s, plan.room) : undefined,
  };
  ctx.streams.add(f);
  if (faults.dieAfterTokens === 0) {
    ctx.streams.kill(f);
    res.destroy();
    return;
  }
  ctx.driver.kick();
}

/** KV sharing on: what the other simulators hold of a prompt this engine does not hold whole (peer-kv.ts). */
async function askPeers(ctx: SimContext, identity: PromptIdentity): Promise<void> {
  const n = identity.blockHashes.length;
  if (ctx.peerKv.peers.length === 0 || ctx.model.heldBlocks(identity.blockHashes, n) >= n) return;
  await ctx.peerKv.lookup(identity.blockHashes, n);
}

/** model.submit, with the engine's refusals as OpenAI errors. */
function submit(
  ctx: SimContext,
  seqId: string,
  parsed: InferenceRequest,
  identity: PromptIdentity,
  kind: InferenceKind,
  arrival: Arrival,
  holdKv: boolean,
): Sequence {
  try {
    return ctx.model.submit(
      {
        id: seqId,
        promptTokens: identity.promptTokens,
        maxTokens: parsed.maxTokens,
        blockHashes: identity.blockHashes,
        adapter: parsed.adapter,
        ...(parsed.priority !== 0 ? { priority: parsed.priority } : {}),
        ...(arrival === LOCAL_ARRIVAL ? {} : arrival),
        ...(holdKv ? { holdKv } : {}),
      },
      ctx.driver.now(),
    );
  } catch (err) {
    if (err instanceof EngineError) {
      throw new WarmpathError(
        err.code === 'adapter_not_found' ? 'model_not_found' : 'invalid_request',
        err.message,
        err.code === 'adapter_not_found' ? 'model' : kind === 'chat' ? 'messages' : 'prompt',
      );
    }
    throw err;
  }
}

export async function probe(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseJsonBody(await readBody(req, ctx.bodyLimit));
  const kind: InferenceKind = 'messages' in body ? 'chat' : 'completion';
  const parsed = parse(ctx, body, kind);
  const identity = identityOf(ctx, parsed, kind);
  sendJson(res, 200, ctx.model.probe(identity.promptTokens, identity.blockHashes, parsed.adapter));
}
