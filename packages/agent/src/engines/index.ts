/** Engine kind → adapter. */
import type { EngineKind } from '@warmpath/shared/wire';
import { llamacppAdapter } from './llamacpp.ts';
import { sglangAdapter } from './sglang.ts';
import { tgiAdapter } from './tgi.ts';
import type { AdapterContext, EngineAdapter } from './types.ts';
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

export type { AdapterContext, EngineAdapter, EngineSnapshot, ModelEntry } from './types.ts';
