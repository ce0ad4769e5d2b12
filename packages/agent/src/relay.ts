/**
 * The engine's answer to the client, with the receipt: the engine's usage
 * (prompt, cached and completion tokens) as the agent's tap read it, the one
 * channel by which routers learn it (docs/OPERATIONS.md, "Receipts"; tenant
 * accounting, docs/TENANTS.md, reads the same).
 *
 * Steps: a stream passes as it comes (stripped of the usage the agent asked
 * for, stream-usage.ts), with the receipt comment spliced in before its
 * closing `data: [DONE]` (or at its end without one); a plain 2xx answer is
 * held to its end, up to HOLD_BYTES, and goes out whole with the receipt in
 * its headers (the engine sends it whole anyway).
 * Complexity: O(bytes); one copy of a held answer.
 * Trade-off: a plain answer over HOLD_BYTES goes out as it comes, without a
 * receipt (the tap reads no usage from it either).
 */
import type { ServerResponse } from 'node:http';
import { receiptComment, receiptHeaders, type EngineUsage } from '@warmpath/shared/wire';
import { drained } from '@warmpath/shared/runtime';
import type { UsageStrip } from './stream-usage.ts';
import type { Usage, UsageTap } from './usage.ts';

/** A plain answer larger than this goes out as it comes, without the receipt headers. */
export const HOLD_BYTES = 1 << 20;

export interface Relay {
  readonly tap: UsageTap | undefined;
  readonly strip: UsageStrip | undefined;
  /** A plain 2xx answer's chunks, held until its end; undefined once its headers went out. */
  held: Buffer[] | undefined;
  readonly headers: Record<string, string | string[]>;
  readonly status: number;
  /** Called once, on the body's first chunk. */
  readonly firstByte: () => void;
  /** A stream's receipt comment went out (before its [DONE]). */
  receipted?: boolean;
}

/** The tap's usage as the receipt: its known fields, or undefined when it read none. */
export function receiptOf(u: Usage | undefined): EngineUsage | undefined {
  if (u === undefined) return undefined;
  const out: { promptTokens?: number; cachedTokens?: number; completionTokens?: number } = {};
  if (u.promptTokens !== undefined) out.promptTokens = u.promptTokens;
  if (u.cachedTokens !== undefined) out.cachedTokens = u.cachedTokens;
  if (u.completionTokens !== undefined) out.completionTokens = u.completionTokens;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The engine's body to the client, with the receipt (see the header). */
export async function relayBody(res: ServerResponse, body: AsyncIterable<Buffer>, r: Relay): Promise<void> {
  let first = true;
  let heldBytes = 0;
  for await (const chunk of body) {
    if (first) {
      first = false;
      r.firstByte();
    }
    r.tap?.write(chunk);
    if (res.destroyed) return;
    if (r.held !== undefined) {
      r.held.push(chunk);
      heldBytes += chunk.length;
      if (heldBytes <= HOLD_BYTES) continue;
      res.writeHead(r.status, r.headers);
      const all = Buffer.concat(r.held);
      r.held = undefined;
      if (!res.write(all)) await drained(res);
      continue;
    }
    let out = r.strip === undefined ? chunk : r.strip.push(chunk);
    if (!r.receipted) out = beforeDone(out, r);
    if (out.length > 0 && !res.write(out)) await drained(res);
  }
  if (res.destroyed) return;
  const receipt = receiptOf(r.tap?.end());
  if (r.held !== undefined) {
    res.writeHead(r.status, { ...r.headers, ...(receipt !== undefined ? receiptHeaders(receipt) : {}) });
    return void res.end(Buffer.concat(r.held));
  }
  const rest = r.strip?.end();
  if (receipt === undefined || r.receipted) return void res.end(rest);
  // No `data: [DONE]` at the end of a chunk (an engine that sends none, or one split across chunks): the receipt closes the stream.
  res.end(Buffer.concat([rest ?? Buffer.alloc(0), Buffer.from(receiptComment(receipt))]));
}

const DONE_EVENT = /data: ?\[DONE\]\r?\n\r?\n$/;

/**
 * `out` with the receipt comment spliced in before the `data: [DONE]` event
 * that ends it, so the stream still ends with [DONE] as OpenAI's does;
 * `out` itself when it does not end with that event or the tap has read no
 * usage yet.
 */
function beforeDone(out: Buffer, r: Relay): Buffer {
  const tail = out.subarray(-24).toString('latin1');
  const m = DONE_EVENT.exec(tail);
  const receipt = m === null ? undefined : receiptOf(r.tap?.usage);
  if (m === null || receipt === undefined) return out;
  const at = out.length - (tail.length - m.index);
  r.receipted = true;
  return Buffer.concat([out.subarray(0, at), Buffer.from(receiptComment(receipt)), out.subarray(at)]);
}
