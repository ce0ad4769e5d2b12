/**
 * The simulator's engine as the agent core's engine source, read the way the
 * live agent reads a vLLM engine: the engine model's /metrics text, rendered
 * by the simulator (the same rendering its HTTP server serves), parsed by the
 * agent's vLLM adapter. So the engine-snapshot mapping exists once, and the
 * simulation exercises it.
 * Complexity: O(metric lines) per scrape (a few dozen lines).
 */
import { parseVllmMetrics, type EngineSource, type ModelEntry } from '@warmpath/agent';
import { parsePrometheus } from '@warmpath/shared/runtime';
import { renderMetrics, type EngineModel, type EngineProfile } from '@warmpath/sim';

export function simEngineSource(model: EngineModel, profile: EngineProfile, modelName: string, adapters: readonly string[]): EngineSource {
  const ctx = {
    modelName,
    createdUnix: 0,
    // The labels the vLLM adapter reads (capacity, restart fingerprint); the HTTP server adds more.
    cacheInfo: { block_size: String(profile.blockSize), num_gpu_blocks: String(profile.numGpuBlocks) },
    loraEnabled: model.snapshot().lora.maxLoras > 0,
    loraUpdatedUnix: 0,
  };
  const models: ModelEntry[] = [{ id: modelName, parent: undefined }, ...adapters.map((a) => ({ id: a, parent: modelName }))];
  return {
    endpoints: ['chat', 'completion', 'responses'],
    scrape: (done) => done(undefined, parseVllmMetrics(parsePrometheus(renderMetrics(model, ctx)))),
    models: (done) => done(undefined, models),
  };
}
