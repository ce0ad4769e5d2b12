/**
 * The fleet share's live transport: a router with a tenants file publishes
 * its usage message (share.ts) on the routers' gossip channel every
 * SHARE_PUBLISH_MS and takes the others' from it; a router without one never
 * calls this and publishes nothing.
 *
 * Steps: the channel's validator rejects a malformed message or one whose
 * signer is not the router it names (gossipsub lowers the sender's score and
 * relays nothing); delivered messages go to `share.ingest` with the signer as
 * the author; a timer publishes (a publish that fails is counted, the next
 * one is a fresh message anyway); `stop` publishes a bye so the others
 * forget this router at once rather than after FORGET_MS.
 * Complexity: one message per router per period, relayed by the mesh.
 */
import type { GossipChannel } from '@warmpath/shared/gossip';
import { SHARE_PUBLISH_MS, wellFormedShare, type UsageShare } from './share.ts';

/** The gossip channel the routers share usage on: `warmpath/<fleet>/routers/1`. */
export const SHARE_CHANNEL = 'routers';

export interface ShareLink {
  /** Publishes that failed inside gossipsub. */
  readonly publishErrors: number;
  /** Says bye, stops publishing and listening. */
  stop(): Promise<void>;
}

export function linkShare(
  channel: GossipChannel,
  share: UsageShare,
  now: () => number = Date.now,
  everyMs = SHARE_PUBLISH_MS,
): ShareLink {
  let publishErrors = 0;
  channel.setValidator((bytes, origin) => (wellFormedShare(bytes, origin.peer) ? 'accept' : 'reject'));
  const unsubscribe = channel.onMessage((bytes, from) => void share.ingest(bytes, from, now()));
  const publish = (bye: boolean): Promise<void> =>
    channel.publish(share.encode(now(), bye)).then(
      () => {},
      () => void publishErrors++,
    );
  const timer = setInterval(() => void publish(false), everyMs);
  timer.unref();
  return {
    get publishErrors() {
      return publishErrors;
    },
    async stop() {
      clearInterval(timer);
      unsubscribe();
      await publish(true);
      channel.setValidator(undefined);
    },
  };
}
