/** @warmpath/agent: the sidecar proxy + state publisher beside one inference engine. */
export { startAgent } from './agent.ts';
export type { Agent, AgentState } from './agent.ts';
export { AGENT_SCHEMA, agentConfig } from './config.ts';
export type { AgentConfig } from './config.ts';
export { CacheModel, chunksFor } from './cache-model.ts';
export { admit, REJECT_REASONS } from './admission.ts';
export type { RejectReason } from './admission.ts';
export { createAdapter } from './engines/index.ts';
export type { EngineAdapter, EngineSnapshot, ModelEntry } from './engines/index.ts';
export { AgentCore } from './core.ts';
export type { Admitted, Inflight } from './core.ts';
export { Publisher } from './publisher.ts';
export type { PublisherOptions } from './publisher.ts';
export { createMetrics } from './metrics.ts';
export type { AgentMetrics } from './metrics.ts';
