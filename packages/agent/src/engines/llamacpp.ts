/**
 * llama.cpp server adapter. /slots is the live source of occupancy (on by
 * default); /metrics (only with --metrics, else 501) adds the queue and
 * counters; /props gives total slots and context. Capacity = Σ slot n_ctx.
 * KV use: kv_cache_usage_ratio where the build still has it, else tokens held
 * by processing slots over capacity, else busy slots over total.
 */
import { parsePrometheus, sum } from '@warmpath/shared/runtime';
import type { Metrics } from '@warmpath/shared/runtime';
import { emptySnapshot, finiteOr, getJson, getText, isRecord, nonNeg, openAiModels } from './types.ts';
import type { AdapterContext, EngineAdapter, EngineSnapshot } from './types.ts';

export function parseLlamacppState(slotsBody: unknown, metrics: Metrics | undefined, props: unknown): EngineSnapshot {
  const snap = emptySnapshot();
  const slots = Array.isArray(slotsBody) ? slotsBody.filter(isRecord) : [];
  let capacity = 0;
  let busy = 0;
  let held = 0;
  for (const s of slots) {
    const nCtx = finiteOr(s.n_ctx, 0);
    capacity += nCtx > 0 ? nCtx : 0;
    const processing = s.is_processing === true || s.state === 1;
    if (processing) {
      busy++;
      const past = finiteOr(s.n_past, finiteOr(s.n_prompt_tokens, 0));
      held += past > 0 ? past : 0;
    }
  }
  if (capacity === 0 && isRecord(props)) {
    const dgs = isRecord(props.default_generation_settings) ? props.default_generation_settings : {};
    capacity = finiteOr(props.n_ctx, finiteOr(dgs.n_ctx, 0));
    if (capacity < 0) capacity = 0;
  }
  const total = slots.length > 0 ? slots.length : isRecord(props) ? Math.max(0, Math.floor(finiteOr(props.total_slots, 0))) : 0;
  snap.maxRunning = total > 0 ? total : undefined;
  snap.running = metrics !== undefined ? (nonNeg(sum(metrics, ['llamacpp:requests_processing'])) ?? busy) : busy;
  snap.waiting = metrics !== undefined ? (nonNeg(sum(metrics, ['llamacpp:requests_deferred'])) ?? 0) : 0;
  snap.kvCapacityTokens = capacity > 0 ? capacity : undefined;
  const ratio = metrics !== undefined ? nonNeg(sum(metrics, ['llamacpp:kv_cache_usage_ratio'])) : undefined;
  snap.kvUsedFraction =
    ratio !== undefined ? Math.min(1, ratio) : capacity > 0 && held > 0 ? Math.min(1, held / capacity) : total > 0 ? busy / total : undefined;
  if (metrics !== undefined) {
    const uncached = nonNeg(sum(metrics, ['llamacpp:prompt_tokens']));
    const cached = nonNeg(sum(metrics, ['llamacpp:prompt_tokens_cached']));
    if (uncached !== undefined && cached !== undefined) {
      snap.prefixQueries = uncached + cached;
      snap.prefixHits = cached;
    }
    snap.counters = [uncached ?? 0, nonNeg(sum(metrics, ['llamacpp:tokens_predicted'])) ?? 0];
  }
  snap.configHint = `slots:${total},ctx:${capacity}`;
  return snap;
}

export function llamacppAdapter(ctx: AdapterContext): EngineAdapter {
  return {
    kind: 'llamacpp',
    endpoints: ['chat', 'completion'],
    async scrape(signal) {
      const [slots, metricsRes, props] = await Promise.all([
        getJson(ctx, '/slots', signal).catch(() => undefined),
        getText(ctx, '/metrics', signal).catch(() => undefined),
        getJson(ctx, '/props', signal),
      ]);
      const metrics = metricsRes !== undefined && metricsRes.status === 200 ? parsePrometheus(metricsRes.text) : undefined;
      return parseLlamacppState(slots, metrics, props);
    },
    models: (signal) => openAiModels(ctx, signal),
  };
}
