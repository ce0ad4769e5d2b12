/**
 * EngineModel: one vLLM-V1-like inference replica, pure and clock-injected.
 * Nothing here reads a clock, sets a timer or does I/O: the HTTP simulator
 * drives it in (scaled) real time, the fleet simulator in virtual time.
 *
 * Steps of `step(now)` (one scheduler iteration + one forward pass):
 *  1. Arrivals whose front-end delay has passed join the FCFS waiting queue.
 *  2. Running sequences, in admission order, each get min(remaining, budget)
 *     tokens (a prefill chunk, or 1 decode token). When blocks run out the
 *     newest running sequence is preempted (recompute: its blocks are freed,
 *     it returns to the head of the queue), until the allocation fits.
 *  3. If nothing was preempted, waiting sequences are admitted FCFS while the
 *     token budget, max_num_seqs and free blocks allow. Each reuses its longest
 *     cached prefix (full blocks, at most prompt-1 tokens, as vLLM). A sequence
 *     whose adapter would exceed max_loras distinct adapters is skipped
 *     (deferred); a sequence that does not fit in free blocks stops admission.
 *  4. Adapters in the batch that are not on the GPU take a slot (evicting an
 *     idle one, LRU) and charge a load time to the step.
 *  5. Step duration from the roofline in profiles.ts; all effects are applied
 *     now and stamped at now + duration (the caller must not step again before).
 * Complexity: O(running + scanned waiting + allocated blocks) per step.
 * Trade-off: applying a step's effects at its start keeps the model a single
 * call per step (no in-flight state); drivers deliver the returned events when
 * the step's time has elapsed and drop events of sequences aborted meanwhile.
 */
import { BlockPool } from './kv.ts';
import { E2E_BUCKETS, Histogram, ITL_BUCKETS, TTFT_BUCKETS } from './histogram.ts';
import { stepTimeMs } from './profiles.ts';
import type { EngineProfile } from './profiles.ts';

export interface SimRequest {
  readonly id: string;
  readonly promptTokens: number;
  /** Tokens to generate (the sim never stops early: ignore_eos semantics). */
  readonly maxTokens: number;
  /** Chain hashes of the prompt's full blocks (see prompt.ts). */
  readonly blockHashes: BigUint64Array;
  /** LoRA adapter name; '' or absent for the base model. */
  readonly adapter?: string | undefined;
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
  firstTokenMs = Number.NaN;
  lastTokenMs = Number.NaN;
  finishedMs = Number.NaN;
  preemptions = 0;
  admitted = false;
  readonly blocks: number[] = [];
  /** Leading blocks already registered in the prefix cache. */
  hashedBlocks = 0;

  constructor(r: SimRequest, arrivalMs: number, readyAtMs: number) {
    this.id = r.id;
    this.promptTokens = r.promptTokens;
    this.maxTokens = r.maxTokens;
    this.blockHashes = r.blockHashes;
    this.adapter = r.adapter ?? '';
    this.arrivalMs = arrivalMs;
    this.readyAtMs = readyAtMs;
  }

  /** Tokens known so far: prompt plus sampled output. */
  get numTokens(): number {
    return this.promptTokens + this.generated;
  }
}

export interface StepResult {
  /** 0 when nothing could be scheduled (idle). */
  readonly durationMs: number;
  /** now + durationMs: when the events below happen. */
  readonly endMs: number;
  /** Sequences that sampled one token this step (read `generated`; 1 = first token). */
  readonly emitted: readonly Sequence[];
  /** Subset of `emitted` that reached max tokens (finish_reason "length"). */
  readonly finished: readonly Sequence[];
  readonly preempted: readonly Sequence[];
  readonly scheduledSeqs: number;
  readonly scheduledTokens: number;
  /** Adapter load time charged to this step (ms). */
  readonly loraLoadMs: number;
}

