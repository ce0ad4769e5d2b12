/**
 * EngineModel: one vLLM-V1-like inference replica, pure and clock-injected.
 * Nothing here reads a clock, sets a timer or does I/O: the HTTP simulator
 * drives it in (scaled) real time, the fleet simulator in virtual time.
 *
 * This is the facade; the parts live beside it: sequence.ts (one request),
 * state.ts (the shared state), scheduler.ts (the step: arrivals, running
 * chunks with preemption, FCFS admission, adapter loads, effects), lora.ts
 * (LoRA slots), kv.ts (paged blocks and the prefix cache), host.ts (the
 * host-memory tier evicted blocks move to), views.ts (probe
 * and snapshot), profiles.ts (the step-time roofline), transfer.ts (the KV
 * link between a prefill and a decode worker).
 */
import { E2E_BUCKETS, Histogram, ITL_BUCKETS, TTFT_BUCKETS } from './histogram.ts';
import { HostKvCache } from './host.ts';
import { BlockPool } from './kv.ts';
import { LoraSlots } from './lora.ts';
import type { EngineProfile } from './profiles.ts';
import { runStep } from './scheduler.ts';
import type { StepResult } from './scheduler.ts';
import { Sequence, SeqStatus } from './sequence.ts';
import type { SimRequest } from './sequence.ts';
import { dropLoad, freeBlocks, frontendDelayMs, removeFrom } from './state.ts';
import type { EngineState, PeerKv } from './state.ts';
import { checkInvariants, probe, snapshot } from './views.ts';
import type { EngineSnapshot, ProbeResult } from './views.ts';

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
  /** Host-memory KV tier in tokens (vLLM's CPU offloading); default the profile's, 0 = off. */
  readonly cpuKvTokens?: number;
  /** vLLM --scheduling-policy priority: the waiting queue by request priority (lower first), then arrival. */
  readonly priorityScheduling?: boolean;
  /** KV sharing: a prefix another replica holds is fetched from it instead of prefilled. */
  readonly peers?: PeerKv;
}

export class EngineError extends Error {
  readonly code: 'invalid_request' | 'adapter_not_found' | 'duplicate_id';
  constructor(code: EngineError['code'], message: string) {
    super(message);
    this.name = 'EngineError';
    this.code = code;
  }
}

export type { PeerKv } from './state.ts';

export class EngineModel {
  readonly profile: EngineProfile;
  readonly blockSize: number;
  readonly maxLoras: number;
  readonly maxCpuLoras: number;

  readonly ttft = new Histogram(TTFT_BUCKETS);
  readonly itl = new Histogram(ITL_BUCKETS);
  readonly e2e = new Histogram(E2E_BUCKETS);

  readonly #st: EngineState;

