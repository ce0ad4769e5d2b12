/**
 * The published figures placement reads for every candidate on every
 * request, kept in columns indexed by replica slot and written as states
 * arrive (FleetView: join, update, liveness change, forget).
 *
 * Steps: `set` copies a state's load and capacity figures into the columns
 * and folds whether the replica may be placed on at all (live, chunk size
 * matching, status ready, weight > 0) into its endpoint bits, so one column
 * read answers "may it serve this endpoint".
 * Complexity: set O(endpoints); a read is one typed-array load.
 * Trade-off: a second copy of a few numbers per replica, kept in step with
 * the record by the view alone, for a candidate table over 1,000 replicas
 * that reads dense arrays instead of four objects per replica (record,
 * state, load, capacity). Invariant: a column always equals the record's
 * latest state. Evidence: docs/SCALE.md, "Placement at 1,000 replicas".
 */
import { ENDPOINTS, type Endpoint, type ReplicaState } from '@warmpath/shared/wire';
import { holding } from '@warmpath/shared/runtime';

const ENDPOINT_BIT: Record<Endpoint, number> = Object.fromEntries(ENDPOINTS.map((e, i) => [e, 1 << i])) as Record<
  Endpoint,
  number
>;

/** The bit of `e` in the endpoints column. */
export function endpointBit(e: Endpoint): number {
  return ENDPOINT_BIT[e];
}

/** Per-slot columns; a slot never set reads 0 everywhere (not placeable). */
export class PublishedColumns {
  inflightTokens: Float64Array = new Float64Array(64);
  prefillTokens: Float64Array = new Float64Array(64);
  kvUsedTokens: Float64Array = new Float64Array(64);
  kvTokens: Float64Array = new Float64Array(64);
  weight: Float64Array = new Float64Array(64);
  inflight: Float64Array = new Float64Array(64);
  /** Published arrivalTokensPerS (0 from an agent that sends none). */
  arrival: Float64Array = new Float64Array(64);
  /** Published recentTokensPerS (0 from an agent that sends none). */
  recent: Float64Array = new Float64Array(64);
  /** Local clock, ms, when the state arrived. */
  receivedAt: Float64Array = new Float64Array(64);
  /** Local clock, ms, that the published load corresponds to (ReplicaView.reportAt). */
  reportAt: Float64Array = new Float64Array(64);
  /** Bit per endpoint offered, 0 when the replica may not be placed on at all (not live, chunk mismatch, not ready, weight ≤ 0). */
  endpoints: Uint8Array = new Uint8Array(64);

  /** Writes slot's columns from its latest state; `usable`: live (ready and current) with a matching chunk size. */
  set(slot: number, s: ReplicaState, receivedAt: number, reportAt: number, usable: boolean): void {
    if (slot >= this.weight.length) this.#grow(slot);
    this.inflightTokens[slot] = s.load.inflightTokens;
    this.prefillTokens[slot] = s.load.prefillTokens;
    this.kvUsedTokens[slot] = s.load.kvUsedTokens;
    this.kvTokens[slot] = s.capacity.kvTokens;
    this.weight[slot] = s.capacity.weight;
    this.inflight[slot] = s.load.inflight;
    this.arrival[slot] = s.load.arrivalTokensPerS ?? 0;
    this.recent[slot] = s.load.recentTokensPerS ?? 0;
    this.receivedAt[slot] = receivedAt;
    this.reportAt[slot] = reportAt;
    let bits = 0;
    if (usable && s.capacity.weight > 0) for (const e of s.endpoints) bits |= ENDPOINT_BIT[e];
    this.endpoints[slot] = bits;
  }

  /** The slot's replica was forgotten: nothing may be placed there until the slot is reused. */
  clear(slot: number): void {
    if (slot < this.endpoints.length) this.endpoints[slot] = 0;
  }

  #grow(slot: number): void {
    this.inflightTokens = holding(this.inflightTokens, slot);
    this.prefillTokens = holding(this.prefillTokens, slot);
    this.kvUsedTokens = holding(this.kvUsedTokens, slot);
    this.kvTokens = holding(this.kvTokens, slot);
    this.weight = holding(this.weight, slot);
    this.inflight = holding(this.inflight, slot);
    this.arrival = holding(this.arrival, slot);
    this.recent = holding(this.recent, slot);
    this.receivedAt = holding(this.receivedAt, slot);
    this.reportAt = holding(this.reportAt, slot);
    this.endpoints = holding(this.endpoints, slot);
  }
}
