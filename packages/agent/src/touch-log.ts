/**
 * When the cache model's stamps were made: the cache model stamps every chunk
 * it touches with a counter, and this log says at what time (ms) each run of
 * stamps was made, one entry per recorded request rather than one per chunk.
 * With it an eviction says how long the chunk it dropped had gone unused.
 *
 * Steps: `note(stamp, now)` after a request's chunks are touched (stamps up to
 * `stamp` were made at `now`) → `timeOf(stamp)`: the time of the first entry
 * covering it → `prune(oldest)` drops entries older than the oldest stamp
 * still cached, and the older half whenever more than `max` remain (an old
 * chunk that never leaves a cache that never fills would keep them all).
 * Complexity: note O(1), timeOf O(log entries), prune amortised O(1).
 * Trade-off: past the cap, a stamp older than every entry reads the oldest
 * time kept, so an age reads lower, never higher.
 */
export class TouchLog {
  readonly #max: number;
  /** Entry k: stamps up to #stamps[k] were made at #times[k]; entries before #head are dropped. */
  #stamps: number[] = [];
  #times: number[] = [];
  #head = 0;

  constructor(max = 1 << 16) {
    this.#max = max;
  }

  /** Stamps up to `stamp` (and above the previous note's) were made at `now`. */
  note(stamp: number, now: number): void {
    this.#stamps.push(stamp);
    this.#times.push(now);
  }

  /** When `stamp` was made, ms (the oldest time kept for a stamp older than every entry); undefined for a stamp never noted. */
  timeOf(stamp: number): number | undefined {
    const stamps = this.#stamps;
    let lo = this.#head;
    let hi = stamps.length - 1;
    if (hi < lo || stamps[hi]! < stamp) return undefined;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (stamps[mid]! < stamp) lo = mid + 1;
      else hi = mid;
    }
    return this.#times[lo];
  }

  /** Drops entries before `oldest` (the oldest stamp anyone may still ask about), and the older half past the cap; compacts once half is dropped. */
  prune(oldest: number): void {
    const stamps = this.#stamps;
    let head = this.#head;
    while (head < stamps.length - 1 && stamps[head]! < oldest) head++;
    if (stamps.length - head > this.#max) head = stamps.length - Math.floor(this.#max / 2);
    this.#head = head;
    if (head * 2 > stamps.length) {
      this.#stamps = stamps.slice(head);
      this.#times = this.#times.slice(head);
      this.#head = 0;
    }
  }

  /** Entries kept. */
  get size(): number {
    return this.#stamps.length - this.#head;
  }

  clear(): void {
    this.#stamps = [];
    this.#times = [];
    this.#head = 0;
  }
}
