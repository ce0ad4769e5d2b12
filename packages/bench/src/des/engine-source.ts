/**
 * The simulator's engine as the agent core's engine source, read the way the
 * live agent reads a vLLM engine: the engine model's readings under the names
 * its /metrics rendering gives them (packages/sim server/metrics.ts), mapped
 * to a snapshot by the agent's vLLM adapter (`vllmSnapshot`) — the one
 * mapping live and simulated agents share. A test checks that these readings
 * give the same snapshot as rendering /metrics and parsing it.
 * Why not render and parse: the text round trip costs CPU in proportion to
 * the replicas, and at 1,000 of them it dominates the run (docs/ARCHITECTURE.md,
 * "One model, two clocks").
 */
import { vllmSnapshot, type EngineSource, type ModelEntry, type VllmReadings } from '@warmpath/agent';
import type { EngineModel, EngineProfile } from '@warmpath/sim';

/** The engine model's vLLM readings, as its /metrics would report them (one engine, index 0). */
export function simReadings(model: EngineModel, profile: EngineProfile): VllmReadings {
  const s = model.snapshot();
  return {
    running: s.running,
    waiting: s.waiting,
    kvUsage: s.kvUsage,
    prefixQueries: s.prefixQueriesTokens,
    prefixHits: s.prefixHitsTokens,
    preemptions: s.preemptions,
    promptTokens: s.promptTokens,
    requestSuccess: s.finishedRequests,
    cacheConfig: [{ engine: '0', blocks: String(profile.numGpuBlocks), blockSize: String(profile.blockSize) }],
    // vllm:lora_requests_info exists only with LoRA enabled.
    lora:
      s.lora.maxLoras > 0
        ? { running: s.lora.running.join(','), waiting: s.lora.waiting.join(','), maxLora: String(s.lora.maxLoras) }
        : undefined,
    itl: { bounds: [...model.itl.bounds, Number.POSITIVE_INFINITY], cumulative: model.itl.cumulative() },
  };
}

export function simEngineSource(
  model: EngineModel,
  profile: EngineProfile,
  modelName: string,
  adapters: readonly string[],
): EngineSource {
  const models: ModelEntry[] = [
    { id: modelName, parent: undefined },
    ...adapters.map((a) => ({ id: a, parent: modelName })),
  ];
  return {
    endpoints: ['chat', 'completion', 'responses'],
    scrape: (done) => done(undefined, vllmSnapshot(simReadings(model, profile))),
    models: (done) => done(undefined, models),
  };
}
