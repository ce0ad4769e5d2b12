/** Engine kind → adapter. */
import type { EngineKind } from '@warmpath/shared/wire';
import { llamacppAdapter } from './llamacpp.ts';
import { sglangAdapter } from './sglang.ts';
import { tgiAdapter } from './tgi.ts';
import type { AdapterContext, EngineAdapter, EngineSource } from './types.ts';
import { vllmAdapter } from './vllm.ts';

export const ADAPTERS: Readonly<Record<EngineKind, (ctx: AdapterContext) => EngineAdapter>> = {
  vllm: vllmAdapter,
  sglang: sglangAdapter,
  llamacpp: llamacppAdapter,
  tgi: tgiAdapter,
};

export function createAdapter(kind: EngineKind, ctx: AdapterContext): EngineAdapter {
  return ADAPTERS[kind](ctx);
}

/** An adapter as the agent core's engine source: each call bounded by `timeoutMs`. */
export function adapterSource(adapter: EngineAdapter, timeoutMs: number): EngineSource {
  return {
    endpoints: adapter.endpoints,
    scrape: (done) => void adapter.scrape(AbortSignal.timeout(timeoutMs)).then((snap) => done(undefined, snap), done),
    models: (done) =>
      void adapter.models(AbortSignal.timeout(timeoutMs)).then((models) => done(undefined, models), done),
  };
}

export type { AdapterContext, EngineAdapter, EngineSnapshot, EngineSource, ModelEntry } from './types.ts';
