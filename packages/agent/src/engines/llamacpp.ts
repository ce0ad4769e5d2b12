/**
 * llama.cpp server adapter. /slots is the live source of occupancy (on by
 * default); /metrics (only with --metrics, else 501) adds the queue and the
 * restart counters; /props gives total slots and context. Capacity = Σ slot
 * n_ctx.
 *
 * What the server does not say, the snapshot leaves undefined: no current
 * build exports prefix-cache counters (cached tokens arrive per response, as
 * `timings.cache_n`), nor tokens held per slot, so KV use is
 * kv_cache_usage_ratio where an old build still has it, else busy slots over
 * total. With a unified KV cache (`--kv-unified`, or the default when
 * `--parallel` is not given) every slot reports the whole context, so Σ n_ctx
 * overstates capacity by the slot count; the HTTP surface does not tell the
 * two layouts apart (docs/ENGINE-SIGNALS.md).
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
  for (const s of slots) {
    const nCtx = finiteOr(s.n_ctx, 0);
    capacity += nCtx > 0 ? nCtx : 0;
    // Builds before `is_processing` (llama.cpp #10162, Nov 2024) had `state`: 0 idle, 1–4 busy stages.
    if (s.is_processing === true || (typeof s.state === 'number' && s.state > 0)) busy++;
  }
  if (capacity === 0 && isRecord(props)) {
    const dgs = isRecord(props.default_generation_settings) ? props.default_generation_settings : {};
    // One slot's context (the same for every slot), as in /slots.
    capacity = finiteOr(dgs.n_ctx, 0) * Math.max(1, Math.floor(finiteOr(props.total_slots, 1)));
    if (!(capacity > 0)) capacity = 0;
  }
  const total =
    slots.length > 0 ? slots.length : isRecord(props) ? Math.max(0, Math.floor(finiteOr(props.total_slots, 0))) : 0;
  snap.maxRunning = total > 0 ? total : undefined;
  snap.running = metrics !== undefined ? (nonNeg(sum(metrics, ['llamacpp:requests_processing'])) ?? busy) : busy;
  snap.waiting = metrics !== undefined ? (nonNeg(sum(metrics, ['llamacpp:requests_deferred'])) ?? 0) : 0;
  snap.kvCapacityTokens = capacity > 0 ? capacity : undefined;
  const ratio = metrics !== undefined ? nonNeg(sum(metrics, ['llamacpp:kv_cache_usage_ratio'])) : undefined;
  snap.kvUsedFraction = ratio !== undefined ? Math.min(1, ratio) : slots.length > 0 ? busy / slots.length : undefined;
  if (metrics !== undefined) {
    // Tokens prefilled (cache hits excluded), tokens generated, decode calls: all reset only with the process.
    const names = ['llamacpp:prompt_tokens_total', 'llamacpp:tokens_predicted_total', 'llamacpp:n_decode_total'];
    snap.counters = names.map((n) => nonNeg(sum(metrics, [n])) ?? 0);
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
      const metrics =
        metricsRes !== undefined && metricsRes.status === 200 ? parsePrometheus(metricsRes.text) : undefined;
      return parseLlamacppState(slots, metrics, props);
    },
    models: (signal) => openAiModels(ctx, signal),
  };
}
