/**
 * SGLang adapter: /metrics (needs --enable-metrics; sum over rank labels),
 * /v1/models. Prefix counters: cached_tokens_total over prompt_tokens_total.
 */
import { mean, parsePrometheus, sum } from '@warmpath/shared/runtime';
import type { Metrics } from '@warmpath/shared/runtime';
import { emptySnapshot, getOk, nonNeg, openAiModels } from './types.ts';
import type { AdapterContext, EngineAdapter, EngineSnapshot } from './types.ts';

export function parseSglangMetrics(m: Metrics): EngineSnapshot {
  const snap = emptySnapshot();
  snap.running = nonNeg(sum(m, ['sglang:num_running_reqs'])) ?? 0;
  snap.waiting = nonNeg(sum(m, ['sglang:num_queue_reqs'])) ?? 0;
  const cap = nonNeg(sum(m, ['sglang:max_total_num_tokens']));
  snap.kvCapacityTokens = cap !== undefined && cap > 0 ? cap : undefined;
  const usage = mean(m, ['sglang:token_usage']);
  const used = nonNeg(sum(m, ['sglang:num_used_tokens']));
  snap.kvUsedFraction =
    usage !== undefined && usage >= 0 ? Math.min(1, usage) : used !== undefined && cap !== undefined && cap > 0 ? Math.min(1, used / cap) : undefined;
  snap.prefixQueries = nonNeg(sum(m, ['sglang:prompt_tokens']));
  snap.prefixHits = nonNeg(sum(m, ['sglang:cached_tokens']));
  snap.preemptions = nonNeg(sum(m, ['sglang:num_retracted_reqs']));
  snap.adapterSlots = Math.min(1e6, Math.floor(nonNeg(sum(m, ['sglang:lora_pool_slots_total'])) ?? 0));
  snap.counters = [snap.prefixQueries ?? 0, snap.prefixHits ?? 0];
  snap.configHint = cap !== undefined ? `tokens:${cap}` : '';
  return snap;
}

export function sglangAdapter(ctx: AdapterContext): EngineAdapter {
  return {
    kind: 'sglang',
    endpoints: ['chat', 'completion'],
    async scrape(signal) {
      return parseSglangMetrics(parsePrometheus(await getOk(ctx, '/metrics', signal)));
    },
    models: (signal) => openAiModels(ctx, signal),
  };
}
