/**
 * The simulator's engine readings give the same agent snapshot as the live
 * path: the simulator's /metrics text, parsed by the agent's vLLM adapter.
 */
import { parseVllmMetrics } from '@warmpath/agent';
import { parsePrometheus } from '@warmpath/shared/runtime';
import { EngineModel, PROFILES, renderMetrics } from '@warmpath/sim';
import { describe, expect, it } from 'vitest';
import { simEngineSource } from '../../src/des/engine-source.ts';

const profile = PROFILES['h100-llama3-8b'];

function scrapeBoth(model: EngineModel, loraEnabled: boolean) {
  const text = renderMetrics(model, {
    modelName: 'm',
    createdUnix: 0,
    cacheInfo: { block_size: String(profile.blockSize), num_gpu_blocks: String(profile.numGpuBlocks) },
    loraEnabled,
    loraUpdatedUnix: 1,
  });
  let direct;
  simEngineSource(model, profile, 'm', []).scrape((_err, snap) => (direct = snap));
  return { parsed: parseVllmMetrics(parsePrometheus(text)), direct };
}

describe('simulated engine source', () => {
  it('matches the rendered-and-parsed /metrics snapshot, idle and busy, with and without LoRA', () => {
    for (const maxLoras of [0, 2]) {
      const adapters = maxLoras > 0 ? ['a', 'b', 'c'] : [];
      const model = new EngineModel(profile, { maxLoras, adapters });
      expect(scrapeBoth(model, maxLoras > 0).direct).toEqual(scrapeBoth(model, maxLoras > 0).parsed);
      for (let i = 0; i < 12; i++) {
        const blockHashes = BigUint64Array.from({ length: 40 }, (_, k) => BigInt(1 + (k % (10 + i))));
        model.submit({ id: `r${i}`, promptTokens: 640, maxTokens: 32, blockHashes, adapter: adapters[i % 4] ?? '' }, i);
      }
      let now = 12;
      for (let k = 0; k < 20; k++) now = model.step(now).endMs;
      const { parsed, direct } = scrapeBoth(model, maxLoras > 0);
      expect(parsed.running + parsed.waiting).toBeGreaterThan(0);
      expect(parsed.prefixHits).toBeGreaterThan(0);
      if (maxLoras > 0) expect(parsed.hotAdapters.length).toBeGreaterThan(0);
      expect(direct).toEqual(parsed);
    }
  });
});