  constructor(profile: EngineProfile, options: EngineOptions = {}) {
    this.profile = profile;
    this.blockSize = profile.blockSize;
    this.maxLoras = options.maxLoras ?? 1;
    this.maxCpuLoras = Math.max(this.maxLoras, options.maxCpuLoras ?? 4);
    const host = new HostKvCache((options.cpuKvTokens ?? profile.cpuKvTokens ?? 0) / profile.blockSize);
    this.#st = {
      profile,
      blockSize: profile.blockSize,
      maxModelLen: Math.min(profile.maxModelLen, profile.numGpuBlocks * profile.blockSize),
      pool: new BlockPool(profile.numGpuBlocks, host.capacity > 0 ? host : undefined),
      host,
      peers: options.peers,
      lora: new LoraSlots(this.maxLoras, this.maxCpuLoras, profile),
      byId: new Map(),
      arriving: [],
      waiting: [],
      running: [],
      held: new Map(),
      counters: {
        prefixQueries: 0,
        prefixHits: 0,
        hostQueries: 0,
        hostHits: 0,
        hostLoadedTokens: 0,
        peerHits: 0,
        preemptions: 0,
        promptTokens: 0,
        generationTokens: 0,
        finished: 0,
        aborted: 0,
        steps: 0,
      },
      ttft: this.ttft,
      itl: this.itl,
      e2e: this.e2e,
      enablePrefixCaching: options.enablePrefixCaching ?? true,
      priorityScheduling: options.priorityScheduling === true,
      slowFactor: options.slowFactor ?? 1,
      loads: [],
      loading: new Set(),
      linkFreeMs: 0,
      quietAtMs: Number.NaN,
    };
    for (const a of options.adapters ?? []) this.registerAdapter(a);
  }

  get enablePrefixCaching(): boolean {
    return this.#st.enablePrefixCaching;
  }

  set enablePrefixCaching(on: boolean) {
    this.#st.enablePrefixCaching = on;
  }

  /** Fault injection: step durations are multiplied by this. */
  get slowFactor(): number {
    return this.#st.slowFactor;
  }

  set slowFactor(factor: number) {
    this.#st.slowFactor = factor;
  }

  /** Largest prompt + output one request may have (tokens). */
  get maxModelLen(): number {
    return this.#st.maxModelLen;
  }

  // ---- adapters -----------------------------------------------------------

  registerAdapter(name: string): boolean {
    return this.#st.lora.register(name);
  }

  /** Unregisters; running sequences keep their adapter until they finish. */
  unregisterAdapter(name: string): boolean {
    return this.#st.lora.unregister(name);
  }

  hasAdapter(name: string): boolean {
    return this.#st.lora.has(name);
  }

  get adapters(): readonly string[] {
    return this.#st.lora.registered;
  }

  // ---- requests -----------------------------------------------------------

  /** Front-end delay of a prompt (tokenize, schedule) in ms. */
  frontendDelayMs(promptTokens: number): number {
    return frontendDelayMs(this.profile, promptTokens);
  }

  /** Accepts a request at `now` (ms). Throws EngineError on an invalid one. */
  submit(r: SimRequest, now: number): Sequence {
    const st = this.#st;
    if (st.byId.has(r.id)) throw new EngineError('duplicate_id', `request id ${r.id} is already in flight`);
    if (!(r.promptTokens >= 1) || !(r.maxTokens >= 1))
      throw new EngineError('invalid_request', 'promptTokens and maxTokens must be >= 1');
    if (r.promptTokens + r.maxTokens > st.maxModelLen)
      throw new EngineError(
        'invalid_request',
        `This model's maximum context length is ${st.maxModelLen} tokens. However, you requested ${r.promptTokens + r.maxTokens} tokens (${r.promptTokens} in the messages, ${r.maxTokens} in the completion).`,
      );
    // As vLLM: a priority other than 0 needs the priority policy.
    if ((r.priority ?? 0) !== 0 && !st.priorityScheduling)
      throw new EngineError('invalid_request', `Got priority ${r.priority} but Priority scheduling is not enabled.`);
    const adapter = r.adapter ?? '';
    if (adapter !== '') {
      if (this.maxLoras === 0) throw new EngineError('invalid_request', 'LoRA is not enabled on this engine');
      if (!st.lora.has(adapter))
        throw new EngineError('adapter_not_found', `The LoRA adapter '${adapter}' is not registered`);
    }
    const s = new Sequence(r, now, now + this.frontendDelayMs(r.promptTokens) + (r.readyDelayMs ?? 0));
    st.byId.set(s.id, s);
    st.quietAtMs = Number.NaN;
    // Keep `arriving` sorted by readyAtMs; arrivals are nearly ordered, so scan from the back.
    let i = st.arriving.length;
    while (i > 0 && st.arriving[i - 1]!.readyAtMs > s.readyAtMs) i--;
    st.arriving.splice(i, 0, s);
    return s;
  }

  get(id: string): Sequence | undefined {
    return this.#st.byId.get(id);
  }

  /** Cancels a request (client gone); frees its blocks. False if unknown or already done. */
  abort(id: string): boolean {
    const st = this.#st;
    const s = st.byId.get(id);
    if (s === undefined) return false;
    st.byId.delete(id);
    if (s.status === SeqStatus.running) {
      removeFrom(st.running, s);
      freeBlocks(st, s);
      st.lora.release(s.adapter);
    } else if (s.status === SeqStatus.waiting) {
      removeFrom(st.waiting, s);
      dropLoad(st, s);
      freeBlocks(st, s);
    } else if (s.status === SeqStatus.arriving) {
      removeFrom(st.arriving, s);
    }
    s.status = SeqStatus.aborted;
    st.counters.aborted++;
    st.quietAtMs = Number.NaN;
    return true;
  }

  /** Frees the blocks of a finished holdKv sequence (its KV was read, or nobody came for it). False if none is held under `id`. */
  releaseHeld(id: string): boolean {
    const st = this.#st;
    const s = st.held.get(id);
    if (s === undefined) return false;
    st.held.delete(id);
    freeBlocks(st, s);
    return true;
  }

  /** Finished prefills still holding their blocks for a remote decode. */
  get heldCount(): number {
    return this.#st.held.size;
  }

  /**
   * Earliest time (ms) at which `step` could do work: `now` if busy, Infinity
   * if idle. After a step at `now` that scheduled nothing while host reloads
   * are in flight, the first reload's end (or arrival): only that can free a
   * waiting sequence.
   */
  nextWakeMs(now: number): number {
    const st = this.#st;
    if (st.running.length > 0) return now;
    const first = st.arriving[0];
    let wake = first === undefined ? Number.POSITIVE_INFINITY : Math.max(now, first.readyAtMs);
    if (st.waiting.length > 0) {
      if (st.loads.length === 0 || st.quietAtMs !== now) return now;
      for (const s of st.loads) wake = Math.min(wake, Math.max(now, s.loadEndMs));
    }
    return wake;
  }

  get idle(): boolean {
    const st = this.#st;
    return st.running.length === 0 && st.waiting.length === 0 && st.arriving.length === 0;
  }

  /** One scheduler iteration + forward pass starting at `now` (see scheduler.ts). */
  step(now: number): StepResult {
    return runStep(this.#st, now);
  }

  // ---- views --------------------------------------------------------------

  /** What would happen to this prompt right now (oracle for the benchmark and the agent's cache model). */
  probe(promptTokens: number, blockHashes: BigUint64Array, adapter = ''): ProbeResult {
    return probe(this.#st, promptTokens, blockHashes, adapter);
  }

  snapshot(): EngineSnapshot {
    return snapshot(this.#st);
  }

  /** Leading blocks of `hashes` (at most `max`) this engine holds in either tier: what a peer could fetch from it. */
  heldBlocks(hashes: BigUint64Array, max: number): number {
    const st = this.#st;
    if (!st.enablePrefixCaching) return 0;
    const hit = st.pool.match(hashes, max);
    return hit + st.host.match(hashes, hit, max, false);
  }

  /** Drops unreferenced cached blocks, and the host tier's; returns how many GPU blocks. */
  resetPrefixCache(): number {
    this.#st.host.clear();
    return this.#st.pool.resetPrefixCache();
  }

  /** Test hook: throws if the block pool's bookkeeping is inconsistent. */
  checkInvariants(): void {
    checkInvariants(this.#st);
  }
}
