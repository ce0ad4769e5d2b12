/**
 * One scheduler iteration + one forward pass of a vLLM-V1-like replica.
 *
 * Steps of `runStep(state, now)`:
 *  1. Arrivals whose front-end delay has passed join the FCFS waiting queue
 *     (under the priority policy: after every waiting sequence of the same or
 *     a lower priority value, so by priority, then arrival).
 *  2. Running sequences, in admission order, each get min(remaining, budget)
 *     tokens (a prefill chunk, or 1 decode token). When blocks run out a
 *     running sequence is preempted (recompute: its blocks are freed, it
 *     returns to the waiting queue), until the allocation fits: the newest,
 *     at the head of the queue; under the priority policy, as vLLM V1, the
 *     one of the highest priority value, then latest arrival (if it was
 *     already scheduled this step, its tokens go back to the budget), back
 *     in the queue by priority, then arrival. Running sequences are never
 *     preempted for waiting ones, under either policy (vLLM V1 has no such
 *     preemption).
 *  3. If nothing was preempted, waiting sequences are admitted FCFS while the
 *     token budget, max_num_seqs and free blocks allow. Each reuses its longest
 *     cached prefix (full blocks, at most prompt-1 tokens, as vLLM): first the
 *     GPU's; a continuation in the host tier is reloaded as vLLM's offloading
 *     connector does (load_kv_async): the sequence takes its blocks and waits
 *     while they are copied in at the PCIe bandwidth, one reload after another,
 *     beside the steps (others are admitted meanwhile; one whose host blocks
 *     are being loaded for another waits for that load); once loaded it is
 *     admitted holding them, with no second lookup (vLLM's MultiConnector
 *     takes one connector's hit). Without a host hit, with KV sharing, what
 *     another replica holds beyond the GPU's hit is fetched at the network's
 *     bandwidth, charged to the step (LMCache's connector loads in the forward
 *     pass unless its async_loading is on). A sequence whose adapter would
 *     exceed max_loras distinct adapters is skipped (deferred); a sequence
 *     that does not fit in free blocks stops admission.
 *  4. Adapters in the batch that are not on the GPU take a slot (evicting an
 *     idle one, LRU) and charge a load time to the step.
 *  5. Step duration from the roofline in profiles.ts; all effects are applied
 *     now and stamped at now + duration (the caller must not step again before).
 * Complexity: O(running + scanned waiting + allocated blocks) per step.
 * Trade-off: applying a step's effects at its start keeps the model a single
 * call per step (no in-flight state); drivers deliver the returned events when
 * the step's time has elapsed and drop events of sequences aborted meanwhile.
 * A peer fetch charged to the step stalls the batch with it (exact for a
 * synchronous load); a host reload delays only its own sequence and those
 * waiting on its blocks, and is seen at step granularity (the first step
 * starting after it ends admits the sequence, as vLLM reports a finished
 * load with a step's output).
 */
import { hostReloadMs, peerFetchMs, stepTimeMs } from './profiles.ts';
import { SeqStatus } from './sequence.ts';
import type { Sequence } from './sequence.ts';
import { freeBlocks } from './state.ts';
import type { EngineState } from './state.ts';

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
  /** Peer KV fetch time charged to this step (ms); host reloads run beside the steps. */
  readonly kvLoadMs: number;
}

/** What this step schedules, built by steps 2 and 3. */
interface Batch {
  /** Tokens still schedulable this step. */
  budget: number;
  readonly scheduled: Sequence[];
  /** Tokens scheduled for each of `scheduled`. */
  readonly counts: number[];
  readonly preempted: Sequence[];
  /** Tokens of KV the forward pass reads (context of every scheduled sequence). */
  contextTokens: number;
  prefillTokens: number;
  /** Time to fetch the KV sequences admitted this step found on other replicas (KV sharing), ms. */
  fetchMs: number;
}

