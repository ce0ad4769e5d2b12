import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseLlamacppState } from '../src/engines/llamacpp.ts';
import { parseSglangMetrics, sglangHotAdapters } from '../src/engines/sglang.ts';
import { parseTgiInfo, parseTgiMetrics } from '../src/engines/tgi.ts';
import { parseModelList } from '../src/engines/types.ts';
import { parseVllmMetrics } from '../src/engines/vllm.ts';
import { parsePrometheus } from '@warmpath/shared/runtime';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('engine metric parsers over the shared prometheus parser', () => {
  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (s) => {
        parsePrometheus(s);
        parseVllmMetrics(parsePrometheus(s));
        parseSglangMetrics(parsePrometheus(s));
        parseTgiMetrics(parsePrometheus(s));
      }),
      { numRuns: 2000 },
    );
  });
  it('never throws on metric-shaped junk', () => {
    const name = fc.constantFrom(
      'vllm:num_requests_running',
      'vllm:kv_cache_usage_perc',
      'vllm:cache_config_info',
      'vllm:lora_requests_info',
      'vllm:prefix_cache_hits_total',
      'sglang:token_usage',
      'tgi_queue_size',
    );
    const label = fc.tuple(
      fc.constantFrom('engine', 'num_gpu_blocks', 'block_size', 'max_lora', 'running_lora_adapters'),
      fc.string({ maxLength: 12 }),
    );
    const line = fc.tuple(
      name,
      fc.array(label, { maxLength: 4 }),
      fc.oneof(fc.double().map(String), fc.constantFrom('NaN', '+Inf', '-Inf', 'x', '')),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), (lines) => {
        const text = lines
          .map(([n, ls, v]) => `${n}{${ls.map(([k, x]) => `${k}="${x.replace(/["\\]/g, '')}"`).join(',')}} ${v}`)
          .join('\n');
        const s = parseVllmMetrics(parsePrometheus(text));
        expect(s.running).toBeGreaterThanOrEqual(0);
        expect(Number.isFinite(s.running)).toBe(true);
        if (s.kvUsedFraction !== undefined) expect(s.kvUsedFraction).toBeLessThanOrEqual(1);
        parseSglangMetrics(parsePrometheus(text.replaceAll('vllm:', 'sglang:')));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('vLLM adapter', () => {
  it('reads 0.6 names (gpu_cache_usage_perc, no engine label) and picks the newest lora series', () => {
    const s = parseVllmMetrics(parsePrometheus(fixture('vllm-0.6.txt')));
    expect(s.running).toBe(3);
    expect(s.waiting).toBe(2);
    expect(s.kvUsedFraction).toBe(0.4375);
    expect(s.kvCapacityTokens).toBe(27000 * 16);
    expect(s.preemptions).toBe(7);
    expect(s.hotAdapters.sort()).toEqual(['chat-lora', 'sql-lora', 'tool-lora']);
    expect(s.adapterSlots).toBe(4);
    expect(s.counters[1]).toBe(6.49e7);
  });
  it('reads 0.9 names (gpu_prefix_cache_*_total)', () => {
    const s = parseVllmMetrics(parsePrometheus(fixture('vllm-0.9.txt')));
    expect(s.running).toBe(5);
    expect(s.kvUsedFraction).toBe(0.25);
    expect(s.prefixQueries).toBe(123456);
    expect(s.prefixHits).toBe(65432);
    expect(s.kvCapacityTokens).toBe(28000 * 16);
  });
  it('sums over data-parallel engines, ignores NaN, parses quoted adapter lists', () => {
    const s = parseVllmMetrics(parsePrometheus(fixture('vllm-0.11-dp2.txt')));
    expect(s.running).toBe(10);
    expect(s.waiting).toBe(3);
    expect(s.kvUsedFraction).toBe(0.5);
    expect(s.prefixQueries).toBe(4000);
    expect(s.prefixHits).toBe(2000);
    expect(s.kvCapacityTokens).toBe(2 * 14418 * 16);
    expect(s.hotAdapters).toEqual(['a', 'b', 'c "quoted"', 'd']);
    expect(s.adapterSlots).toBe(2);
  });
  it('reads /v1/models with parent for adapters and tolerates junk', () => {
    expect(
      parseModelList({
        object: 'list',
        data: [{ id: 'base', parent: null }, { id: 'sql', parent: 'base' }, { id: 3 }, null, 'x'],
      }),
    ).toEqual([
      { id: 'base', parent: undefined },
      { id: 'sql', parent: 'base' },
    ]);
    expect(parseModelList('garbage')).toEqual([]);
    fc.assert(fc.property(fc.anything(), (x) => void parseModelList(x)));
  });
});

describe('SGLang, TGI, llama.cpp adapters', () => {
  it('SGLang: sums ranks, averages token usage', () => {
    const s = parseSglangMetrics(parsePrometheus(fixture('sglang.txt')));
    expect(s.running).toBe(10);
    expect(s.waiting).toBe(4);
    expect(s.kvUsedFraction).toBeCloseTo(0.4);
    expect(s.kvCapacityTokens).toBe(400000);
    expect(s.prefixHits).toBe(45000);
    expect(s.prefixQueries).toBe(95000);
    expect(s.adapterSlots).toBe(8);
  });
  it('SGLang 0.5: preemptions from the retraction counter, not the per-interval gauge; hot adapters while they fit the GPU pool', () => {
    const s = parseSglangMetrics(parsePrometheus(fixture('sglang-0.5.txt')));
    expect(s.running).toBe(6);
    expect(s.kvCapacityTokens).toBe(204800);
    expect(s.preemptions).toBe(17);
    expect(s.adapterSlots).toBe(4);
    expect(s.prefixHits).toBe(740000);
    // The old fixture has only the gauge: preemptions stay unknown rather than a number that goes down.
    expect(parseSglangMetrics(parsePrometheus(fixture('sglang.txt'))).preemptions).toBeUndefined();
    const models = parseModelList(JSON.parse(fixture('sglang-models.json')));
    expect(sglangHotAdapters(models, 4)).toEqual(['sql-lora', 'chat-lora']);
    // Two adapters and two slots (one serves the base model): which is resident is unknown.
    expect(sglangHotAdapters(models, 2)).toEqual([]);
    expect(sglangHotAdapters(models, 0)).toEqual([]);
  });
  it('TGI: utilization from batch tokens, model from /info', () => {
    const s = parseTgiMetrics(parsePrometheus(fixture('tgi.txt')));
    expect(s.running).toBe(12);
    expect(s.waiting).toBe(3);
    expect(s.kvUsedFraction).toBe(0.25);
    expect(s.kvCapacityTokens).toBe(160000);
    expect(parseTgiInfo({ model_id: 'bigscience/bloom' })).toEqual([{ id: 'bigscience/bloom', parent: undefined }]);
    expect(parseTgiInfo([1, 2])).toEqual([]);
  });
  it('llama.cpp: slots, metrics and props as llama-server b8668 answered them (two slots busy, one request deferred)', () => {
    const slots = JSON.parse(fixture('llamacpp-slots.json'));
    const props = JSON.parse(fixture('llamacpp-props.json'));
    const s = parseLlamacppState(slots, parsePrometheus(fixture('llamacpp-metrics.txt')), props);
    expect(s).toMatchObject({
      running: 2,
      waiting: 1,
      kvCapacityTokens: 4096,
      kvUsedFraction: 1,
      maxRunning: 2,
      configHint: 'slots:2,ctx:4096',
    });
    // No prefix-cache counters in /metrics: cached tokens arrive per response (timings.cache_n).
    expect(s.prefixHits).toBeUndefined();
    expect(s.prefixQueries).toBeUndefined();
    expect(s.counters).toEqual([896, 48, 89]);
    // /metrics off (501): slots alone; /slots off too: /props alone, occupancy unknown.
    expect(parseLlamacppState(slots, undefined, props)).toMatchObject({
      running: 2,
      waiting: 0,
      kvUsedFraction: 1,
      kvCapacityTokens: 4096,
      counters: [],
    });
    expect(parseLlamacppState(undefined, undefined, props)).toMatchObject({
      running: 0,
      maxRunning: 2,
      kvCapacityTokens: 4096,
      kvUsedFraction: undefined,
    });
    // Older builds (b4747, for one) also exported the KV ratio.
    const old = parsePrometheus(
      '# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.25\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 1\n',
    );
    expect(parseLlamacppState(slots, old, props).kvUsedFraction).toBe(0.25);
    // Before `is_processing`: `state` 0 = idle, 1–4 = a busy stage.
    const legacy = [0, 2, 4, 0].map((state, id) => ({ id, n_ctx: 1024, state }));
    expect(parseLlamacppState(legacy, undefined, undefined)).toMatchObject({
      running: 2,
      kvUsedFraction: 0.5,
      kvCapacityTokens: 4096,
      maxRunning: 4,
    });
    fc.assert(fc.property(fc.anything(), fc.anything(), (a, b) => void parseLlamacppState(a, undefined, b)));
  });
});
