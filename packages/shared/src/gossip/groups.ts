/**
 * Model-group topics: a router holds only the groups it serves.
 *
 * Beside the fleet topic `warmpath/<fleet>/state/1` each model group has its
 * own, `warmpath/<fleet>/group/<group>/state/1` (the group URI-encoded: a
 * model name may hold '/'). A group is an agent's `--group`, else its base
 * model (protocol.ts groupOf).
 *
 * Rules:
 *  - A router serving some groups subscribes to their topics only: it
 *    receives and relays nothing else.
 *  - A router serving every group (the default) subscribes to the fleet
 *    topic and joins a group's topic as soon as it learns of the group: from
 *    a state on the fleet topic, or a peer subscribing to the group's topic.
 *    So every group's mesh holds the routers serving everything plus the
 *    group's own routers, and a group router reaches the others through it.
 *  - An agent publishes a state on its group's topic when a connected peer
 *    subscribes to it, and on the fleet topic when a connected peer
 *    subscribes to that but not to the group's (a router that has not joined
 *    the group yet, or an older one) or when no peer takes the group's.
 *    Once its routers joined, an agent publishes each state once.
 * Complexity: O(peers subscribed) per publish, as before.
 * Trade-off: a router serving everything joins one mesh per group (heartbeat
 * control grows with the groups, MAX_GROUPS bounds them), so that the bytes a
 * group router receives are its groups' only.
 */
import { MAX_GROUPS, TOPIC_PREFIX, TOPIC_SUFFIX } from './constants.ts';
import { GossipConfigError } from './types.ts';

const GROUP_INFIX = '/group/';
/** A group name: 1-256 characters, no control characters (a model name such as `org/Model-8B` is one). */
const MAX_GROUP_CHARS = 256;

/** The topic of `group`'s states in `fleet` (a valid fleet name). */
export function groupTopicFor(fleet: string, group: string): string {
  return `${TOPIC_PREFIX}${fleet}${GROUP_INFIX}${encodeURIComponent(group)}${TOPIC_SUFFIX}`;
}

/** The group whose topic `topic` is in `fleet`, undefined for any other topic. */
export function groupOfTopic(fleet: string, topic: string): string | undefined {
  const head = `${TOPIC_PREFIX}${fleet}${GROUP_INFIX}`;
  if (!topic.startsWith(head) || !topic.endsWith(TOPIC_SUFFIX)) return undefined;
  try {
    const group = decodeURIComponent(topic.slice(head.length, topic.length - TOPIC_SUFFIX.length));
    return isGroupName(group) ? group : undefined;
  } catch {
    return undefined;
  }
}

export function isGroupName(group: unknown): group is string {
  return (
    typeof group === 'string' &&
    group.length > 0 &&
    group.length <= MAX_GROUP_CHARS &&
    !/[\u0000-\u001f\u007f]/.test(group)
  );
}

/** `groups` as given (undefined: every group), checked. */
export function validateGroups(groups: unknown): readonly string[] | undefined {
  if (groups === undefined) return undefined;
  if (!Array.isArray(groups) || groups.length === 0 || groups.length > MAX_GROUPS)
    throw new GossipConfigError(`groups must be a list of 1 to ${MAX_GROUPS} group names, or absent for every group`);
  for (const g of groups)
    if (!isGroupName(g))
      throw new GossipConfigError(
        `group ${JSON.stringify(g)} is not a group name: 1-${MAX_GROUP_CHARS} characters, no control characters`,
      );
  return Object.freeze([...new Set(groups as string[])]);
}

/** The topics one state of `group` goes on (the rules above), given who subscribes to what among the connected peers. */
export function publishTopics(
  fleetTopic: string,
  groupTopic: string | undefined,
  subscribers: (topic: string) => readonly string[],
): string[] {
  if (groupTopic === undefined) return [fleetTopic];
  const takers = new Set(subscribers(groupTopic));
  const fleetOnly = subscribers(fleetTopic).some((peer) => !takers.has(peer));
  if (takers.size === 0) return [fleetTopic];
  return fleetOnly ? [groupTopic, fleetTopic] : [groupTopic];
}
