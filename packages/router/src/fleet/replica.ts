/**
 * What the fleet view hands out about one replica, and the mutable record
 * behind it. Policies and the HTTP layer read `ReplicaView`; only the fleet
 * modules write, through `ReplicaRecord`. The digest's sync state (table,
 * pulls, buffered deltas) is not on the record at all: digest-sync.ts keeps it
 * by slot.
 */
import type { ReplicaState } from '@warmpath/shared/wire';

export interface ReplicaView {
  readonly id: string;
  /** Small integer, reused after the replica is forgotten; indexes per-slot arrays. */
  readonly slot: number;
  /** 32-bit hash of the id: the same on every router (per-request slices of the fleet, placement's `slice` step). */
  readonly idHash: number;
  readonly state: ReplicaState;
  /** Local clock, ms, when the latest state arrived. */
  readonly receivedAt: number;
  /** Local clock, ms, that the published load corresponds to (for "own in-flight since that report"). */
  readonly reportAt: number;
  /** Published chunkChars differs from the router's: excluded and reported. */
  readonly chunkMismatch: boolean;
  /** status ready and state fresh (maintained by apply/sweep). */
  readonly live: boolean;
  /** Hashes in the digest the router holds for it (lags the agent while a snapshot is pulled). */
  readonly digestSize: number;
}

/** The fleet modules' writable form of a ReplicaView (the same object). */
export type ReplicaRecord = { -readonly [K in keyof ReplicaView]: ReplicaView[K] };

export type ViewEvent =
  | { type: 'chunk_mismatch'; replica: string; theirs: number; ours: number }
  | { type: 'snapshot_failed'; replica: string; error: string }
  | { type: 'joined' | 'forgotten'; replica: string };

/** Replicas counted by status: ready, draining, down, stale (not `fresh`), mismatch (chunk size). */
export function countByStatus(
  records: Iterable<ReplicaView>,
  fresh: (r: ReplicaView) => boolean,
): Record<string, number> {
  const out: Record<string, number> = { ready: 0, draining: 0, down: 0, stale: 0, mismatch: 0 };
  for (const r of records) {
    const k = r.chunkMismatch ? 'mismatch' : !fresh(r) ? 'stale' : r.state.status;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}
