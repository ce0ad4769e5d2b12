/**
 * The router's gossip settings beyond those agents share (shared
 * settings.ts): its router links, connection cap, and how it batches and
 * relays its agents' states (docs/GOSSIP.md); part of its config schema
 * (config.ts).
 */
import { BATCH_READS_PER_S, BATCH_RELAY, BATCH_STATES_PER_S } from '@warmpath/shared/gossip';
import { GOSSIP_CONNECTION_SETTINGS, type Schema } from '@warmpath/shared/runtime';

export const GOSSIP_SETTINGS = {
  // Evidence for the default: docs/SCALE.md, 'Gossip mesh'.
  gossipPeers: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1_000,
    integer: true,
    essential: true,
    doc: 'stay connected to this many routers of the bootstrap and DNS candidates, replaced when one leaves; 0 = dial all',
  },
  ...GOSSIP_CONNECTION_SETTINGS,
  gossipBatchMs: { type: 'number', default: 50, min: 0, max: 1000, doc: 'relay window of agent states, ms; 0: off' },
  // Evidence for the default: docs/GOSSIP.md, 'The window widens with the routers'.
  gossipBatchReadsPerS: {
    type: 'number',
    default: BATCH_READS_PER_S,
    min: 0,
    max: 100_000,
    integer: true,
    doc: 'flooding: batches a router reads a second at most; its window widens to routers × 1000 / this ms; 0: fixed',
  },
  // Evidence for the default: docs/GOSSIP.md, 'The window widens with the routers'.
  gossipBatchStatesPerS: {
    type: 'number',
    default: BATCH_STATES_PER_S,
    min: 0,
    max: 10_000_000,
    integer: true,
    doc: 'flooding: states a router reads a second at most; its window widens until its agents coalesce under it; 0: off',
  },
  // Evidence for the default: docs/GOSSIP.md, 'Flooded batches: one copy, and lazy repair'.
  gossipRelay: {
    type: 'string',
    default: BATCH_RELAY,
    choices: ['flood', 'mesh'],
    doc: "batches to other routers: 'flood' once to each router of the group (links to all), 'mesh' via the gossipsub mesh",
  },
} as const satisfies Schema;