export interface EngineOptions {
  /** GPU LoRA slots (vLLM --max-loras). 0 disables LoRA. */
  readonly maxLoras?: number;
  /** Adapters kept in CPU memory (loads from there are fast). Default max(maxLoras, 4). */
  readonly maxCpuLoras?: number;
  /** Registered adapters (static list; more via registerAdapter). */
  readonly adapters?: readonly string[];
  readonly enablePrefixCaching?: boolean;
  /** Multiplies every step's duration (fault injection). */
  readonly slowFactor?: number;
}

export interface LoraState {
  readonly maxLoras: number;
  readonly registered: readonly string[];
  /** Adapters in GPU slots, LRU first. */
  readonly gpu: readonly string[];
  /** Distinct adapters of running sequences. */
  readonly running: readonly string[];
  /** Distinct adapters of waiting sequences. */
  readonly waiting: readonly string[];
  readonly loads: number;
}

export interface EngineSnapshot {
  readonly profile: string;
  readonly running: number;
  readonly waiting: number;
  /** Waiting because their adapter has no slot (vLLM reason="deferred"). */
  readonly waitingDeferred: number;
  readonly kvUsedBlocks: number;
  readonly kvTotalBlocks: number;
  readonly kvCachedBlocks: number;
  /** 1 - free/total, as vLLM reports it (cached but unreferenced blocks count as free). */
  readonly kvUsage: number;
  readonly prefixQueriesTokens: number;
  readonly prefixHitsTokens: number;
  readonly preemptions: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
  readonly finishedRequests: number;
  readonly abortedRequests: number;
  readonly evictedBlocks: number;
  readonly steps: number;
  readonly lora: LoraState;
}

export interface ProbeResult {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly running: number;
  readonly waiting: number;
  readonly kvUsedBlocks: number;
  readonly kvTotalBlocks: number;
  readonly adapterHot: boolean;
  readonly adapterSlotsFree: number;
  /** Prompt tokens of queued and running requests still to prefill, ahead of this one. */
  readonly pendingPrefillTokens: number;
  /** The model's own estimate of this prompt's TTFT if it arrived now (the benchmark's oracle). */
  readonly predictedTtftMs: number;
}

export class EngineError extends Error {
  readonly code: 'invalid_request' | 'adapter_not_found' | 'duplicate_id';
  constructor(code: EngineError['code'], message: string) {
    super(message);
    this.name = 'EngineError';
    this.code = code;
  }
}

export class EngineModel {
  readonly profile: EngineProfile;
  readonly blockSize: number;
  readonly maxLoras: number;
  readonly maxCpuLoras: number;
  enablePrefixCaching: boolean;
  /** Fault injection: step durations are multiplied by this. */
  slowFactor: number;

  readonly ttft = new Histogram(TTFT_BUCKETS);
  readonly itl = new Histogram(ITL_BUCKETS);
  readonly e2e = new Histogram(E2E_BUCKETS);

  private readonly pool: BlockPool;
  private readonly byId = new Map<string, Sequence>();
  /** Not yet through the front end, sorted by readyAtMs. */
  private arriving: Sequence[] = [];
  private waiting: Sequence[] = [];
  private running: Sequence[] = [];
  private readonly registered = new Set<string>();
  /** adapter → running sequences using it. */
  private readonly activeLoras = new Map<string, number>();
  private readonly gpuLoras: string[] = [];
  private readonly cpuLoras: string[] = [];

  private prefixQueries = 0;
  private prefixHits = 0;
  private preemptionsTotal = 0;
  private promptTokensTotal = 0;
  private generationTokensTotal = 0;
  private finishedTotal = 0;
  private abortedTotal = 0;
  private loraLoads = 0;
  private steps = 0;

  constructor(profile: EngineProfile, options: EngineOptions = {}) {
    this.profile = profile;
    this.blockSize = profile.blockSize;
    this.pool = new BlockPool(profile.numGpuBlocks);
    this.maxLoras = options.maxLoras ?? 1;
    this.maxCpuLoras = Math.max(this.maxLoras, options.maxCpuLoras ?? 4);
    this.enablePrefixCaching = options.enablePrefixCaching ?? true;
    this.slowFactor = options.slowFactor ?? 1;
    for (const a of options.adapters ?? []) this.registerAdapter(a);
  }

