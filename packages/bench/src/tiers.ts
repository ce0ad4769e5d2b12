/**
 * The fleet's KV beyond one GPU, as the benchmark deploys it: KV sharing
 * between replicas (`kvSharing`: in the DES each engine reads the others'
 * models, live each simulator asks the others over HTTP) and the tier costs every Warmpath router is then configured with
 * (docs/PLACEMENT.md, "Tiers and peers"). The host-memory tier's own
 * setting is scenarios.ts's `cpuKvRatio`.
 */
import type { Schema } from '@warmpath/shared/runtime';
import { type EngineModel, type EngineProfile, NET_KV_BYTES_PER_S, type PeerKv, PROFILES } from '@warmpath/sim';
import type { FleetShape } from './scenarios.ts';

export const KV_SHARING = ['off', 'peer'] as const;
export type KvSharing = (typeof KV_SHARING)[number];

/** The `kvSharing` setting, live and DES alike. */
export const KV_SHARING_SETTING = {
  kvSharing: {
    type: 'string',
    default: 'off',
    choices: KV_SHARING,
    doc: "peer: an engine lacking a prefix another replica holds fetches it over the network (LMCache's P2P sharing)",
  },
} as const satisfies Schema;

/**
 * The router's tier costs for a fleet shape, as its operator would set them
 * from the hardware: a host chunk's reload and a peer chunk's fetch against
 * its prefill (docs/PLACEMENT.md, "Tiers and peers"); none without either.
 */
export function tierRouterSettings(shape: FleetShape): Record<string, number> {
  const p = (PROFILES as Record<string, EngineProfile>)[shape.profile];
  if (p === undefined) return {};
  const perPrefill = (bytesPerS: number) => Math.min(1, (p.kvBytesPerToken / bytesPerS) * p.prefillTokensPerS);
  return {
    ...((shape.cpuKvRatio ?? 0) > 0 ? { hostReloadCost: perPrefill(p.h2dBytesPerS) } : {}),
    ...(shape.kvSharing === 'peer' ? { peerFetchCost: perPrefill(NET_KV_BYTES_PER_S) } : {}),
  };
}

/**
 * Replica `self`'s view of the others' caches with KV sharing on: the
 * deepest prefix any other engine holds in either tier, fetched over the
 * modelled network. O(replicas × matched blocks) per admission.
 */
export function sharedKv(models: readonly EngineModel[], self: number): PeerKv {
  return {
    bytesPerS: NET_KV_BYTES_PER_S,
    held(hashes, max) {
      let best = 0;
      for (let k = 0; k < models.length && best < max; k++)
        if (k !== self) best = Math.max(best, models[k]!.heldBlocks(hashes, max));
      return best;
    },
  };
}
