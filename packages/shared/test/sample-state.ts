/** A valid replica state for the shared package's tests; `over` replaces fields. */
import type { ReplicaState } from '../src/protocol.ts';

export function sampleState(over: Partial<ReplicaState> = {}): ReplicaState {
  return {
    v: 1,
    fleet: 'default',
    replica: 'r1',
    boot: 'b1',
    bootAt: 1_700_000_000_000,
    seq: 7,
    sentAt: 1_700_000_000_500,
    url: 'http://127.0.0.1:9000',
    admin: 'http://127.0.0.1:9001',
    engine: 'vllm',
    models: ['meta-llama/Llama-3.1-8B-Instruct'],
    adapters: ['sql-lora'],
    hotAdapters: [],
    endpoints: ['chat', 'completion'],
    capacity: { kvTokens: 432_000, adapterSlots: 4, weight: 1, maxRunning: 1024 },
    load: { running: 3, waiting: 0, kvUsedTokens: 12_000, inflight: 3, inflightTokens: 4_000, prefillTokens: 1_000 },
    status: 'ready',
    chunkChars: 256,
    digest: {
      from: 6,
      size: 3,
      added: BigUint64Array.from([1n, 2n ** 64n - 1n, 12345678901234567890n]),
      removed: BigUint64Array.from([9n]),
    },
    ...over,
  };
}