  /** Largest prompt + output one request may have (tokens). */
  get maxModelLen(): number {
    return Math.min(this.profile.maxModelLen, this.profile.numGpuBlocks * this.blockSize);
  }

  // ---- adapters -----------------------------------------------------------

  registerAdapter(name: string): boolean {
    if (name === '' || this.registered.has(name)) return false;
    this.registered.add(name);
    return true;
  }

  /** Unregisters; running sequences keep their adapter until they finish. */
  unregisterAdapter(name: string): boolean {
    if (!this.registered.delete(name)) return false;
    const i = this.cpuLoras.indexOf(name);
    if (i >= 0) this.cpuLoras.splice(i, 1);
    if (!this.activeLoras.has(name)) {
      const j = this.gpuLoras.indexOf(name);
      if (j >= 0) this.gpuLoras.splice(j, 1);
    }
    return true;
  }

  hasAdapter(name: string): boolean {
    return this.registered.has(name);
  }

  get adapters(): readonly string[] {
    return [...this.registered];
  }

  // ---- requests -----------------------------------------------------------

  /** Front-end delay of a prompt (tokenize, schedule) in ms. */
  frontendDelayMs(promptTokens: number): number {
    return this.profile.frontendMs + promptTokens * this.profile.frontendMsPerToken;
  }

  /** Accepts a request at `now` (ms). Throws EngineError on an invalid one. */
  submit(r: SimRequest, now: number): Sequence {
    if (this.byId.has(r.id)) throw new EngineError('duplicate_id', `request id ${r.id} is already in flight`);
    if (!(r.promptTokens >= 1) || !(r.maxTokens >= 1)) throw new EngineError('invalid_request', 'promptTokens and maxTokens must be >= 1');
    if (r.promptTokens + r.maxTokens > this.maxModelLen)
      throw new EngineError(
        'invalid_request',
        `This model's maximum context length is ${this.maxModelLen} tokens. However, you requested ${r.promptTokens + r.maxTokens} tokens (${r.promptTokens} in the messages, ${r.maxTokens} in the completion).`,
      );
    const adapter = r.adapter ?? '';
    if (adapter !== '') {
      if (this.maxLoras === 0) throw new EngineError('invalid_request', 'LoRA is not enabled on this engine');
      if (!this.registered.has(adapter)) throw new EngineError('adapter_not_found', `The LoRA adapter '${adapter}' is not registered`);
    }
    const s = new Sequence(r, now, now + this.frontendDelayMs(r.promptTokens));
    this.byId.set(s.id, s);
    // Keep `arriving` sorted by readyAtMs; arrivals are nearly ordered, so scan from the back.
    let i = this.arriving.length;
    while (i > 0 && this.arriving[i - 1]!.readyAtMs > s.readyAtMs) i--;
    this.arriving.splice(i, 0, s);
    return s;
  }

  get(id: string): Sequence | undefined {
    return this.byId.get(id);
  }

  /** Cancels a request (client gone); frees its blocks. False if unknown or already done. */
  abort(id: string): boolean {
    const s = this.byId.get(id);
    if (s === undefined) return false;
    this.byId.delete(id);
    if (s.status === SeqStatus.running) {
      this.removeFrom(this.running, s);
      this.pool.release(s.blocks);
      s.blocks.length = 0;
      this.loraDone(s);
    } else if (s.status === SeqStatus.waiting) {
      this.removeFrom(this.waiting, s);
      this.pool.release(s.blocks);
      s.blocks.length = 0;
    } else if (s.status === SeqStatus.arriving) {
      this.removeFrom(this.arriving, s);
    }
    s.status = SeqStatus.aborted;
    this.abortedTotal++;
    return true;
  }

  /** Earliest time (ms) at which `step` could do work: `now` if busy, Infinity if idle. */
  nextWakeMs(now: number): number {
    if (this.running.length > 0 || this.waiting.length > 0) return now;
    const first = this.arriving[0];
    return first === undefined ? Number.POSITIVE_INFINITY : Math.max(now, first.readyAtMs);
  }

