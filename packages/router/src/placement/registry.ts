/**
 * Policy registry: name → definition, the one list of policy names. The
 * product registers Warmpath and the plain load balancers; anything else
 * (the benchmark's emulations of peer routers, packages/bench/src/peers/)
 * registers with `registerPolicy` before the router's config is loaded, and
 * is then built through the same path, without changing the router.
 *
 * Each policy declares its own parameters `P`: `params` reads them from the
 * router's validated config (and the router's random source), `create`
 * builds the policy from them. POLICY_NAMES is the config's `policy` choices,
 * read when a config is validated, so a registered name is accepted and an
 * unknown one is a config error.
 */
import { ConfigError } from '@warmpath/shared/runtime';
import type { RouterConfig } from '../config.ts';
import {
  createChwblHeaderPolicy,
  createConsistentHashPolicy,
  createLeastRequestPolicy,
  createPowerOfTwoPolicy,
  createRandomPolicy,
  createRoundRobinPolicy,
} from './simple.ts';
import type { Policy, PolicyFactory, RandomOptions, WarmpathOptions } from './types.ts';
import { createWarmpathPolicy } from './warmpath/index.ts';
import { BUILT_IN_POLICIES, POLICY_NAMES, type BuiltInPolicy } from './policy-names.ts';

export { BUILT_IN_POLICIES, POLICY_NAMES };

/** How the registry builds one policy: its parameters from the config, then the policy from them. */
export interface PolicyDefinition<P> {
  readonly params: (config: RouterConfig, random: () => number) => P;
  readonly create: PolicyFactory<P>;
}

/** Warmpath's parameters from the router's validated config. */
export function warmpathOptions(config: Pick<RouterConfig, keyof WarmpathOptions>): WarmpathOptions {
  return {
    chunkChars: config.chunkChars,
    charsPerToken: config.charsPerToken,
    loadFactor: config.loadFactor,
    keyLoadFactor: config.keyLoadFactor,
    boundFloorTokens: config.boundFloorTokens,
    hardBound: config.hardBound,
    spillChoices: config.spillChoices,
    homeHorizonMs: config.homeHorizonMs,
    hostReloadCost: config.hostReloadCost,
    peerFetchCost: config.peerFetchCost,
    placementOff: config.placementOff,
  };
}

const none = (): undefined => undefined;
const randomOnly = (_c: RouterConfig, random: () => number): RandomOptions => ({ random });

type Builder = (config: RouterConfig, random: () => number) => Policy;

function builder<P>(definition: PolicyDefinition<P>): Builder {
  return (config, random) => definition.create(definition.params(config, random));
}

/** The product's policies: a builder for every built-in name (the type keeps the two lists one). */
const BUILT_IN: Record<BuiltInPolicy, Builder> = {
  warmpath: builder({ params: warmpathOptions, create: createWarmpathPolicy }),
  'round-robin': builder({ params: none, create: createRoundRobinPolicy }),
  'least-request': builder({ params: none, create: createLeastRequestPolicy }),
  'power-of-two': builder({ params: randomOnly, create: createPowerOfTwoPolicy }),
  'consistent-hash': builder({ params: none, create: createConsistentHashPolicy }),
  random: builder({ params: randomOnly, create: createRandomPolicy }),
  'chwbl-header': builder({ params: none, create: createChwblHeaderPolicy }),
};

const builders = new Map<string, Builder>(Object.entries(BUILT_IN));

/** Registers (or replaces) the policy `name`; it becomes a valid `policy` choice. */
export function registerPolicy<P>(name: string, definition: PolicyDefinition<P>): void {
  if (!builders.has(name)) POLICY_NAMES.push(name);
  builders.set(name, builder(definition));
}

/** Builds the policy `name` from the router's config; an unregistered name is a ConfigError. */
export function createPolicy(name: string, config: RouterConfig, random: () => number = Math.random): Policy {
  const build = builders.get(name);
  if (build === undefined) throw new ConfigError(`unknown policy "${name}"; known: ${POLICY_NAMES.join(', ')}`);
  return build(config, random);
}
