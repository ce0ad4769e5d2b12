/**
 * The SGLang emulation's routing history: which workers were sent text
 * through each 16-character chunk, and when (for its LRU eviction), in a
 * form whose memory stays near the bound the gateway itself keeps.
 *
 * One entry per chunk hash: a single (time, worker) pair packed into one
 * number — time in whole ms since the tree's origin × WORKER_SPACE + the
 * worker's index — or, for a chunk sent to several workers, an array of such
 * numbers in first-sent order. Most chunks of long prompts were sent to one
 * worker, so most entries are one number: about 80 bytes a pair where a Map
 * of workers per chunk took over 200 (the trace with 16 routers ran the
 * benchmark out of its 4 GiB heap). The hashes are spread over SHARDS maps so
 * no one map nears the 2^24 entries a JavaScript Map can hold.
 *
 * evictOldest(count) drops the `count` least recently sent pairs: one pass
 * copies every pair's time into a Float64Array, a typed sort finds the
 * cut-off time, a second pass deletes older pairs (and, of pairs at the
 * cut-off time, the first met until the count is reached).
 * Complexity: record and the per-chunk read O(workers of the chunk);
 * evictOldest O(P log P) for P pairs, every 120 s of simulated time.
 * Trade-off: times are whole ms, so pairs sent within the same ms tie for
 * eviction; at most WORKER_SPACE workers and 2^37 ms (4.3 years) of uptime.
 */

/** Distinct workers a tree can name. */
export const WORKER_SPACE = 2 ** 16;
/** Maps the hashes are spread over (by their low bits). */
const SHARDS = 16;

type Entry = number | number[];

export class ChunkTree {
  readonly #shards: Map<bigint, Entry>[] = Array.from({ length: SHARDS }, () => new Map());
  readonly #origin: number;
  /** (chunk, worker) pairs held. */
  pairs = 0;

  constructor(origin: number) {
    this.#origin = origin;
  }

  #shard(h: bigint): Map<bigint, Entry> {
    return this.#shards[Number(h & BigInt(SHARDS - 1))]!;
  }

  /** Worker `w` (an index) was sent the chunk `h` at `now` (ms). */
  record(h: bigint, w: number, now: number): void {
    const packed = Math.max(0, Math.floor(now - this.#origin)) * WORKER_SPACE + w;
    const shard = this.#shard(h);
    const e = shard.get(h);
    if (e === undefined) {
      shard.set(h, packed);
      this.pairs++;
    } else if (typeof e === 'number') {
      if (e % WORKER_SPACE === w) shard.set(h, packed);
      else {
        shard.set(h, [e, packed]);
        this.pairs++;
      }
    } else {
      const i = e.findIndex((p) => p % WORKER_SPACE === w);
      if (i >= 0) e[i] = packed;
      else {
        e.push(packed);
        this.pairs++;
      }
    }
  }

  /** Calls `each(worker index)` for every worker sent chunk `h`, in first-sent order; false = the chunk is unknown. */
  workersOf(h: bigint, each: (w: number) => void): boolean {
    const e = this.#shard(h).get(h);
    if (e === undefined) return false;
    if (typeof e === 'number') each(e % WORKER_SPACE);
    else for (const p of e) each(p % WORKER_SPACE);
    return true;
  }

  /** Drops the `count` least recently sent pairs; returns how many it dropped. */
  evictOldest(count: number): number {
    if (count <= 0 || this.pairs === 0) return 0;
    const times = new Float64Array(this.pairs);
    let n = 0;
    for (const shard of this.#shards) {
      for (const e of shard.values()) {
        if (typeof e === 'number') times[n++] = Math.floor(e / WORKER_SPACE);
        else for (const p of e) times[n++] = Math.floor(p / WORKER_SPACE);
      }
    }
    times.sort();
    const cut = times[Math.min(count, n) - 1]!;
    let atCut = 0;
    for (let i = 0; i < Math.min(count, n); i++) if (times[i] === cut) atCut++;
    let dropped = 0;
    const old = (p: number): boolean => {
      const t = Math.floor(p / WORKER_SPACE);
      if (t < cut) return true;
      if (t === cut && atCut > 0) {
        atCut--;
        return true;
      }
      return false;
    };
    for (const shard of this.#shards) {
      for (const [h, e] of shard) {
        if (typeof e === 'number') {
          if (old(e)) {
            shard.delete(h);
            dropped++;
          }
          continue;
        }
        const kept = e.filter((p) => !old(p));
        dropped += e.length - kept.length;
        if (kept.length === 0) shard.delete(h);
        else shard.set(h, kept.length === 1 ? kept[0]! : kept);
      }
    }
    this.pairs -= dropped;
    return dropped;
  }
}
