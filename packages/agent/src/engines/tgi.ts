/**
 * TGI adapter: /metrics gauges (queue, batch size, batch tokens), /info for
 * the model id and token budget. TGI has no prefix-cache counters or LoRA
 * slot metrics; those fields stay undefined.
 */
import { parsePrometheus, sum } from '@warmpath/shared/runtime';
import type { Metrics } from '@warmpath/shared/runtime';
import { emptySnapshot, getJson, getOk, isRecord, nonNeg } from './types.ts';
import type { AdapterContext, EngineAdapter, EngineSnapshot, ModelEntry } from './types.ts';

export function parseTgiMetrics(m: Metrics): EngineSnapshot {
  const snap = emptySnapshot();
  snap.running = nonNeg(sum(m, ['tgi_batch_current_size'])) ?? 0;
  snap.waiting = nonNeg(sum(m, ['tgi_queue_size'])) ?? 0;
  const cur = nonNeg(sum(m, ['tgi_batch_current_max_tokens']));
  const max = nonNeg(sum(m, ['tgi_batch_max_total_tokens']));
  if (max !== undefined && max > 0) {
    snap.kvCapacityTokens = max;
    snap.configHint = `tokens:${max}`;
    if (cur !== undefined) snap.kvUsedFraction = Math.min(1, cur / max);
  }
  snap.counters = [nonNeg(sum(m, ['tgi_request_count'])) ?? 0];
  return snap;
}

export function parseTgiInfo(body: unknown): ModelEntry[] {
  if (!isRecord(body) || typeof body.model_id !== 'string' || body.model_id === '' || body.model_id.length > 256)
    return [];
  return [{ id: body.model_id, parent: undefined }];
}

export function tgiAdapter(ctx: AdapterContext): EngineAdapter {
  return {
    kind: 'tgi',
    endpoints: ['chat', 'completion'],
    async scrape(signal) {
      return parseTgiMetrics(parsePrometheus(await getOk(ctx, '/metrics', signal)));
    },
    async models(signal) {
      return parseTgiInfo(await getJson(ctx, '/info', signal));
    },
  };
}
