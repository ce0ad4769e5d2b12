/**
 * Pulls a replica's full digest snapshot from its agent's admin API
 * (`GET {admin}/warmpath/v1/digest`, msgpack). One undici Agent for all admin
 * calls; every pull has a deadline. One pull per replica at a time is digest-sync.ts's job.
 */
import { Agent, request } from 'undici';
import { LIMITS, SNAPSHOT_CONTENT_TYPE } from '@warmpath/shared/wire';
import type { ReplicaView } from './replica.ts';

export const DIGEST_PATH = '/warmpath/v1/digest';

/** `authorization`: the header presenting the agents' shared token, when one is configured. */
export function snapshotFetcher(
  timeoutMs: number,
  authorization?: string,
): { fetch: (r: ReplicaView) => Promise<Uint8Array>; close: () => Promise<void> } {
  const dispatcher = new Agent({
    connectTimeout: timeoutMs,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connections: 4,
  });
  return {
    async fetch(r: ReplicaView): Promise<Uint8Array> {
      const url = new URL(`${r.state.admin.replace(/\/+$/, '')}${DIGEST_PATH}`);
      const res = await request(url, {
        dispatcher,
        headers: { accept: SNAPSHOT_CONTENT_TYPE, ...(authorization !== undefined ? { authorization } : {}) },
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`GET ${url.href}: HTTP ${res.statusCode}`);
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > LIMITS.snapshotBytes) {
        res.body.destroy();
        throw new Error(`GET ${url.href}: snapshot of ${declared} bytes exceeds ${LIMITS.snapshotBytes}`);
      }
      return new Uint8Array(await res.body.arrayBuffer());
    },
    close: () => dispatcher.close(),
  };
}
