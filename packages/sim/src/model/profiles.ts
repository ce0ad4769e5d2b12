/**
 * Engine profiles: the numbers that make the simulator behave like one GPU
 * replica running vLLM (see docs/ENGINE-SIGNALS.md for where they come from).
 *
 * Step time (roofline, decode is memory-bound, prefill compute-bound):
 *   step_ms = stepOverheadMs
 *           + (weightsBytes + Σ context tokens × kvBytesPerToken) / (hbmBytesPerS × hbmEfficiency) × 1e3
 *           + prefill tokens / prefillTokensPerS × 1e3
 *           + adapter load time (when the batch needs an adapter that is not on the GPU)
 * Per-request front-end cost (tokenize, schedule, detokenize) is charged once,
 * before the request becomes schedulable: frontendMs + promptTokens × frontendMsPerToken.
 */

export interface EngineProfile {
  readonly name: string;
  /** Tokens per KV block (vLLM default 16). */
  readonly blockSize: number;
  /** KV capacity in blocks; capacity in tokens = numGpuBlocks × blockSize. */
  readonly numGpuBlocks: number;
  /** Token budget of one scheduler step (chunked prefill). */
  readonly maxNumBatchedTokens: number;
  /** Most sequences in one batch. */
  readonly maxNumSeqs: number;
  /** Longest prompt + output a request may have (tokens). */
  readonly maxModelLen: number;
  /** Bytes of weights read per step, per GPU (TP shards divide it). */
  readonly weightsBytes: number;
  /** KV bytes read per context token per step, per GPU. */
  readonly kvBytesPerToken: number;
  /** HBM bandwidth per GPU, bytes/s. */
  readonly hbmBytesPerS: number;
  /** Achieved fraction of HBM bandwidth (0.78 on H100 with vLLM). */
  readonly hbmEfficiency: number;
  /** Fixed cost of a step: launch, sampling, scheduling (ms). */
  readonly stepOverheadMs: number;
  /** Prefill throughput on large chunks (tokens/s). */
  readonly prefillTokensPerS: number;
  /** Front-end cost per request before it reaches the scheduler (ms). */
  readonly frontendMs: number;
  /** Front-end tokenization cost per prompt token (ms). */
  readonly frontendMsPerToken: number;
  /** Cold LoRA load from disk into a GPU slot (ms). */
  readonly loraLoadMs: number;
  /** LoRA load from the CPU cache into a GPU slot (ms). */
  readonly loraCpuLoadMs: number;
  /** Effective host-to-device bandwidth per GPU for KV reloads from host memory, bytes/s (PCIe). */
  readonly h2dBytesPerS: number;
  /** Host-memory KV tier in tokens (vLLM's CPU offloading); absent or 0 = off. */
  readonly cpuKvTokens?: number;
}

/** PCIe Gen5 x16 is 64 GB/s per direction; pinned-memory KV copies achieve well under half of it. */
const PCIE_H2D_BYTES_PER_S = 25e9;

const LLAMA3_8B_KV = 32 * 8 * 128 * 2 * 2; // layers × kv heads × head dim × (K,V) × bf16 = 131072 B
const LLAMA3_70B_KV = 80 * 8 * 128 * 2 * 2; // 327680 B, sharded over TP4

