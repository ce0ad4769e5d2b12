/**
 * vLLM adapter (V1 and older builds). Reads /metrics (names old and new,
 * summed over the `engine` label for data parallel) and /v1/models (LoRA
 * entries carry `parent`).
 * Capacity: vllm:cache_config_info labels num_gpu_blocks × block_size, per
 * engine. Adapters: vllm:lora_requests_info — stale series linger, so the
 * series with the largest value (an update timestamp) wins.
 */
import { mean, parsePrometheus, pick, sum } from '@warmpath/shared/runtime';
import type { Metrics } from '@warmpath/shared/runtime';
import { emptySnapshot, getOk, nonNeg, openAiModels } from './types.ts';
import type { AdapterContext, EngineAdapter, EngineSnapshot } from './types.ts';

const splitList = (s: string | undefined): string[] =>
  s === undefined ? [] : s.split(',').map((x) => x.trim()).filter((x) => x !== '' && x.length <= 256);

export function parseVllmMetrics(m: Metrics): EngineSnapshot {
  const snap = emptySnapshot();
  snap.running = nonNeg(sum(m, ['vllm:num_requests_running'])) ?? 0;
  snap.waiting = nonNeg(sum(m, ['vllm:num_requests_waiting'])) ?? 0;
  const usage = mean(m, ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc']);
  snap.kvUsedFraction = usage !== undefined && usage >= 0 ? Math.min(1, usage) : undefined;
  snap.prefixQueries = nonNeg(sum(m, ['vllm:prefix_cache_queries', 'vllm:gpu_prefix_cache_queries']));
  snap.prefixHits = nonNeg(sum(m, ['vllm:prefix_cache_hits', 'vllm:gpu_prefix_cache_hits']));
  snap.preemptions = nonNeg(sum(m, ['vllm:num_preemptions']));
  // Capacity, per engine index (data parallel: one series per engine).
  const cfg = pick(m, ['vllm:cache_config_info']);
  if (cfg !== undefined) {
    const perEngine = new Map<string, number>();
    const hint: string[] = [];
    for (const s of cfg) {
      const blocks = Number(s.labels.num_gpu_blocks);
      const size = Number(s.labels.block_size);
      if (!Number.isFinite(blocks) || !Number.isFinite(size) || blocks <= 0 || size <= 0) continue;
      perEngine.set(s.labels.engine ?? '0', blocks * size);
      hint.push(`${s.labels.engine ?? '0'}:${blocks}x${size}`);
    }
    if (perEngine.size > 0) {
      let total = 0;
      for (const v of perEngine.values()) total += v;
      snap.kvCapacityTokens = total;
      snap.configHint = hint.sort().join(',');
    }
  }
  const lora = pick(m, ['vllm:lora_requests_info']);
  if (lora !== undefined) {
    let best = lora[0]!;
    for (const s of lora) if (Number.isFinite(s.value) && (!Number.isFinite(best.value) || s.value > best.value)) best = s;
    const hot = new Set([...splitList(best.labels.running_lora_adapters), ...splitList(best.labels.waiting_lora_adapters)]);
    snap.hotAdapters = [...hot];
    const slots = Number(best.labels.max_lora);
    snap.adapterSlots = Number.isInteger(slots) && slots >= 0 && slots <= 1e6 ? slots : 0;
  }
  const counters = [snap.prefixQueries, nonNeg(sum(m, ['vllm:prompt_tokens'])), nonNeg(sum(m, ['vllm:request_success']))];
  snap.counters = counters.map((c) => c ?? 0);
  return snap;
}

export function vllmAdapter(ctx: AdapterContext): EngineAdapter {
  return {
    kind: 'vllm',
    endpoints: ['chat', 'completion', 'responses'],
    async scrape(signal) {
      return parseVllmMetrics(parsePrometheus(await getOk(ctx, '/metrics', signal)));
    },
    models: (signal) => openAiModels(ctx, signal),
  };
}
