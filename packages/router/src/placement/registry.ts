/**
 * Policy registry: name → factory, the one list of policy names (the config's
 * `policy` choices and POLICY_NAMES derive from it). The router builds its
 * policy from here; the benchmark registers peer emulations with
 * `registerPolicy` and gets them through the same path, without changing the
 * router.
 */
import { createDynamoKvPolicy } from './peers/dynamo.ts';
import { createKubeaiPrefixHashPolicy } from './peers/kubeai.ts';
import { createLlmdPolicy } from './peers/llmd.ts';
import { createSglangCacheAwarePolicy } from './peers/sglang.ts';
import {
  createChwblHeaderPolicy,
  createConsistentHashPolicy,
  createLeastRequestPolicy,
  createPowerOfTwoPolicy,
  createRandomPolicy,
  createRoundRobinPolicy,
} from './simple.ts';
import type { Policy, PolicyFactory, PolicyOptions } from './types.ts';
import { createWarmpathPolicy } from './warmpath/index.ts';

const BUILT_IN = {
  warmpath: createWarmpathPolicy,
  'round-robin': () => createRoundRobinPolicy(),
  'least-request': () => createLeastRequestPolicy(),
  'power-of-two': (o) => createPowerOfTwoPolicy(o),
  'consistent-hash': () => createConsistentHashPolicy(),
  random: (o) => createRandomPolicy(o),
  'chwbl-header': () => createChwblHeaderPolicy(),
  // Faithful emulations of the peers' policies (docs/PEERS.md), for side-by-side benchmarks.
  'sglang-cache-aware': () => createSglangCacheAwarePolicy(),
  'llm-d-approx': (o) => createLlmdPolicy('approx', o),
  'llm-d-precise': (o) => createLlmdPolicy('precise', o),
  'dynamo-kv': (o) => createDynamoKvPolicy(o),
  'kubeai-prefix-hash': () => createKubeaiPrefixHashPolicy(),
} as const satisfies Record<string, PolicyFactory>;

export type PolicyName = keyof typeof BUILT_IN;
/** The built-in policies' names, in registry order. */
export const POLICY_NAMES = Object.freeze(Object.keys(BUILT_IN) as PolicyName[]);

export const POLICIES = new Map<string, PolicyFactory>(Object.entries(BUILT_IN));

export function registerPolicy(name: string, factory: PolicyFactory): void {
  POLICIES.set(name, factory);
}

/** A policy's options from the router's validated config: every policy is built from these. */
export function policyOptions(
  config: Pick<
    PolicyOptions,
    | 'chunkChars'
    | 'charsPerToken'
    | 'loadFactor'
    | 'keyLoadFactor'
    | 'boundFloorTokens'
    | 'hardBound'
    | 'spillChoices'
    | 'homeHorizonMs'
  > & { readonly placementOff: readonly string[] },
  random?: () => number,
): PolicyOptions {
  const o = {
    chunkChars: config.chunkChars,
    charsPerToken: config.charsPerToken,
    loadFactor: config.loadFactor,
    keyLoadFactor: config.keyLoadFactor,
    boundFloorTokens: config.boundFloorTokens,
    ...(config.hardBound !== undefined ? { hardBound: config.hardBound } : {}),
    ...(config.spillChoices !== undefined ? { spillChoices: config.spillChoices } : {}),
    ...(config.homeHorizonMs !== undefined ? { homeHorizonMs: config.homeHorizonMs } : {}),
    placementOff: config.placementOff,
  };
  return random === undefined ? o : { ...o, random };
}

export function createPolicy(name: string, opts: PolicyOptions): Policy {
  const f = POLICIES.get(name);
  if (f === undefined) throw new Error(`unknown policy "${name}"; known: ${[...POLICIES.keys()].join(', ')}`);
  return f(opts);
}
