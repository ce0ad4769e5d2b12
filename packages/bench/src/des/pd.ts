/**
 * Prefill/decode disaggregation in the discrete-event fleet: the router
 * core's pair (placement/pair.ts) carried out in virtual time, as the live
 * transport does it over HTTP (router http/pd.ts) and the simulator's
 * workers do it (sim server/receive.ts).
 *
 * Steps of a transfer attempt: one hop to the prefill replica's agent
 * (admission; a refusal comes back one hop later as the prefill leg's) → its
 * engine runs the prompt and one token → the decode replica's prefix cache
 * is probed, and what it lacks crosses the KV link (model/transfer.ts,
 * kvTransferMs) → the decode replica's agent admits it as a decode leg (no
 * prefill queue) and its engine takes the KV as received after that delay,
 * then streams to the client. The link is the simulator's default one.
 * A decode leg refused there comes back with the transfer (SendResult's
 * `transfer`), and a redecode (Dispatch's `transfer`, placement/pair.ts)
 * sends the decode leg alone: one hop, the probe, the transfer, the agent.
 * Complexity: O(1) events per leg beyond the engine's own steps.
 */
import type { Dispatch, SendResult } from '@warmpath/router';
import { bandRank } from '@warmpath/shared/wire';
import { kvTransferMs, type EngineProfile, type KvLink } from '@warmpath/sim';
import type { EventQueue } from './queue.ts';
import type { DesReplica } from './replica.ts';
import type { Rec } from './request.ts';

/** The simulator's default KV link (`warmpath sim --kv-link-gbps 200 --kv-link-latency-ms 1`). */
export const DES_KV_LINK: KvLink = { gbps: 200, latencyMs: 1 };

/** `P:D` → the replicas' roles, prefill first; undefined for ''. */
export function pdRolesOf(spec: string | undefined): Array<'prefill' | 'decode'> | undefined {
  if (spec === undefined || spec === '') return undefined;
  const m = /^(\d+):(\d+)$/.exec(spec);
  const p = Number(m?.[1]);
  const d = Number(m?.[2]);
  if (m === null || p < 1 || d < 1) throw new Error(`--pd takes P:D, at least one of each (got "${spec}")`);
  return [...Array<'prefill'>(p).fill('prefill'), ...Array<'decode'>(d).fill('decode')];
}

/** Carries out `d` if it is a transfer (d.prefill or d.transfer set) and returns true; false for a one-leg attempt. */
export function sendPair(
  q: EventQueue,
  hop: number,
  profile: EngineProfile,
  byId: ReadonlyMap<string, DesReplica>,
  d: Dispatch<Rec>,
  report: (r: SendResult) => void,
): boolean {
  const from = d.prefill ?? d.transfer?.prefill;
  if (from === undefined) return false;
  const rec = d.ctx;
  const decode = byId.get(d.replica.id)!;
  const toDecode = (): void => {
    d.prefillDone?.(true);
    const info = rec.prep.info;
    const held = decode.model.probe(rec.prep.promptTokens, rec.prep.blockHashes, info.adapter).cachedTokens;
    const readyDelayMs = kvTransferMs(profile, rec.prep.promptTokens - held, DES_KV_LINK);
    q.after(hop, () => {
      const refused = decode.offer(rec, d.attempt, report, undefined, bandRank(d.band), {
        kind: 'decode',
        readyDelayMs,
      });
      const transfer = { prefill: from };
      if (refused !== undefined) q.after(hop, () => report({ kind: 'rejected', status: 429, ...refused, transfer }));
    });
  };
  // A redecode: the prefill is done, its KV goes to this decode replica.
  if (d.prefill === undefined) {
    toDecode();
    return true;
  }
  const prefill = byId.get(d.prefill.id)!;
  q.after(hop, () => {
    const refused = prefill.offer(rec, d.attempt, report, undefined, bandRank(d.band), {
      kind: 'prefill',
      done: () => q.after(hop, toDecode),
    });
    if (refused === undefined) return;
    d.prefillDone?.(false);
    q.after(hop, () => report({ kind: 'rejected', status: 429, ...refused, leg: 'prefill' }));
  });
  return true;
}
