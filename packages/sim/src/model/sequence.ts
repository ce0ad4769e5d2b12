/** One request inside the engine model: what the client asked for and where it stands. */

export interface SimRequest {
  readonly id: string;
  readonly promptTokens: number;
  /** Tokens to generate (the sim never stops early: ignore_eos semantics). */
  readonly maxTokens: number;
  /** Chain hashes of the prompt's full blocks (see prompt.ts). */
  readonly blockHashes: BigUint64Array;
  /** LoRA adapter name; '' or absent for the base model. */
  readonly adapter?: string | undefined;
  /** Extra delay before the request is schedulable (ms): a KV transfer, or a failed one's wait (transfer.ts). */
  readonly readyDelayMs?: number | undefined;
  /** The prompt's KV arrives from a prefill worker: only its last token is computed here (transfer.ts). */
  readonly kvReceived?: boolean | undefined;
  /** A prefill for a remote decode: its blocks stay held after it finishes, until releaseHeld (vLLM's delayed free). */
  readonly holdKv?: boolean | undefined;
  /** vLLM's request priority, lower first; honoured under the priority policy (EngineOptions.priorityScheduling). */
  readonly priority?: number | undefined;
}

export const SeqStatus = {
  arriving: 'arriving',
  waiting: 'waiting',
  running: 'running',
  finished: 'finished',
  aborted: 'aborted',
} as const;
export type SeqStatus = (typeof SeqStatus)[keyof typeof SeqStatus];

/** A request inside the model. Drivers read it; only the model writes it. */
export class Sequence {
  readonly id: string;
  readonly promptTokens: number;
  readonly maxTokens: number;
  readonly blockHashes: BigUint64Array;
  readonly adapter: string;
  readonly arrivalMs: number;
  readonly readyAtMs: number;
  status: SeqStatus = SeqStatus.arriving;
  /** Tokens whose KV is computed. */
  computed = 0;
  generated = 0;
  /** Prompt tokens served from the prefix cache at first admission. */
  cachedTokens = 0;
  /** When the scheduler first took it from the waiting queue (NaN until then). */
  admittedMs = Number.NaN;
  firstTokenMs = Number.NaN;
  lastTokenMs = Number.NaN;
  finishedMs = Number.NaN;
  preemptions = 0;
  admitted = false;
  /** Prompt KV received from a prefill worker; cleared by preemption (a preempted sequence recomputes locally). */
  kvReceived: boolean;
  readonly holdKv: boolean;
  /** Lower is served first under the priority policy; 0 by default. */
  readonly priority: number;
  readonly blocks: number[] = [];
  /** Leading blocks already registered in the prefix cache. */
  hashedBlocks = 0;
  /**
   * When its host-memory reload ends (scheduler.ts, step 3): set while it
   * waits with blocks held for the reload, or loaded and not yet running;
   * NaN otherwise.
   */
  loadEndMs = Number.NaN;

  constructor(r: SimRequest, arrivalMs: number, readyAtMs: number) {
    this.id = r.id;
    this.promptTokens = r.promptTokens;
    this.maxTokens = r.maxTokens;
    this.blockHashes = r.blockHashes;
    this.adapter = r.adapter ?? '';
    this.arrivalMs = arrivalMs;
    this.readyAtMs = readyAtMs;
    this.kvReceived = r.kvReceived === true;
    this.holdKv = r.holdKv === true;
    this.priority = r.priority ?? 0;
  }

  /** Tokens known so far: prompt plus sampled output. */
  get numTokens(): number {
    return this.promptTokens + this.generated;
  }
}
