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
 * Complexity: one message per router per period, relayed by the mesh, or
 * flooded to every router where routers flood their batches (gossipRelay).
 */
import type { GossipChannel, GossipNode } from '@warmpath/shared/gossip';
import type { Logger } from '@warmpath/shared/runtime';
import { SHARE_PUBLISH_MS, UsageShare, wellFormedShare } from './share.ts';
import type { Tenancy } from './tenancy.ts';
import type { Counts, FleetShare } from './types.ts';

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

/**
 * A live router's FleetShare: the tenants exist before the gossip node whose
 * peer id names this router's messages, so it answers as a lone router until
 * `attach` links a UsageShare to the node's channel.
 */
/** A router's membership of the gossip mesh, as router.ts holds it. */
interface Joined {
  readonly node: GossipNode | undefined;
  leave(): Promise<void>;
}

export class GossipShare implements FleetShare {
  readonly #tenancy: () => Tenancy | undefined;
  readonly #logger: Logger;
  #share: UsageShare | undefined;
  #link: ShareLink | undefined;

  /** A share for a router with a tenants file (`tenants` ≠ '') and gossip; none otherwise: it publishes nothing. */
  static wanted(
    tenants: string,
    gossip: boolean,
    tenancy: () => Tenancy | undefined,
    logger: Logger,
  ): GossipShare | undefined {
    return tenants !== '' && gossip ? new GossipShare(tenancy, logger) : undefined;
  }

  constructor(tenancy: () => Tenancy | undefined, logger: Logger) {
    this.#tenancy = tenancy;
    this.#logger = logger;
  }

  others(tenant: string, now: number): Counts {
    return this.#share?.others(tenant, now) ?? { requests: 0, tokens: 0 };
  }

  limitFactor(now: number): number {
    return this.#share?.limitFactor(now) ?? 1;
  }

  /** The share, once attached (stats, tests). */
  get share(): UsageShare | undefined {
    return this.#share;
  }

  /**
   * Shares the tenancy's usage of its limited tenants on the joined node's
   * `routers` channel (a node without one is logged); returns the membership
   * whose leave says bye first.
   */
  attach<J extends Joined>(joined: J): J {
    const tenancy = this.#tenancy();
    const node = joined.node;
    if (tenancy === undefined || node === undefined || this.#link !== undefined) return joined;
    let channel: GossipChannel;
    try {
      channel = node.channel(SHARE_CHANNEL);
    } catch {
      this.#logger.warn('tenants: the gossip node has no routers channel; limits hold per router, not fleet-wide');
      return joined;
    }
    const share = new UsageShare({
      id: node.peerId,
      local: (now) => tenancy.limiter.localUsage(now),
      limited: (name) => {
        const l = tenancy.tenants.get(name)?.limits;
        return l !== undefined && (l.requestsPerMinute !== undefined || l.tokensPerMinute !== undefined);
      },
    });
    this.#share = share;
    const link = (this.#link = linkShare(channel, share));
    return {
      ...joined,
      leave: async () => {
        await link.stop();
        await joined.leave();
      },
    };
  }
}