export function runStep(st: EngineState, now: number): StepResult {
  st.pool.now = now;
  finishLoads(st, now);
  admitArrivals(st, now);
  const batch: Batch = {
    budget: st.profile.maxNumBatchedTokens,
    scheduled: [],
    counts: [],
    preempted: [],
    contextTokens: 0,
    prefillTokens: 0,
    fetchMs: 0,
  };
  scheduleRunning(st, batch);
  // vLLM skips admission in a step that preempted.
  if (batch.preempted.length === 0) admitWaiting(st, batch, now);
  if (batch.scheduled.length === 0) {
    st.quietAtMs = now;
    return {
      durationMs: 0,
      endMs: now,
      emitted: [],
      finished: [],
      preempted: batch.preempted,
      scheduledSeqs: 0,
      scheduledTokens: 0,
      loraLoadMs: 0,
      kvLoadMs: 0,
    };
  }
  const loadMs = st.lora.loadActive();
  const kvLoadMs = batch.fetchMs;
  const durationMs =
    stepTimeMs(st.profile, batch.contextTokens, batch.prefillTokens, loadMs + kvLoadMs) * st.slowFactor;
  return applyStep(st, batch, now, durationMs, loadMs, kvLoadMs);
}

/** Step 1: arrivals through the front end join the waiting queue. */
function admitArrivals(st: EngineState, now: number): void {
  let k = 0;
  while (k < st.arriving.length && st.arriving[k]!.readyAtMs <= now) {
    const s = st.arriving[k]!;
    s.status = SeqStatus.waiting;
    if (!st.priorityScheduling) st.waiting.push(s);
    else {
      let j = st.waiting.length;
      while (j > 0 && st.waiting[j - 1]!.priority > s.priority) j--;
      st.waiting.splice(j, 0, s);
    }
    k++;
  }
  if (k > 0) st.arriving.splice(0, k);
}

/** Step 2: running sequences get their next chunk, preempting (victimOf) while blocks run out. */
function scheduleRunning(st: EngineState, batch: Batch): void {
  const bs = st.blockSize;
  for (let i = 0; i < st.running.length && batch.budget > 0; i++) {
    const s = st.running[i]!;
    const want = Math.min(s.numTokens - s.computed, batch.budget);
    const need = Math.ceil((s.computed + want) / bs) - s.blocks.length;
    let ok = need <= 0 || st.pool.allocate(need, s.blocks);
    while (!ok) {
      const v = victimOf(st);
      const victim = st.running[v]!;
      unschedule(batch, victim);
      preempt(st, v);
      batch.preempted.push(victim);
      if (v < i) i--; // the loop's place stays on `s`
      if (victim === s) break;
      ok = st.pool.allocate(need, s.blocks);
    }
    if (!ok) break;
    if (s.numTokens - s.computed > 1) batch.prefillTokens += want;
    batch.contextTokens += s.computed + want;
    batch.budget -= want;
    batch.scheduled.push(s);
    batch.counts.push(want);
    commitHashes(st, s, s.computed + want);
  }
}

/** The running sequence to preempt: the newest; under the priority policy, the first of the highest (priority, arrival), as vLLM V1's max(). */
function victimOf(st: EngineState): number {
  const run = st.running;
  if (!st.priorityScheduling) return run.length - 1;
  let v = 0;
  for (let k = 1; k < run.length; k++) {
    const a = run[k]!;
    const b = run[v]!;
    if (a.priority > b.priority || (a.priority === b.priority && a.arrivalMs > b.arrivalMs)) v = k;
  }
  return v;
}

/** A victim scheduled earlier in this step gives its tokens back (read before preempt() resets `computed`). */
function unschedule(batch: Batch, s: Sequence): void {
  const k = batch.scheduled.indexOf(s);
  if (k < 0) return;
  const n = batch.counts[k]!;
  batch.budget += n;
  batch.contextTokens -= s.computed + n;
  if (s.numTokens - s.computed > 1) batch.prefillTokens -= n;
  batch.scheduled.splice(k, 1);
  batch.counts.splice(k, 1);
}

