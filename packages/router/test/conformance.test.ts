/** The conformance suite (conformance.ts) over every policy the product offers; the registry's rules. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@warmpath/shared/runtime';
import { routerConfig } from '../src/config.ts';
import { BUILT_IN_POLICIES, createPolicy, POLICY_NAMES, registerPolicy } from '../src/placement/registry.ts';
import type { Policy } from '../src/placement/types.ts';
import { policyConformance } from './conformance.ts';
import { CONFIG } from './helpers.ts';

/** The randomized policies answer differently for the same inputs; the others must not. */
const RANDOMIZED = new Set(['random', 'power-of-two']);

for (const name of BUILT_IN_POLICIES)
  policyConformance(name, (random) => createPolicy(name, CONFIG, random), { deterministic: !RANDOMIZED.has(name) });

describe('policy registry', () => {
  it("offers the product's policies only, and an unknown one is a config error", () => {
    expect([...POLICY_NAMES]).toEqual([...BUILT_IN_POLICIES]);
    expect([...BUILT_IN_POLICIES]).toEqual([
      'warmpath',
      'round-robin',
      'least-request',
      'power-of-two',
      'consistent-hash',
      'random',
      'chwbl-header',
    ]);
    expect(() => routerConfig({ policy: 'sglang-cache-aware' })).toThrow(ConfigError);
    expect(() => routerConfig({ policy: 'sglang-cache-aware' })).toThrow(/must be one of warmpath, round-robin/);
    expect(() => createPolicy('sglang-cache-aware', CONFIG)).toThrow(ConfigError);
  });

  it('builds a registered policy by name from its own parameters, read from the config', () => {
    const seen: number[] = [];
    registerPolicy('test-first', {
      params: (config) => ({ chunkChars: config.chunkChars }),
      create: (p): Policy => {
        seen.push(p.chunkChars);
        return createPolicy('round-robin', CONFIG);
      },
    });
    const config = routerConfig({ policy: 'test-first', chunkChars: 512 });
    expect(createPolicy(config.policy, config).name).toBe('round-robin');
    expect(seen).toEqual([512]);
    expect(POLICY_NAMES).toContain('test-first');
  });
});
