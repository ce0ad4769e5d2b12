/**
 * The router's conformance suite (@warmpath/router/testing) over the peers'
 * emulations, built through the registry as the benchmark's routers build
 * them: registered by registerPeers, named by the router config.
 */
import { createPolicy } from '@warmpath/router';
import { CONFIG, policyConformance } from '@warmpath/router/testing';
import { PEER_BRANCHES, PEER_POLICIES, registerPeers } from '../../src/peers/index.ts';

/** llm-d breaks score ties at random; the others answer the same for the same inputs. */
const RANDOMIZED = new Set<string>(['llm-d-approx', 'llm-d-precise']);

registerPeers();
for (const name of PEER_POLICIES)
  policyConformance(name, (random) => createPolicy(name, CONFIG, random), {
    branches: PEER_BRANCHES[name],
    deterministic: !RANDOMIZED.has(name),
  });