/** Step 3: FCFS admission, reusing each sequence's longest cached prefix. */
function admitWaiting(st: EngineState, batch: Batch, now: number): void {
  const bs = st.blockSize;
  let j = 0;
  while (j < st.waiting.length && batch.budget > 0 && st.running.length < st.profile.maxNumSeqs) {
    const s = st.waiting[j]!;
    // Deferred (its adapter has no slot), or its reload is in flight: later ones may go first.
    if (st.lora.deferred(s.adapter) || s.loadEndMs > now) {
      j++;
      continue;
    }
    const loaded = s.blocks.length;
    const maxHit = Math.floor((s.numTokens - 1) / bs);
    const hit = loaded === 0 && st.enablePrefixCaching ? st.pool.match(s.blockHashes, maxHit) : 0;
    // Received KV: every prompt token but the last is already computed (the last is recomputed to sample, as vLLM's consumer does).
    const fresh = loaded === 0 && !s.kvReceived;
    const hostHit = fresh && st.enablePrefixCaching ? st.host.match(s.blockHashes, hit, maxHit, false) : 0;
    if (hostHit > 0) {
      // Blocks being loaded for another: it waits for that load. `loaded`: reloaded, its blocks held, no second lookup.
      if (st.loading.has(s.blockHashes[hit]!)) j++;
      else if (startReload(st, s, hit, hostHit, now)) j++;
      else break; // FCFS: the head waits for blocks
      continue;
    }
    const peerHit = st.peers !== undefined && fresh ? peerHitOf(st, s.blockHashes, hit, maxHit) : 0;
    const computed = s.kvReceived ? s.numTokens - 1 : loaded > 0 ? s.computed : (hit + peerHit) * bs;
    const want = Math.min(s.numTokens - computed, batch.budget);
    const need = Math.ceil((computed + want) / bs) - hit - loaded;
    const available = st.pool.numFree - (hit > 0 ? st.pool.freeAmongMatched(s.blockHashes, hit) : 0);
    if (need > available) break; // FCFS: the head waits for blocks
    st.pool.acquireCached(s.blockHashes, hit, s.blocks);
    st.pool.allocate(need, s.blocks);
    if (loaded === 0) {
      s.computed = computed;
      s.hashedBlocks = hit;
    }
    s.loadEndMs = Number.NaN;
    if (peerHit > 0) batch.fetchMs += peerFetchMs(st.profile, peerHit * bs, st.peers!.bytesPerS);
    if (!s.admitted) {
      s.admittedMs = now;
      countAdmission(st, s, hit, 0, peerHit);
    }
    s.status = SeqStatus.running;
    st.waiting.splice(j, 1);
    st.running.push(s);
    st.lora.acquire(s.adapter);
    if (s.numTokens - computed > 1) batch.prefillTokens += want;
    batch.contextTokens += computed + want;
    batch.budget -= want;
    batch.scheduled.push(s);
    batch.counts.push(want);
    commitHashes(st, s, computed + want);
  }
}

/**
 * A host hit, as vLLM's offloading connector loads it (load_kv_async): the
 * sequence takes its GPU hit and fresh blocks for the host blocks, which are
 * copied in at the PCIe bandwidth after the reloads queued before it, while
 * it stays in the waiting queue and every other sequence keeps stepping.
 * The blocks stay in host memory too. False, with nothing taken, if the
 * blocks do not fit.
 */
function startReload(st: EngineState, s: Sequence, hit: number, hostHit: number, now: number): boolean {
  const available = st.pool.numFree - (hit > 0 ? st.pool.freeAmongMatched(s.blockHashes, hit) : 0);
  if (hostHit > available) return false;
  st.pool.acquireCached(s.blockHashes, hit, s.blocks);
  st.pool.allocate(hostHit, s.blocks);
  st.host.match(s.blockHashes, hit, hit + hostHit, true);
  const tokens = hostHit * st.blockSize;
  st.counters.hostLoadedTokens += tokens;
  s.hashedBlocks = hit;
  s.loadEndMs = Math.max(now, st.linkFreeMs) + hostReloadMs(st.profile, tokens);
  st.linkFreeMs = s.loadEndMs;
  for (let b = hit; b < hit + hostHit; b++) st.loading.add(s.blockHashes[b]!);
  st.loads.push(s);
  if (!s.admitted) {
    s.admittedMs = now;
    countAdmission(st, s, hit, hostHit, 0);
  }
  return true;
}

/** Reloads that ended by `now`: their blocks are computed and join the prefix cache (vLLM caches them when the load is reported done). */
function finishLoads(st: EngineState, now: number): void {
  if (st.loads.length === 0) return;
  st.loads = st.loads.filter((s) => {
    if (s.loadEndMs > now) return true;
    for (let b = s.hashedBlocks; b < s.blocks.length; b++) st.loading.delete(s.blockHashes[b]!);
    s.computed = s.blocks.length * st.blockSize;
    commitHashes(st, s, s.computed);
    return false;
  });
}

/** Blocks past `local` that the deepest other replica holds (KV sharing), up to maxHit. */
function peerHitOf(st: EngineState, hashes: BigUint64Array, local: number, maxHit: number): number {
  if (!st.enablePrefixCaching || local >= maxHit) return 0;
  return Math.max(0, st.peers!.held(hashes, maxHit) - local);
}