  get idle(): boolean {
    return this.running.length === 0 && this.waiting.length === 0 && this.arriving.length === 0;
  }

  // ---- the step -----------------------------------------------------------

  step(now: number): StepResult {
    const p = this.profile;
    const bs = this.blockSize;
    // 1. Arrivals.
    let k = 0;
    while (k < this.arriving.length && this.arriving[k]!.readyAtMs <= now) {
      const s = this.arriving[k]!;
      s.status = SeqStatus.waiting;
      this.waiting.push(s);
      k++;
    }
    if (k > 0) this.arriving.splice(0, k);

    let budget = p.maxNumBatchedTokens;
    const scheduled: Sequence[] = [];
    const counts: number[] = [];
    const preempted: Sequence[] = [];
    let contextTokens = 0;
    let prefillTokens = 0;

    // 2. Running sequences.
    for (let i = 0; i < this.running.length && budget > 0; i++) {
      const s = this.running[i]!;
      const want = Math.min(s.numTokens - s.computed, budget);
      const need = Math.ceil((s.computed + want) / bs) - s.blocks.length;
      let ok = need <= 0 || this.pool.allocate(need, s.blocks);
      while (!ok) {
        const victim = this.running[this.running.length - 1]!;
        this.preempt(victim);
        preempted.push(victim);
        if (victim === s) break;
        ok = this.pool.allocate(need, s.blocks);
      }
      if (!ok) break;
      if (s.numTokens - s.computed > 1) prefillTokens += want;
      contextTokens += s.computed + want;
      budget -= want;
      scheduled.push(s);
      counts.push(want);
      this.commitHashes(s, s.computed + want);
    }

    // 3. Admission (vLLM skips it in a step that preempted).
    if (preempted.length === 0) {
      let j = 0;
      while (j < this.waiting.length && budget > 0 && this.running.length < p.maxNumSeqs) {
        const s = this.waiting[j]!;
        if (s.adapter !== '' && !this.activeLoras.has(s.adapter) && this.activeLoras.size >= this.maxLoras) {
          j++; // deferred: its adapter has no slot
          continue;
        }
        const maxHit = Math.floor((s.numTokens - 1) / bs);
        const hit = this.enablePrefixCaching ? this.pool.match(s.blockHashes, maxHit) : 0;
        const computed = hit * bs;
        const want = Math.min(s.numTokens - computed, budget);
        const need = Math.ceil((computed + want) / bs) - hit;
        const available = this.pool.numFree - (hit > 0 ? this.pool.freeAmongMatched(s.blockHashes, hit) : 0);
        if (need > available) break; // FCFS: the head waits for blocks
        this.pool.acquireCached(s.blockHashes, hit, s.blocks);
        this.pool.allocate(need, s.blocks);
        s.computed = computed;
        s.hashedBlocks = hit;
        if (!s.admitted) {
          s.admitted = true;
          s.cachedTokens = computed;
          this.prefixQueries += s.promptTokens;
          this.prefixHits += computed;
        }
        s.status = SeqStatus.running;
        this.waiting.splice(j, 1);
        this.running.push(s);
        if (s.adapter !== '') this.activeLoras.set(s.adapter, (this.activeLoras.get(s.adapter) ?? 0) + 1);
        if (s.numTokens - computed > 1) prefillTokens += want;
        contextTokens += computed + want;
        budget -= want;
        scheduled.push(s);
        counts.push(want);
        this.commitHashes(s, computed + want);
      }
    }

    if (scheduled.length === 0) {
      return { durationMs: 0, endMs: now, emitted: [], finished: [], preempted, scheduledSeqs: 0, scheduledTokens: 0, loraLoadMs: 0 };
    }

    // 4. Adapters onto the GPU.
    let loadMs = 0;
    if (this.activeLoras.size > 0) {
      for (const a of this.activeLoras.keys()) loadMs += this.touchGpuLora(a);
    }

    // 5. Duration and effects.
    const durationMs = stepTimeMs(p, contextTokens, prefillTokens, loadMs) * this.slowFactor;
    const end = now + durationMs;
    this.steps++;
    const emitted: Sequence[] = [];
    const finished: Sequence[] = [];
    let tokens = 0;
    for (let i = 0; i < scheduled.length; i++) {
      const s = scheduled[i]!;
      const n = counts[i]!;
      tokens += n;
      s.computed += n;
      if (s.computed < s.numTokens) continue; // mid-prefill chunk
      s.generated++;
      this.generationTokensTotal++;
      if (s.generated === 1) {
        s.firstTokenMs = end;
        this.ttft.observe((end - s.arrivalMs) / 1e3);
        this.promptTokensTotal += s.promptTokens;
      } else {
        this.itl.observe((end - s.lastTokenMs) / 1e3);
      }
      s.lastTokenMs = end;
      emitted.push(s);
      if (s.generated >= s.maxTokens || s.numTokens >= this.maxModelLen) {
        s.status = SeqStatus.finished;
        s.finishedMs = end;
        this.e2e.observe((end - s.arrivalMs) / 1e3);
        this.pool.release(s.blocks);
        s.blocks.length = 0;
        this.loraDone(s);
        this.byId.delete(s.id);
        this.finishedTotal++;
        finished.push(s);
      }
    }
    if (finished.length > 0) this.running = this.running.filter((s) => s.status === SeqStatus.running);
    return { durationMs, endMs: end, emitted, finished, preempted, scheduledSeqs: scheduled.length, scheduledTokens: tokens, loraLoadMs: loadMs };
  }

