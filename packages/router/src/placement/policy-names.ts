/**
 * The policy names a router's config accepts: the product's own, then any a
 * program registers (placement/registry.ts) before loading its config. Kept
 * apart from the registry so the config schema reads the names without
 * importing the policies (which read the config's type).
 */

/** The product's own policies, in the order `--help` lists them. */
export const BUILT_IN_POLICIES = Object.freeze([
  'warmpath',
  'round-robin',
  'least-request',
  'power-of-two',
  'consistent-hash',
  'random',
  'chwbl-header',
] as const);

export type BuiltInPolicy = (typeof BUILT_IN_POLICIES)[number];

/** Every accepted name (live: registerPolicy appends to it). */
export const POLICY_NAMES: string[] = [...BUILT_IN_POLICIES];
