/**
 * The router's prefill/decode settings (docs/DISAGGREGATION.md, "Settings"),
 * part of its config schema (config.ts): read only in fleets whose agents
 * publish a role.
 */
import type { Schema } from '@warmpath/shared/runtime';

export const PD_SETTINGS = {
  pdThresholdTokens: {
    type: 'number',
    default: 1_024,
    min: 0,
    integer: true,
    doc: 'P/D: a prompt the decode replica lacks at most this many tokens of is prefilled there, with no KV transfer',
  },
  pdTransferCost: {
    type: 'number',
    default: 0.25,
    min: 0,
    doc: 'P/D: one prompt token sent over a KV link between zones, in tokens of decode load (a tenth within one zone)',
  },
  // Evidence for the default: docs/DISAGGREGATION.md, 'Prefilling on the decode pool by load'.
  pdStallShare: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1,
    doc: "P/D: the share of its decode legs' inter-token gaps a router's local prefills may stall (0: none by load)",
  },
  // Evidence: docs/DISAGGREGATION.md, 'Prefilling on the decode pool by load'.
  pdItlTargetMs: {
    type: 'number',
    default: 0,
    min: 0,
    max: 60_000,
    doc: 'P/D: no prefill by load on a decode replica whose published ITL p99 is above this, ms (0: the budget alone)',
  },
  pdChunkTokens: {
    type: 'number',
    default: 8_192,
    min: 1,
    integer: true,
    doc: "P/D: the engines' prompt tokens per step (vLLM max_num_batched_tokens); a local prefill's chunk stalls a step",
  },
} as const satisfies Schema;
