/**
 * @warmpath/agent: the sidecar proxy + state publisher beside one inference
 * engine (`startAgent`), and the transport-free agent core the live agent and
 * the discrete-event simulator both drive.
 */
export { startAgent } from './agent.ts';
export type { Agent, AgentOptions, AgentState } from './agent.ts';
export { AGENT_SCHEMA, agentConfig } from './config.ts';
export type { AgentConfig } from './config.ts';
export { AgentCore } from './core.ts';
export type { AgentCoreOptions, EngineEvent, Refusal } from './core.ts';
export type { Admitted } from './ledger.ts';
export type { ReplicaIdentity } from './publisher.ts';
export { REJECT_REASONS } from './admission.ts';
export { ENGINE_PRIORITY } from './priority.ts';
export type { RejectReason } from './admission.ts';
export { createAdapter, adapterSource } from './engines/index.ts';
export { parseVllmMetrics, readVllm, vllmSnapshot } from './engines/vllm.ts';
export type { VllmReadings } from './engines/vllm.ts';
export type { EngineAdapter, EngineSnapshot, EngineSource, ModelEntry } from './engines/index.ts';
export { createMetrics } from './metrics.ts';
export type { AgentMetrics } from './metrics.ts';
