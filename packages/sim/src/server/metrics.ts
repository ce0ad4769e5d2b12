/**
 * /metrics in vLLM's exact dialect, as Python's prometheus_client writes it:
 * `# HELP`/`# TYPE` per family, counters declared without `_total` and
 * sampled as `X_total` plus `X_created`, floats as Python repr (`3.0`,
 * `+Inf`), histogram buckets cumulative with `le` last.
 * Hand-written rather than prom-client because the point is byte-level
 * fidelity to another client library's output, and the model already keeps
 * the counts (rendering is a pure function of a snapshot).
 */
import type { EngineModel } from '../model/engine.ts';
import type { Histogram } from '../model/histogram.ts';
import type { EngineSnapshot } from '../model/views.ts';

/** Python float repr as prometheus_client's floatToGoString prints it. */
export function pyFloat(v: number): string {
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.0`;
  return String(v);
}

function esc(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labels(pairs: readonly (readonly [string, string])[]): string {
  return pairs.length === 0 ? '' : `{${pairs.map(([k, v]) => `${k}="${esc(v)}"`).join(',')}}`;
}

export interface MetricsContext {
  readonly modelName: string;
  /** Unix seconds the counters were created (server start). */
  readonly createdUnix: number;
  readonly cacheInfo: Readonly<Record<string, string>>;
  readonly loraEnabled: boolean;
  /** Unix seconds of the last change of LoRA state (the lora_requests_info value). */
  readonly loraUpdatedUnix: number;
  /** The kv-overstate fault: announce this many times the real KV (num_gpu_blocks; usage scaled to match); default 1. */
  readonly kvOverstate?: number;
}

/** cache_config_info with num_gpu_blocks times `over` (the kv-overstate fault). */
function overstated(info: Readonly<Record<string, string>>, over: number): Readonly<Record<string, string>> {
  const blocks = Number(info.num_gpu_blocks);
  return over === 1 || !Number.isFinite(blocks) ? info : { ...info, num_gpu_blocks: String(Math.round(blocks * over)) };
}

export function renderMetrics(model: EngineModel, ctx: MetricsContext): string {
  const s = model.snapshot();
  const base: [string, string][] = [
    ['engine', '0'],
    ['model_name', ctx.modelName],
  ];
  const L = labels(base);
  const out: string[] = [];
  const gauge = (name: string, help: string, value: number): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${L} ${pyFloat(value)}`);
  };
  const counter = (name: string, help: string, value: number): void => {
    out.push(
      `# HELP ${name} ${help}`,
      `# TYPE ${name} counter`,
      `${name}_total${L} ${pyFloat(value)}`,
      `${name}_created${L} ${pyFloat(ctx.createdUnix)}`,
    );
  };
  const histogram = (name: string, help: string, h: Histogram): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
    const cum = h.cumulative();
    for (let i = 0; i < cum.length; i++) {
      const le = i < h.bounds.length ? pyFloat(h.bounds[i]!) : '+Inf';
      out.push(`${name}_bucket${labels([...base, ['le', le]])} ${pyFloat(cum[i]!)}`);
    }
    out.push(
      `${name}_count${L} ${pyFloat(h.count)}`,
      `${name}_sum${L} ${pyFloat(h.sum)}`,
      `${name}_created${L} ${pyFloat(ctx.createdUnix)}`,
    );
  };

  gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', s.running);
  gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', s.waiting);
  out.push(
    '# HELP vllm:num_requests_waiting_by_reason Number of requests waiting, by reason.',
    '# TYPE vllm:num_requests_waiting_by_reason gauge',
    `vllm:num_requests_waiting_by_reason${labels([...base, ['reason', 'capacity']])} ${pyFloat(s.waiting - s.waitingDeferred)}`,
    `vllm:num_requests_waiting_by_reason${labels([...base, ['reason', 'deferred']])} ${pyFloat(s.waitingDeferred)}`,
  );
  gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', s.kvUsage / (ctx.kvOverstate ?? 1));
  counter(
    'vllm:prefix_cache_queries',
    'Prefix cache queries, in terms of number of queried tokens.',
    s.prefixQueriesTokens,
  );
  counter('vllm:prefix_cache_hits', 'Prefix cache hits, in terms of number of cached tokens.', s.prefixHitsTokens);
  if (s.hostKvTotalBlocks > 0) hostTierMetrics(s, gauge, counter);
  counter('vllm:num_preemptions', 'Cumulative number of preemption from the engine.', s.preemptions);
  counter('vllm:prompt_tokens', 'Number of prefill tokens processed.', s.promptTokens);
  counter('vllm:generation_tokens', 'Number of generation tokens processed.', s.generationTokens);
  out.push(
    '# HELP vllm:request_success Count of successfully processed requests.',
    '# TYPE vllm:request_success counter',
    `vllm:request_success_total${labels([...base, ['finished_reason', 'length']])} ${pyFloat(s.finishedRequests)}`,
    `vllm:request_success_created${labels([...base, ['finished_reason', 'length']])} ${pyFloat(ctx.createdUnix)}`,
  );
  histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', model.ttft);
  histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', model.itl);
  histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', model.e2e);
  out.push(
    '# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig',
    '# TYPE vllm:cache_config_info gauge',
    `vllm:cache_config_info${labels([...Object.entries(overstated(ctx.cacheInfo, ctx.kvOverstate ?? 1)), ...base])} 1.0`,
  );
  if (ctx.loraEnabled) {
    out.push(
      '# HELP vllm:lora_requests_info Running stats on lora requests.',
      '# TYPE vllm:lora_requests_info gauge',
      `vllm:lora_requests_info${labels([
        ['max_lora', String(s.lora.maxLoras)],
        ['running_lora_adapters', s.lora.running.join(',')],
        ['waiting_lora_adapters', s.lora.waiting.join(',')],
      ])} ${pyFloat(ctx.loraUpdatedUnix)}`,
    );
  }
  out.push('');
  return out.join('\n');
}

type Emit = (name: string, help: string, value: number) => void;

/** The host-memory tier: vLLM reports a KV connector's hits (its CPU offloading among them) apart from the GPU prefix cache's. */
function hostTierMetrics(s: EngineSnapshot, gauge: Emit, counter: Emit): void {
  counter(
    'vllm:external_prefix_cache_queries',
    'External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.',
    s.hostQueriesTokens,
  );
  counter(
    'vllm:external_prefix_cache_hits',
    'External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.',
    s.hostHitsTokens,
  );
  gauge(
    'vllm:cpu_kv_cache_usage_perc',
    'Host-memory (CPU offloading) KV usage: blocks held over capacity. 1 means 100 percent usage.',
    s.hostKvCachedBlocks / s.hostKvTotalBlocks,
  );
  counter('vllm:cpu_kv_loaded_tokens', 'Tokens of KV loaded from host memory back to the GPU.', s.hostLoadedTokens);
}
