/**
 * SGLang adapter: /metrics (needs --enable-metrics; sum over rank labels),
 * /v1/models. Prefix counters: cached_tokens_total over prompt_tokens_total.
 * Preemptions: the counter `sglang:num_retracted_requests_total`, as the
 * snapshot field is cumulative; the older `sglang:num_retracted_reqs` is a
 * gauge of the last logging interval's retractions (it falls back to 0), so
 * builds without the counter leave preemptions unknown.
 * Hot adapters: SGLang exposes no list of the adapters resident in its GPU
 * pool, only the pool's slots (`--max-loras-per-batch`, one of which serves
 * the base model). Its loaded adapters (/v1/models entries with a `parent`)
 * sit in host memory and move to the GPU as requests need them; while they
 * number fewer than the slots none is ever evicted, so they are all hot.
 * With more, which ones are resident is unknown, and none is claimed.
 * Cost: one more GET of /v1/models per scrape, and only with LoRA on.
 */
import { buckets, mean, parsePrometheus, sum } from '@warmpath/shared/runtime';
import type { Metrics } from '@warmpath/shared/runtime';
import { emptySnapshot, getOk, nonNeg, openAiModels } from './types.ts';
import type { AdapterContext, EngineAdapter, EngineSnapshot, ModelEntry } from './types.ts';

export function parseSglangMetrics(m: Metrics): EngineSnapshot {
  const snap = emptySnapshot();
  snap.running = nonNeg(sum(m, ['sglang:num_running_reqs'])) ?? 0;
  snap.waiting = nonNeg(sum(m, ['sglang:num_queue_reqs'])) ?? 0;
  const cap = nonNeg(sum(m, ['sglang:max_total_num_tokens']));
  snap.kvCapacityTokens = cap !== undefined && cap > 0 ? cap : undefined;
  const usage = mean(m, ['sglang:token_usage']);
  const used = nonNeg(sum(m, ['sglang:num_used_tokens']));
  snap.kvUsedFraction =
    usage !== undefined && usage >= 0
      ? Math.min(1, usage)
      : used !== undefined && cap !== undefined && cap > 0
        ? Math.min(1, used / cap)
        : undefined;
  snap.prefixQueries = nonNeg(sum(m, ['sglang:prompt_tokens']));
  snap.prefixHits = nonNeg(sum(m, ['sglang:cached_tokens']));
  snap.preemptions = nonNeg(sum(m, ['sglang:num_retracted_requests']));
  snap.adapterSlots = Math.min(1e6, Math.floor(nonNeg(sum(m, ['sglang:lora_pool_slots_total'])) ?? 0));
  snap.counters = [snap.prefixQueries ?? 0, snap.prefixHits ?? 0];
  snap.configHint = cap !== undefined ? `tokens:${cap}` : '';
  const itl = buckets(m, ['sglang:inter_token_latency_seconds', 'sglang:time_per_output_token_seconds']);
  if (itl !== undefined) snap.itl = itl;
  return snap;
}

/** Loaded adapters that are surely on the GPU: all of them while they fit beside the base model's slot, else none known. */
export function sglangHotAdapters(models: readonly ModelEntry[], slots: number): string[] {
  const loaded = models.filter((e) => e.parent !== undefined).map((e) => e.id);
  return loaded.length < slots ? loaded : [];
}

export function sglangAdapter(ctx: AdapterContext): EngineAdapter {
  return {
    kind: 'sglang',
    endpoints: ['chat', 'completion'],
    async scrape(signal) {
      const snap = parseSglangMetrics(parsePrometheus(await getOk(ctx, '/metrics', signal)));
      if (snap.adapterSlots > 0)
        snap.hotAdapters = sglangHotAdapters(await openAiModels(ctx, signal), snap.adapterSlots);
      return snap;
    },
    models: (signal) => openAiModels(ctx, signal),
  };
}
