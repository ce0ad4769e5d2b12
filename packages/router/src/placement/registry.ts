/**
 * Policy registry: name → factory. The router builds its policy from here; the
 * benchmark registers peer emulations with `registerPolicy` and gets them
 * through the same path, without changing the router.
 */
import { createConsistentHashPolicy, createLeastRequestPolicy, createPowerOfTwoPolicy, createRoundRobinPolicy } from './simple.ts';
import type { Policy, PolicyFactory, PolicyOptions } from './types.ts';
import { createWarmpathPolicy } from './warmpath.ts';
import { createDynamoKvPolicy } from './peers/dynamo.ts';
import { createKubeaiPrefixHashPolicy } from './peers/kubeai.ts';
import { createLlmdPolicy } from './peers/llmd.ts';
import { createSglangCacheAwarePolicy } from './peers/sglang.ts';

export const POLICIES = new Map<string, PolicyFactory>([
  ['warmpath', createWarmpathPolicy],
  ['round-robin', () => createRoundRobinPolicy()],
  ['least-request', () => createLeastRequestPolicy()],
  ['power-of-two', (o) => createPowerOfTwoPolicy(o)],
  ['consistent-hash', () => createConsistentHashPolicy()],
  // Faithful emulations of the peers' policies (BASELINES.md), for side-by-side benchmarks.
  ['sglang-cache-aware', () => createSglangCacheAwarePolicy()],
  ['llm-d-approx', (o) => createLlmdPolicy('approx', o)],
  ['llm-d-precise', (o) => createLlmdPolicy('precise', o)],
  ['dynamo-kv', (o) => createDynamoKvPolicy(o)],
  ['kubeai-prefix-hash', () => createKubeaiPrefixHashPolicy()],
]);

export function registerPolicy(name: string, factory: PolicyFactory): void {
  POLICIES.set(name, factory);
}

export function createPolicy(name: string, opts: PolicyOptions): Policy {
  const f = POLICIES.get(name);
  if (f === undefined) throw new Error(`unknown policy "${name}"; known: ${[...POLICIES.keys()].join(', ')}`);
  return f(opts);
}
