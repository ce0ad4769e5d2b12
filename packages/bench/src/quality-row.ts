/**
 * One cell of the quality matrix (packages/bench/bench/quality.ts): TTFT
 * p50 / p99 in ms over every request sent, hit rate 0–1. What `--save`
 * writes, and what `--compare` and the docs' figures read.
 */
import type { L4Mode } from './l4.ts';

export interface QualityRow {
  scenario: string;
  seed: number;
  routers: number;
  /** How clients reach the routers (l4.ts); absent in rows saved before it was recorded: random. */
  l4?: L4Mode;
  /** Gossip delay spec and loss probability. */
  delay: string;
  loss: number;
  p50: number;
  p99: number;
  hit: number;
  completed: number;
  requests: number;
  /** Digest snapshots all routers pulled; one router's digest tables at the end, MiB. */
  pulls: number;
  viewMiB: number;
  /** State messages and their bytes per agent per simulated second (absent in older rows). */
  messagesPerReplicaS?: number;
  bytesPerReplicaS?: number;
  hashesPerMessage?: number;
  fullShare?: number;
}
