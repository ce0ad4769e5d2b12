/**
 * The engine model's mutable state, one object shared by its modules: the
 * facade (engine.ts) accepts and aborts requests, the scheduler steps, the
 * views read. Nothing outside src/model sees it.
 */
import type { Histogram } from './histogram.ts';
import type { HostKvCache } from './host.ts';
import type { BlockPool } from './kv.ts';
import type { LoraSlots } from './lora.ts';
import type { EngineProfile } from './profiles.ts';
import type { Sequence } from './sequence.ts';

/** Cumulative totals, as the engine's Prometheus counters report them. */
export interface EngineCounters {
  /** Prompt tokens looked up in the prefix cache at first admission. */
  prefixQueries: number;
  /** Of those, tokens found in the GPU prefix cache. */
  prefixHits: number;
  /** Prompt tokens looked up in the host tier at first admission (vLLM's external_prefix_cache_queries). */
  hostQueries: number;
  /** Of those, tokens loaded back from host memory (vLLM's external_prefix_cache_hits). */
  hostHits: number;
  /** Tokens of KV loaded from host memory, every admission (a preempted request may reload). */
  hostLoadedTokens: number;
  /** Prompt tokens fetched from other replicas' caches at first admission (KV sharing). */
  peerHits: number;
  preemptions: number;
  /** Prompt tokens of sequences that produced their first token. */
  promptTokens: number;
  generationTokens: number;
  finished: number;
  aborted: number;
  steps: number;
}

/**
 * Other replicas' KV caches, as KV sharing reaches them (LMCache's
 * peer-to-peer sharing, a Mooncake-style store): the deepest prefix of a
 * chain any other replica holds in either tier, fetched at `bytesPerS`.
 */
export interface PeerKv {
  readonly bytesPerS: number;
  /** Leading blocks of `hashes` (at most `max`) the deepest other holder has. */
  held(hashes: BigUint64Array, max: number): number;
}

export interface EngineState {
  readonly profile: EngineProfile;
  readonly blockSize: number;
  /** Largest prompt + output one request may have (tokens). */
  readonly maxModelLen: number;
  readonly pool: BlockPool;
  /** The host-memory tier (capacity 0 when off). */
  readonly host: HostKvCache;
  /** Other replicas' caches (KV sharing on), or undefined. */
  readonly peers: PeerKv | undefined;
  readonly lora: LoraSlots;
  /** In-flight sequences (arriving, waiting or running) by id. */
  readonly byId: Map<string, Sequence>;
  /** Not yet through the front end, sorted by readyAtMs. */
  readonly arriving: Sequence[];
  /** FCFS; preempted sequences return to the head. */
  readonly waiting: Sequence[];
  /** In admission order; the newest is preempted first. */
  running: Sequence[];
  /** Finished prefills whose blocks wait for a remote decode to read them (SimRequest.holdKv), by id. */
  readonly held: Map<string, Sequence>;
  readonly counters: EngineCounters;
  readonly ttft: Histogram;
  readonly itl: Histogram;
  readonly e2e: Histogram;
  enablePrefixCaching: boolean;
  /** vLLM --scheduling-policy priority: waiting sequences by (priority, arrival) instead of arrival. */
  readonly priorityScheduling: boolean;
  /** Fault injection: step durations are multiplied by this. */
  slowFactor: number;
  /** Waiting sequences whose host-memory reload is in flight (vLLM's WAITING_FOR_REMOTE_KVS). */
  loads: Sequence[];
  /** Chain hashes of the blocks those reloads are loading: a prompt continuing into one waits for it. */
  readonly loading: Set<bigint>;
  /** When the host-to-GPU link finishes the reloads queued on it, ms (one copy stream: reloads run one after another). */
  linkFreeMs: number;
  /** Start of the last step that scheduled nothing, ms (NaN after a submit or an abort): nextWakeMs then waits for a reload's end. */
  quietAtMs: number;
}

/** Front-end delay of a prompt (tokenize, schedule) in ms. */
export function frontendDelayMs(profile: EngineProfile, promptTokens: number): number {
  return profile.frontendMs + promptTokens * profile.frontendMsPerToken;
}

/** Returns a sequence's KV blocks to the pool. */
export function freeBlocks(st: EngineState, s: Sequence): void {
  st.pool.release(s.blocks);
  s.blocks.length = 0;
}

/** Ends a sequence's host reload early (aborted): its blocks stop being loaded. */
export function dropLoad(st: EngineState, s: Sequence): void {
  if (!st.loads.includes(s)) return;
  for (let b = s.hashedBlocks; b < s.blocks.length; b++) st.loading.delete(s.blockHashes[b]!);
  removeFrom(st.loads, s);
}

export function removeFrom(list: Sequence[], s: Sequence): void {
  const i = list.indexOf(s);
  if (i >= 0) list.splice(i, 1);
}
