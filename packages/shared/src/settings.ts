/**
 * Settings the agent and the router both have, worded once: each schema
 * spreads these fragments where they stand in its help and docs, so the two
 * commands cannot drift apart on what a swarm key or a log level means.
 */
import type { Schema } from './config.ts';
import { LOG_LEVELS } from './log.ts';

/** The fleet's gossip key: every node needs the same file, or the explicit opt-out. */
export const SWARM_KEY_SETTINGS = {
  swarmKey: {
    type: 'string',
    default: '',
    essential: true,
    doc: "path of the fleet's swarm key file, required for gossip (`warmpath keygen` makes one)",
  },
  insecureNoSwarmKey: {
    type: 'boolean',
    default: false,
    doc: 'join gossip without a swarm key: anyone reaching the gossip port can publish fleet state (tests only)',
  },
} as const satisfies Schema;

/** The gossip connection cap, the same rule on agents and routers. */
export const GOSSIP_CONNECTION_SETTINGS = {
  gossipMaxConnections: {
    type: 'number',
    default: 300,
    min: 1,
    max: 100_000,
    integer: true,
    doc: 'gossip connections held at most (routers and agents); beyond it new ones are refused, agents pick another router',
  },
} as const satisfies Schema;

/** Structured logs on stderr, and whether prompts may reach them. */
export const LOG_SETTINGS = {
  logLevel: {
    type: 'string',
    default: 'info',
    choices: LOG_LEVELS,
    essential: true,
    doc: 'least severe level logged (JSON lines on stderr); info logs one access line per request',
  },
  logPrompts: {
    type: 'boolean',
    default: false,
    doc: "put each request's prompt in its access-log line (off: prompts never reach the logs)",
  },
} as const satisfies Schema;
