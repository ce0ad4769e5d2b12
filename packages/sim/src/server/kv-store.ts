/**
 * The KV side channel between simulated workers. A prefill worker files the
 * KV of each finished prefill under a key (vLLM: its request id; SGLang: the
 * room) and serves it on `GET /sim/v1/kv/{key}?wait_ms=N`; a decode worker
 * fetches it from there over real HTTP, so a dead prefill worker really fails
 * the transfer. A fetch takes the entry and releases the prefill worker's
 * held blocks (its KV is read once); an entry nobody fetches expires after
 * `ttlMs` of wall time and releases them too (expiry is swept whenever the
 * store is used, so blocks may outlive it until the next file or fetch). A fetch
 * of a key not yet filed waits up to wait_ms (SGLang's decode worker may ask
 * before the prefill is done).
 * Complexity: O(1) per file and fetch; expiry sweeps the oldest entries on each file.
 */

/** What a decode worker learns about the KV it fetches. */
export interface KvRecord {
  readonly engineId: string;
  readonly promptTokens: number;
  /** The prefill worker's block ids holding the prompt's KV. */
  readonly blockIds: readonly number[];
}

interface Entry {
  readonly record: KvRecord;
  readonly expiresAt: number;
  /** Frees the prefill worker's blocks behind this KV. */
  readonly release: () => void;
}

export class KvStore {
  readonly #entries = new Map<string, Entry>();
  readonly #waiters = new Map<string, ((r: KvRecord | undefined) => void)[]>();
  readonly #ttlMs: number;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Files a finished prefill's KV; a waiting fetch takes it at once. `release` frees the blocks behind it, once. */
  put(key: string, record: KvRecord, release: () => void): void {
    this.#expire();
    const waiting = this.#waiters.get(key);
    if (waiting !== undefined && waiting.length > 0) {
      waiting.shift()!(record);
      if (waiting.length === 0) this.#waiters.delete(key);
      release();
      return;
    }
    this.#entries.get(key)?.release(); // a key filed twice keeps the newer KV
    this.#entries.delete(key);
    this.#entries.set(key, { record, expiresAt: performance.now() + this.#ttlMs, release });
  }

  #expire(): void {
    const now = performance.now();
    for (const [k, e] of this.#entries) {
      if (e.expiresAt > now) break; // insertion order = expiry order
      this.#entries.delete(k);
      e.release();
    }
  }

  /** Takes the KV filed under `key`, waiting up to `waitMs` (wall) for it; undefined if none came. */
  take(key: string, waitMs: number): Promise<KvRecord | undefined> {
    this.#expire();
    const e = this.#entries.get(key);
    if (e !== undefined) {
      this.#entries.delete(key);
      e.release();
      return Promise.resolve(e.record);
    }
    if (waitMs <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const list = this.#waiters.get(key) ?? [];
      const waiter = (r: KvRecord | undefined): void => {
        clearTimeout(timer);
        resolve(r);
      };
      const timer = setTimeout(() => {
        const i = list.indexOf(waiter);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) this.#waiters.delete(key);
        resolve(undefined);
      }, waitMs);
      list.push(waiter);
      this.#waiters.set(key, list);
    });
  }

  /** Server shutdown: pending fetches get nothing. */
  clear(): void {
    for (const e of this.#entries.values()) e.release();
    this.#entries.clear();
    const lists = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const list of lists) for (const w of list) w(undefined);
  }
}

/** Fetches the KV record from a prefill worker's side channel; undefined on any failure (dead worker, unknown key, timeout). */
export async function fetchKv(host: string, port: number, key: string, waitMs: number): Promise<KvRecord | undefined> {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const url = `http://${h}:${port}/sim/v1/kv/${encodeURIComponent(key)}?wait_ms=${Math.ceil(waitMs)}`;
  try {
    // The wait happens on the prefill worker; the margin only bounds a peer that accepts and never answers.
    const res = await fetch(url, { signal: AbortSignal.timeout(waitMs + 5_000) });
    if (res.status !== 200) {
      await res.body?.cancel();
      return undefined;
    }
    const b = (await res.json()) as Partial<KvRecord>;
    if (typeof b.promptTokens !== 'number' || !Array.isArray(b.blockIds) || typeof b.engineId !== 'string')
      return undefined;
    return { engineId: b.engineId, promptTokens: b.promptTokens, blockIds: b.blockIds };
  } catch {
    return undefined;
  }
}
