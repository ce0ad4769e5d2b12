/**
 * vLLM adapter (V1 and older builds). Reads /metrics (names old and new,
 * summed over the `engine` label for data parallel) and /v1/models (LoRA
 * entries carry `parent`).
 * Capacity: vllm:cache_config_info labels num_gpu_blocks × block_size, per
 * engine. Adapters: vllm:lora_requests_info — stale series linger, so the
 * series with the largest value (an update timestamp) wins.
 *
 * Two steps: `readVllm` picks vLLM's readings out of the parsed metrics;
 * `vllmSnapshot` maps readings to an EngineSnapshot. The discrete-event
 * simulator hands its engine model's readings straight to `vllmSnapshot`
 * (rendering and parsing the metrics text would dominate a large run's CPU
 * time: docs/ARCHITECTURE.md, "One model, two clocks"), so the mapping
 * exists once for both.
 */
import { buckets, mean, parsePrometheus, pick, sum } from '@warmpath/shared/runtime';
import type { Buckets, Metrics } from '@warmpath/shared/runtime';
import { emptySnapshot, getOk, nonNeg, openAiModels } from './types.ts';
import type { AdapterContext, EngineAdapter, EngineSnapshot } from './types.ts';

/** What vLLM's /metrics says, summed over data-parallel engines; a missing metric is undefined. */
export interface VllmReadings {
  running: number | undefined;
  waiting: number | undefined;
  /** KV cache usage, fraction (mean over engines). */
  kvUsage: number | undefined;
  prefixQueries: number | undefined;
  prefixHits: number | undefined;
  preemptions: number | undefined;
  promptTokens: number | undefined;
  requestSuccess: number | undefined;
  /** vllm:cache_config_info, one entry per series: its engine index and the num_gpu_blocks / block_size labels. */
  cacheConfig: ReadonlyArray<{ engine: string; blocks: string | undefined; blockSize: string | undefined }>;
  /** The labels of the newest vllm:lora_requests_info series; undefined when LoRA is off. */
  lora: { running: string | undefined; waiting: string | undefined; maxLora: string | undefined } | undefined;
  /** The inter-token latency histogram (V1's name, then the older per-output-token one), seconds. */
  itl?: Buckets | undefined;
}

const splitList = (s: string | undefined): string[] =>
  s === undefined
    ? []
    : s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '' && x.length <= 256);

export function readVllm(m: Metrics): VllmReadings {
  const cfg = pick(m, ['vllm:cache_config_info']) ?? [];
  const lora = pick(m, ['vllm:lora_requests_info']);
  let newest = lora?.[0];
  for (const s of lora ?? [])
    if (Number.isFinite(s.value) && (!Number.isFinite(newest!.value) || s.value > newest!.value)) newest = s;
  return {
    running: sum(m, ['vllm:num_requests_running']),
    waiting: sum(m, ['vllm:num_requests_waiting']),
    kvUsage: mean(m, ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc']),
    prefixQueries: sum(m, ['vllm:prefix_cache_queries', 'vllm:gpu_prefix_cache_queries']),
    prefixHits: sum(m, ['vllm:prefix_cache_hits', 'vllm:gpu_prefix_cache_hits']),
    preemptions: sum(m, ['vllm:num_preemptions']),
    promptTokens: sum(m, ['vllm:prompt_tokens']),
    requestSuccess: sum(m, ['vllm:request_success']),
    itl: buckets(m, ['vllm:inter_token_latency_seconds', 'vllm:time_per_output_token_seconds']),
    cacheConfig: cfg.map((s) => ({
      engine: s.labels.engine ?? '0',
      blocks: s.labels.num_gpu_blocks,
      blockSize: s.labels.block_size,
    })),
    lora:
      newest === undefined
        ? undefined
        : {
            running: newest.labels.running_lora_adapters,
            waiting: newest.labels.waiting_lora_adapters,
            maxLora: newest.labels.max_lora,
          },
  };
}

/** vLLM's readings → the agent's engine snapshot: validated, capacity summed over engines, hot adapters = running ∪ waiting. */
export function vllmSnapshot(r: VllmReadings): EngineSnapshot {
  const snap = emptySnapshot();
  snap.running = nonNeg(r.running) ?? 0;
  snap.waiting = nonNeg(r.waiting) ?? 0;
  snap.kvUsedFraction = r.kvUsage !== undefined && r.kvUsage >= 0 ? Math.min(1, r.kvUsage) : undefined;
  snap.prefixQueries = nonNeg(r.prefixQueries);
  snap.prefixHits = nonNeg(r.prefixHits);
  snap.preemptions = nonNeg(r.preemptions);
  // Capacity, per engine index (data parallel: one series per engine).
  const perEngine = new Map<string, number>();
  const hint: string[] = [];
  for (const c of r.cacheConfig) {
    const blocks = Number(c.blocks);
    const size = Number(c.blockSize);
    if (!Number.isFinite(blocks) || !Number.isFinite(size) || blocks <= 0 || size <= 0) continue;
    perEngine.set(c.engine, blocks * size);
    hint.push(`${c.engine}:${blocks}x${size}`);
  }
  if (perEngine.size > 0) {
    let total = 0;
    for (const v of perEngine.values()) total += v;
    snap.kvCapacityTokens = total;
    snap.configHint = hint.sort().join(',');
  }
  if (r.lora !== undefined) {
    snap.hotAdapters = [...new Set([...splitList(r.lora.running), ...splitList(r.lora.waiting)])];
    const slots = Number(r.lora.maxLora);
    snap.adapterSlots = Number.isInteger(slots) && slots >= 0 && slots <= 1e6 ? slots : 0;
  }
  snap.counters = [snap.prefixQueries, nonNeg(r.promptTokens), nonNeg(r.requestSuccess)].map((c) => c ?? 0);
  if (r.itl !== undefined) snap.itl = r.itl;
  return snap;
}

export function parseVllmMetrics(m: Metrics): EngineSnapshot {
  return vllmSnapshot(readVllm(m));
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