  // ---- views --------------------------------------------------------------

  /** What would happen to this prompt right now (oracle for the benchmark and the agent's cache model). */
  probe(promptTokens: number, blockHashes: BigUint64Array, adapter = ''): ProbeResult {
    const maxHit = Math.floor((promptTokens - 1) / this.blockSize);
    const hit = this.enablePrefixCaching ? this.pool.match(blockHashes, maxHit) : 0;
    // Work ahead: every prompt token not yet computed, FCFS; then this prompt's uncached part.
    let pending = 0;
    let context = 0;
    for (const s of this.running) {
      pending += Math.max(0, s.promptTokens - s.computed);
      context += s.computed;
    }
    for (const s of this.waiting) pending += Math.max(0, s.promptTokens - s.computed);
    for (const s of this.arriving) pending += s.promptTokens;
    const work = pending + promptTokens - hit * this.blockSize;
    const p = this.profile;
    const steps = Math.max(1, Math.ceil(work / p.maxNumBatchedTokens));
    const loraMs = adapter !== '' && !this.gpuLoras.includes(adapter) ? p.loraLoadMs : 0;
    const predictedTtftMs = this.frontendDelayMs(promptTokens) + steps * stepTimeMs(p, context, 0, 0) + (work / p.prefillTokensPerS) * 1e3 + loraMs;
    return {
      pendingPrefillTokens: pending,
      predictedTtftMs,
      promptTokens,
      cachedTokens: hit * this.blockSize,
      running: this.running.length,
      waiting: this.waiting.length + this.arriving.length,
      kvUsedBlocks: this.pool.numUsed,
      kvTotalBlocks: this.pool.numBlocks,
      adapterHot: adapter !== '' && this.gpuLoras.includes(adapter),
      adapterSlotsFree: Math.max(0, this.maxLoras - this.activeLoras.size),
    };
  }

