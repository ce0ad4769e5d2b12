/**
 * In-flight responses: turns the driver's step events into HTTP — SSE chunks
 * for a streaming request, one JSON body for the others — and aborts the
 * sequence of a client that went away. One map lookup per emitted token.
 */
import type { ServerResponse } from 'node:http';
import { sendJson } from '@warmpath/shared/runtime';
import type { EngineModel } from '../model/engine.ts';
import type { StepResult } from '../model/scheduler.ts';
import { SeqStatus } from '../model/sequence.ts';
import type { Sequence } from '../model/sequence.ts';
import type { FaultState } from './faults.ts';
import { completionResponse, usageOf } from './openai.ts';
import type { ChunkWriter, InferenceRequest } from './openai.ts';

export interface Inflight {
  readonly seq: Sequence;
  readonly req: InferenceRequest;
  readonly res: ServerResponse;
  readonly id: string;
  readonly created: number;
  readonly writer: ChunkWriter | undefined;
  started: boolean;
  /** Called once when the sequence finishes; returns the answer's kv_transfer_params (a prefill worker's, disagg.ts). */
  readonly onFinish?: ((s: Sequence) => Record<string, unknown> | null) | undefined;
}

export class InflightStreams {
  readonly #model: EngineModel;
  readonly #faults: () => FaultState;
  readonly #inflight = new Map<string, Inflight>();

  constructor(model: EngineModel, faults: () => FaultState) {
    this.#model = model;
    this.#faults = faults;
  }

  get size(): number {
    return this.#inflight.size;
  }

  /** Tracks a submitted sequence; a response closed before the end aborts it. */
  add(f: Inflight): void {
    const seqId = f.seq.id;
    this.#inflight.set(seqId, f);
    f.res.on('close', () => {
      if (this.#inflight.get(seqId) === f) {
        this.#inflight.delete(seqId);
        this.#model.abort(seqId);
      }
    });
  }

  /** The driver's step events → HTTP. */
  deliver(r: StepResult): void {
    for (const s of r.emitted) {
      const f = this.#inflight.get(s.id);
      if (f !== undefined) this.#onToken(f, s);
    }
  }

  /** die-after-tokens: the replica "dies" under this request: no terminator, connection reset. */
  kill(f: Inflight): void {
    this.#inflight.delete(f.seq.id);
    this.#model.abort(f.seq.id);
  }

  /** Server shutdown: resets every in-flight response. */
  destroyAll(): void {
    for (const f of this.#inflight.values()) f.res.destroy();
    this.#inflight.clear();
  }

  #onToken(f: Inflight, s: Sequence): void {
    const last = s.status === SeqStatus.finished;
    const kvParams = last && f.onFinish !== undefined ? f.onFinish(s) : null;
    const dieAfterTokens = this.#faults().dieAfterTokens;
    if (f.writer !== undefined) {
      let out = '';
      if (!f.started) {
        f.started = true;
        f.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
        out += f.writer.opening();
      }
      out += f.writer.token(s.generated - 1, last);
      if (last) out += f.writer.closing(usageOf(s.promptTokens, s.generated, s.cachedTokens));
      if (last) {
        this.#inflight.delete(s.id);
        f.res.end(out);
        return;
      }
      if (dieAfterTokens !== null && s.generated >= dieAfterTokens) {
        this.kill(f);
        f.res.write(out, () => f.res.destroy()); // flush the N-th token, then reset
        return;
      }
      f.res.write(out);
    } else if (last) {
      this.#inflight.delete(s.id);
      sendJson(
        f.res,
        200,
        completionResponse(
          f.req,
          f.id,
          f.created,
          s.generated,
          usageOf(s.promptTokens, s.generated, s.cachedTokens),
          'length',
          kvParams,
        ),
      );
    } else if (dieAfterTokens !== null && s.generated >= dieAfterTokens) {
      this.kill(f);
      f.res.destroy();
    }
  }
}