export const PROFILES = {
  'h100-llama3-8b': {
    name: 'h100-llama3-8b',
    blockSize: 16,
    numGpuBlocks: 27_000, // 432k tokens at 0.9 memory utilization
    maxNumBatchedTokens: 8192,
    maxNumSeqs: 1024,
    maxModelLen: 131_072,
    weightsBytes: 15.0e9,
    kvBytesPerToken: LLAMA3_8B_KV,
    hbmBytesPerS: 3.35e12,
    hbmEfficiency: 0.78,
    stepOverheadMs: 1.0,
    prefillTokensPerS: 30_000,
    frontendMs: 8,
    frontendMsPerToken: 0.002,
    loraLoadMs: 200,
    loraCpuLoadMs: 3,
    h2dBytesPerS: PCIE_H2D_BYTES_PER_S,
  },
  'a100-llama3-8b': {
    // ≈1.6–2× slower decode, ≈3× slower prefill than H100; vLLM's smaller-GPU defaults.
    name: 'a100-llama3-8b',
    blockSize: 16,
    numGpuBlocks: 26_000,
    maxNumBatchedTokens: 2048,
    maxNumSeqs: 256,
    maxModelLen: 131_072,
    weightsBytes: 15.0e9,
    kvBytesPerToken: LLAMA3_8B_KV,
    hbmBytesPerS: 2.039e12,
    hbmEfficiency: 0.72,
    stepOverheadMs: 1.2,
    prefillTokensPerS: 10_000,
    frontendMs: 8,
    frontendMsPerToken: 0.002,
    loraLoadMs: 250,
    loraCpuLoadMs: 4,
    h2dBytesPerS: PCIE_H2D_BYTES_PER_S,
  },
  'h100x4-llama3-70b': {
    // Tensor parallel over 4 GPUs: weights and KV are sharded, all-reduce adds overhead.
    name: 'h100x4-llama3-70b',
    blockSize: 16,
    numGpuBlocks: 28_836, // 461,376 tokens per pod
    maxNumBatchedTokens: 8192,
    maxNumSeqs: 1024,
    maxModelLen: 131_072,
    weightsBytes: 141e9 / 4,
    kvBytesPerToken: LLAMA3_70B_KV / 4,
    hbmBytesPerS: 3.35e12,
    hbmEfficiency: 0.78,
    stepOverheadMs: 3.0,
    prefillTokensPerS: 12_000,
    frontendMs: 8,
    frontendMsPerToken: 0.002,
    loraLoadMs: 300,
    loraCpuLoadMs: 5,
    h2dBytesPerS: PCIE_H2D_BYTES_PER_S,
  },
  tiny: {
    // Little KV so tests reach exhaustion, preemption and queueing quickly.
    name: 'tiny',
    blockSize: 16,
    numGpuBlocks: 256, // 4096 tokens
    maxNumBatchedTokens: 512,
    maxNumSeqs: 16,
    maxModelLen: 4096,
    weightsBytes: 1.0e9,
    kvBytesPerToken: LLAMA3_8B_KV,
    hbmBytesPerS: 3.35e12,
    hbmEfficiency: 0.78,
    stepOverheadMs: 1.0,
    prefillTokensPerS: 30_000,
    frontendMs: 1,
    frontendMsPerToken: 0.002,
    loraLoadMs: 100,
    loraCpuLoadMs: 2,
    h2dBytesPerS: PCIE_H2D_BYTES_PER_S,
  },
} as const satisfies Record<string, EngineProfile>;

export type ProfileName = keyof typeof PROFILES;

export const PROFILE_NAMES = Object.keys(PROFILES) as ProfileName[];

export function isProfileName(name: string): name is ProfileName {
  return Object.hasOwn(PROFILES, name);
}

/** Duration of one step (ms) before the slow factor. */
export function stepTimeMs(p: EngineProfile, contextTokens: number, prefillTokens: number, loadMs: number): number {
  return (
    p.stepOverheadMs +
    ((p.weightsBytes + contextTokens * p.kvBytesPerToken) / (p.hbmBytesPerS * p.hbmEfficiency)) * 1e3 +
    (prefillTokens / p.prefillTokensPerS) * 1e3 +
    loadMs
  );
}

/** Time to load `tokens` of KV from host memory back to the GPU (ms). */
export function hostReloadMs(p: EngineProfile, tokens: number): number {
  return ((tokens * p.kvBytesPerToken) / p.h2dBytesPerS) * 1e3;
}

/**
 * The network KV sharing fetches a peer's KV over (LMCache's peer-to-peer
 * sharing, a Mooncake-style store): 100 Gb/s per replica, bytes/s.
 */
export const NET_KV_BYTES_PER_S = 12.5e9;

/** Time to fetch `tokens` of KV from another replica at `bytesPerS` (ms). */
export function peerFetchMs(p: EngineProfile, tokens: number, bytesPerS: number): number {
  return ((tokens * p.kvBytesPerToken) / bytesPerS) * 1e3;
}