  snapshot(): EngineSnapshot {
    const waitingLoras = new Set<string>();
    let deferred = 0;
    for (const s of this.waiting) {
      if (s.adapter === '') continue;
      waitingLoras.add(s.adapter);
      if (!this.activeLoras.has(s.adapter) && this.activeLoras.size >= this.maxLoras) deferred++;
    }
    for (const s of this.arriving) if (s.adapter !== '') waitingLoras.add(s.adapter);
    return {
      profile: this.profile.name,
      running: this.running.length,
      waiting: this.waiting.length + this.arriving.length,
      waitingDeferred: deferred,
      kvUsedBlocks: this.pool.numUsed,
      kvTotalBlocks: this.pool.numBlocks,
      kvCachedBlocks: this.pool.numCached,
      kvUsage: this.pool.numUsed / this.pool.numBlocks,
      prefixQueriesTokens: this.prefixQueries,
      prefixHitsTokens: this.prefixHits,
      preemptions: this.preemptionsTotal,
      promptTokens: this.promptTokensTotal,
      generationTokens: this.generationTokensTotal,
      finishedRequests: this.finishedTotal,
      abortedRequests: this.abortedTotal,
      evictedBlocks: this.pool.evictions,
      steps: this.steps,
      lora: {
        maxLoras: this.maxLoras,
        registered: [...this.registered],
        gpu: [...this.gpuLoras],
        running: [...this.activeLoras.keys()],
        waiting: [...waitingLoras],
        loads: this.loraLoads,
      },
    };
  }

  /** Drops unreferenced cached blocks; returns how many. */
  resetPrefixCache(): number {
    return this.pool.resetPrefixCache();
  }

  /** Test hook: throws if the block pool's bookkeeping is inconsistent. */
  checkInvariants(): void {
    this.pool.checkInvariants();
    const held = new Set<number>();
    for (const s of this.running) for (const b of s.blocks) held.add(b);
    if (held.size !== this.pool.numUsed) throw new Error(`running sequences hold ${held.size} blocks, pool says ${this.pool.numUsed} used`);
    for (const s of this.waiting) if (s.blocks.length !== 0) throw new Error(`waiting sequence ${s.id} holds blocks`);
  }

  // ---- internals ----------------------------------------------------------

  private preempt(s: Sequence): void {
    this.running.pop();
    this.pool.release(s.blocks);
    s.blocks.length = 0;
    s.computed = 0;
    s.hashedBlocks = 0;
    s.preemptions++;
    s.status = SeqStatus.waiting;
    this.loraDone(s);
    this.waiting.unshift(s);
    this.preemptionsTotal++;
  }

  private commitHashes(s: Sequence, computedAfter: number): void {
    if (!this.enablePrefixCaching) return;
    const full = Math.min(Math.floor(computedAfter / this.blockSize), s.blockHashes.length);
    for (let b = s.hashedBlocks; b < full; b++) this.pool.commit(s.blocks[b]!, s.blockHashes[b]!);
    if (full > s.hashedBlocks) s.hashedBlocks = full;
  }

  private loraDone(s: Sequence): void {
    if (s.adapter === '') return;
    const n = (this.activeLoras.get(s.adapter) ?? 1) - 1;
    if (n <= 0) this.activeLoras.delete(s.adapter);
    else this.activeLoras.set(s.adapter, n);
  }

  /** Ensures `a` is in a GPU slot; returns the load time charged (ms). */
  private touchGpuLora(a: string): number {
    const i = this.gpuLoras.indexOf(a);
    if (i >= 0) {
      if (i !== this.gpuLoras.length - 1) {
        this.gpuLoras.splice(i, 1);
        this.gpuLoras.push(a);
      }
      return 0;
    }
    if (this.gpuLoras.length >= this.maxLoras) {
      const victim = this.gpuLoras.findIndex((x) => !this.activeLoras.has(x));
      this.gpuLoras.splice(victim >= 0 ? victim : 0, 1);
    }
    this.gpuLoras.push(a);
    this.loraLoads++;
    const c = this.cpuLoras.indexOf(a);
    if (c >= 0) {
      this.cpuLoras.splice(c, 1);
      this.cpuLoras.push(a);
      return this.profile.loraCpuLoadMs;
    }
    this.cpuLoras.push(a);
    if (this.cpuLoras.length > this.maxCpuLoras) this.cpuLoras.shift();
    return this.profile.loraLoadMs;
  }

  private removeFrom(list: Sequence[], s: Sequence): void {
    const i = list.indexOf(s);
    if (i >= 0) list.splice(i, 1);
  }
}
