/**
 * The benchmark's emulations of peer routers (docs/PEERS.md), registered in
 * the router's policy registry so a router — the live benchmark's processes
 * (router-entry.ts) and the DES's in-process router cores — builds them by
 * name like its own. They are not the product's: `warmpath router` does not
 * offer them.
 *
 * Each emulation takes its own parameters, read from the router's config:
 * Dynamo the fleet's chunk size, llm-d the random source of its ties and the
 * chunk size, the others none.
 *
 * In a disaggregated fleet (`--pd P:D`) llm-d, Dynamo and SGLang's gateway
 * pair by their own P/D rules (Policy.pd: llmd.ts, dynamo.ts, sglang.ts);
 * KubeAI routes no P/D, so under `--pd` its prefill placement gets
 * warmpath's decode rule (docs/DISAGGREGATION.md).
 */
import { registerPolicy, type RouterConfig } from '@warmpath/router';
import { createDynamoKvPolicy } from './dynamo.ts';
import { createKubeaiPrefixHashPolicy } from './kubeai.ts';
import { createLlmdPolicy } from './llmd.ts';
import { createSglangCacheAwarePolicy } from './sglang.ts';

/** The emulations' policy names, in the benchmark's order. */
export const PEER_POLICIES = [
  'sglang-cache-aware',
  'llm-d-approx',
  'llm-d-precise',
  'dynamo-kv',
  'kubeai-prefix-hash',
] as const;
export type PeerPolicy = (typeof PEER_POLICIES)[number];

/**
 * The branches the emulations name, after each peer's own decision paths
 * (counted per policy in warmpath_router_placements_total like the router's).
 */
export const PEER_BRANCHES = {
  'sglang-cache-aware': [
    'sglang-balance', // imbalanced: least in-flight
    'sglang-cache-hit', // match rate above cache_threshold
    'sglang-least-load', // low match rate: least in-flight
  ],
  'llm-d-approx': ['llm-d-score'], // max weighted score (every pod saturated: the router's 'saturated')
  'llm-d-precise': ['llm-d-score'],
  'dynamo-kv': [
    'dynamo-cost', // minimum cost
    'dynamo-prefill-queue', // P/D: the prefill worker pulling from the prefill queue
  ],
  'kubeai-prefix-hash': [
    'kubeai-home', // the key's ring home within the bound
    'kubeai-walk', // a later endpoint clockwise (bounded load)
    'kubeai-home-over-bound', // every endpoint over the bound: the key's ring home anyway
  ],
} as const satisfies Record<PeerPolicy, readonly string[]>;

const none = (): undefined => undefined;
const llmd = (c: RouterConfig, r: () => number) => ({
  random: r,
  chunkChars: c.chunkChars,
  charsPerToken: c.charsPerToken,
});

/** Registers every emulation (idempotent); call before loading a router config that names one. */
export function registerPeers(): void {
  registerPolicy('sglang-cache-aware', { params: none, create: createSglangCacheAwarePolicy });
  registerPolicy('llm-d-approx', { params: llmd, create: (o) => createLlmdPolicy('approx', o) });
  registerPolicy('llm-d-precise', { params: llmd, create: (o) => createLlmdPolicy('precise', o) });
  registerPolicy('dynamo-kv', {
    params: (c) => ({ chunkChars: c.chunkChars, charsPerToken: c.charsPerToken }),
    create: createDynamoKvPolicy,
  });
  registerPolicy('kubeai-prefix-hash', { params: none, create: createKubeaiPrefixHashPolicy });
}