/** First admission: cached_tokens counts both tiers, as vLLM's num_cached_tokens (local + external); the counters keep them apart. */
function countAdmission(st: EngineState, s: Sequence, hit: number, hostHit: number, peerHit: number): void {
  s.admitted = true;
  s.cachedTokens = (hit + hostHit + peerHit) * st.blockSize;
  st.counters.peerHits += peerHit * st.blockSize;
  st.counters.prefixQueries += s.promptTokens;
  st.counters.prefixHits += hit * st.blockSize;
  if (st.host.capacity > 0) {
    st.counters.hostQueries += s.promptTokens;
    st.counters.hostHits += hostHit * st.blockSize;
  }
}

/** Step 5: the batch's tokens are computed; sequences past their prompt sample one token, stamped at the step's end. */
function applyStep(
  st: EngineState,
  batch: Batch,
  now: number,
  durationMs: number,
  loadMs: number,
  kvLoadMs: number,
): StepResult {
  const end = now + durationMs;
  st.counters.steps++;
  const emitted: Sequence[] = [];
  const finished: Sequence[] = [];
  let tokens = 0;
  for (let i = 0; i < batch.scheduled.length; i++) {
    const s = batch.scheduled[i]!;
    const n = batch.counts[i]!;
    tokens += n;
    s.computed += n;
    if (s.computed < s.numTokens) continue; // mid-prefill chunk
    s.generated++;
    st.counters.generationTokens++;
    if (s.generated === 1) {
      s.firstTokenMs = end;
      st.ttft.observe((end - s.arrivalMs) / 1e3);
      st.counters.promptTokens += s.promptTokens;
    } else {
      st.itl.observe((end - s.lastTokenMs) / 1e3);
    }
    s.lastTokenMs = end;
    emitted.push(s);
    if (s.generated >= s.maxTokens || s.numTokens >= st.maxModelLen) {
      finish(st, s, end);
      finished.push(s);
    }
  }
  if (finished.length > 0) st.running = st.running.filter((s) => s.status === SeqStatus.running);
  const preempted = batch.preempted;
  return {
    durationMs,
    endMs: end,
    emitted,
    finished,
    preempted,
    scheduledSeqs: batch.scheduled.length,
    scheduledTokens: tokens,
    loraLoadMs: loadMs,
    kvLoadMs,
  };
}

function finish(st: EngineState, s: Sequence, end: number): void {
  s.status = SeqStatus.finished;
  s.finishedMs = end;
  st.e2e.observe((end - s.arrivalMs) / 1e3);
  if (s.holdKv) st.held.set(s.id, s);
  else freeBlocks(st, s);
  st.lora.release(s.adapter);
  st.byId.delete(s.id);
  st.counters.finished++;
}

/** Recompute preemption of running[v]: blocks freed, back to the head of the queue (priority policy: to its place by priority, then arrival). */
function preempt(st: EngineState, v: number): void {
  const s = st.running[v]!;
  st.running.splice(v, 1);
  freeBlocks(st, s);
  s.computed = 0;
  s.hashedBlocks = 0;
  s.preemptions++;
  s.kvReceived = false;
  s.status = SeqStatus.waiting;
  st.lora.release(s.adapter);
  if (!st.priorityScheduling) st.waiting.unshift(s);
  else {
    let j = 0;
    while (j < st.waiting.length && !after(st.waiting[j]!, s)) j++;
    st.waiting.splice(j, 0, s);
  }
  st.counters.preemptions++;
}

/** Whether `a` comes after `s` in a priority queue: a higher priority value, or the same and a later arrival. */
function after(a: Sequence, s: Sequence): boolean {
  return a.priority > s.priority || (a.priority === s.priority && a.arrivalMs > s.arrivalMs);
}

/** Registers the sequence's newly completed full blocks in the prefix cache. */
function commitHashes(st: EngineState, s: Sequence, computedAfter: number): void {
  if (!st.enablePrefixCaching) return;
  const full = Math.min(Math.floor(computedAfter / st.blockSize), s.blockHashes.length);
  for (let b = s.hashedBlocks; b < full; b++) st.pool.commit(s.blocks[b]!, s.blockHashes, b);
  if (full > s.hashedBlocks) s.hashedBlocks = full;
}
