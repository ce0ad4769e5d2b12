/**
 * @warmpath/sim: an inference-engine simulator speaking vLLM's HTTP dialect.
 * The engine model (src/model) is pure and clock-injected, so the same code
 * runs behind real HTTP (startSimServer) and inside the discrete-event fleet
 * simulator in virtual time.
 */
export { EngineModel, EngineError } from './model/engine.ts';
export type { EngineOptions, PeerKv } from './model/engine.ts';
export { Sequence, SeqStatus } from './model/sequence.ts';
export type { SimRequest } from './model/sequence.ts';
export type { StepResult } from './model/scheduler.ts';
export type { EngineSnapshot, ProbeResult } from './model/views.ts';
export type { LoraState } from './model/lora.ts';
export {
  NET_KV_BYTES_PER_S,
  PROFILES,
  PROFILE_NAMES,
  hostReloadMs,
  isProfileName,
  peerFetchMs,
  stepTimeMs,
} from './model/profiles.ts';
export type { EngineProfile, ProfileName } from './model/profiles.ts';
export { estimateTokens, promptIdentity, promptIdentityOfBody } from './model/prompt.ts';
export type { PromptIdentity, PromptOptions } from './model/prompt.ts';
export { BlockPool } from './model/kv.ts';
export { kvTransferMs } from './model/transfer.ts';
export type { KvLink } from './model/transfer.ts';
export { ROLES, KV_FAILURE_POLICIES } from './server/disagg.ts';
export type { Role, KvFailurePolicy } from './server/disagg.ts';
export { Histogram, TTFT_BUCKETS, ITL_BUCKETS, E2E_BUCKETS } from './model/histogram.ts';
export { startSimServer } from './server/server.ts';
export { DEFAULT_MODEL } from './server/config.ts';
export { VLLM_VERSION } from './server/routes.ts';
export type { SimServer, SimServerOptions } from './server/server.ts';
export { RealTimeDriver } from './server/driver.ts';
export { applyFaultJson, applyFaultSpec, noFaults, parseDuration, FAULT_HELP } from './server/faults.ts';
export type { FaultState } from './server/faults.ts';
export { renderMetrics, pyFloat } from './server/metrics.ts';
