/**
 * What the status page shows of this router's own traffic: the recent
 * placements and the hottest prefixes, kept beside the dispatch path.
 *
 * Steps per placement: append (time, branch, replica, model, prefix) to a
 * fixed ring; count the request's prefix — its chain hash at the routing-key
 * depth, so requests that share a ring key share a row — in a bounded
 * heavy-hitters table (Space-Saving: a new prefix that finds the table full
 * takes the least-counted row and its count + 1); every DECAY_EVERY
 * placements all counts halve, so yesterday's hot prefix fades.
 * Complexity: O(1) per placement, except an eviction scan of at most
 * PREFIX_ROWS rows when a new prefix meets a full table; reads sort at most
 * PREFIX_ROWS rows.
 * Trade-off: counts are approximate (overestimated by at most the evicted
 * row's count) for bounded memory; prefixes are shown by hash and depth,
 * never by prompt text.
 */
import type { RequestInfo } from '@warmpath/shared/wire';

/** Placements kept for the page. */
export const RECENT_PLACEMENTS = 200;
/** Prefix rows tracked (the page shows the top few). */
export const PREFIX_ROWS = 256;
/** Counts halve after this many placements. */
export const DECAY_EVERY = 2_000;

export interface PlacementRecord {
  /** Wall clock, ms since the epoch. */
  readonly at: number;
  readonly branch: string;
  /** Undefined when no replica could take it (saturated, no-replica). */
  readonly replica: string | undefined;
  readonly model: string;
  readonly adapter: string;
  /** Hex chain hash at the key depth; '' for prompts shorter than one chunk. */
  readonly prefix: string;
}

interface PrefixRow {
  readonly hash: bigint;
  readonly depth: number;
  readonly model: string;
  readonly adapter: string;
  count: number;
  lastAt: number;
}

export interface PrefixCount {
  readonly hash: bigint;
  /** Chunks of the prefix the hash covers. */
  readonly depth: number;
  readonly model: string;
  readonly adapter: string;
  /** Requests (decayed, approximate). */
  readonly count: number;
  readonly lastAt: number;
}

export class StatusRecorder {
  readonly #keyDepth: number;
  readonly #now: () => number;
  readonly #ring: Array<PlacementRecord | undefined> = new Array(RECENT_PLACEMENTS);
  #next = 0;
  #total = 0;
  readonly #prefixes = new Map<bigint, PrefixRow>();

  constructor(keyDepthChunks: number, now: () => number = Date.now) {
    this.#keyDepth = Math.max(1, keyDepthChunks);
    this.#now = now;
  }

  /** Placements recorded since start. */
  get total(): number {
    return this.#total;
  }

  /** A request dispatched to `replica` on `branch`. */
  record(info: RequestInfo, branch: string, replica: string): void {
    const at = this.#now();
    const depth = Math.min(this.#keyDepth, info.hashes.length);
    const hash = depth > 0 ? info.hashes[depth - 1]! : undefined;
    this.#push({
      at,
      branch,
      replica,
      model: info.model,
      adapter: info.adapter,
      prefix: hash === undefined ? '' : hex(hash),
    });
    if (hash !== undefined) this.#count(hash, depth, info, at);
  }

  /** No replica could take a request (`saturated`, `no-replica`): the core reports the branch only. */
  recordRefusal(branch: string): void {
    this.#push({ at: this.#now(), branch, replica: undefined, model: '', adapter: '', prefix: '' });
  }

  #push(p: PlacementRecord): void {
    this.#ring[this.#next] = p;
    this.#next = (this.#next + 1) % RECENT_PLACEMENTS;
    if (++this.#total % DECAY_EVERY === 0) this.#decay();
  }

  /** The recent placements, newest first. */
  recent(limit = RECENT_PLACEMENTS): PlacementRecord[] {
    const out: PlacementRecord[] = [];
    for (let i = 1; i <= RECENT_PLACEMENTS && out.length < limit; i++) {
      const r = this.#ring[(this.#next - i + RECENT_PLACEMENTS) % RECENT_PLACEMENTS];
      if (r === undefined) break;
      out.push(r);
    }
    return out;
  }

  /** The most requested prefixes, most first. */
  hottest(limit: number): PrefixCount[] {
    return [...this.#prefixes.values()].sort((a, b) => b.count - a.count || b.lastAt - a.lastAt).slice(0, limit);
  }

  #count(hash: bigint, depth: number, info: RequestInfo, at: number): void {
    const row = this.#prefixes.get(hash);
    if (row !== undefined) {
      row.count++;
      row.lastAt = at;
      return;
    }
    let inherited = 0;
    if (this.#prefixes.size >= PREFIX_ROWS) {
      let min: PrefixRow | undefined;
      for (const r of this.#prefixes.values()) if (min === undefined || r.count < min.count) min = r;
      inherited = min!.count;
      this.#prefixes.delete(min!.hash);
    }
    this.#prefixes.set(hash, {
      hash,
      depth,
      model: info.model,
      adapter: info.adapter,
      count: inherited + 1,
      lastAt: at,
    });
  }

  #decay(): void {
    for (const [h, r] of this.#prefixes) {
      r.count = Math.floor(r.count / 2);
      if (r.count === 0) this.#prefixes.delete(h);
    }
  }
}

export const hex = (h: bigint): string => h.toString(16).padStart(16, '0');
