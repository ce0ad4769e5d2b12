/**
 * KV sharing between live simulators (LMCache's peer-to-peer sharing): the
 * model's `PeerKv` (model/state.ts) over real HTTP.
 *
 * Steps: before a prompt is submitted, `lookup` asks every peer
 * (`POST /sim/v1/held`, its chain hashes) how many leading blocks it holds
 * in either tier, in parallel, and files the deepest answer under the
 * prompt's hash array; the model's admission then reads it synchronously
 * through `held` and charges the fetch at `bytesPerS`, as the DES does.
 * Complexity: one request per peer per prompt that is not whole here;
 * O(blocks) to encode and match.
 * Trade-off: the answer is the peers' caches at arrival, not at admission
 * (LMCache's lookup is one round trip too); a peer that evicts in between
 * is still fetched from, and an unreachable or slow peer counts as holding
 * nothing, so a lookup never fails a request.
 */
import type { PeerKv } from '../model/state.ts';

/** Wall ms a peer may take to answer a lookup before it counts as holding nothing. */
const LOOKUP_TIMEOUT_MS = 1_000;

export class RemotePeerKv implements PeerKv {
  readonly bytesPerS: number;
  /** Other simulators' base URLs (http://host:port), set at start or on /sim/v1/kv-peers. */
  #peers: readonly string[] = [];
  /** A submitted prompt's hash array → the deepest peer's leading blocks, while the sequence lives. */
  readonly #found = new WeakMap<BigUint64Array, number>();
  /** Lookups asked and blocks found (the /sim/v1/state counters). */
  readonly stats = { lookups: 0, failed: 0, foundBlocks: 0 };

  constructor(bytesPerS: number) {
    this.bytesPerS = bytesPerS;
  }

  get peers(): readonly string[] {
    return this.#peers;
  }

  set peers(urls: readonly string[]) {
    this.#peers = urls.map((u) => u.replace(/\/+$/, ''));
  }

  held(hashes: BigUint64Array, max: number): number {
    return Math.min(this.#found.get(hashes) ?? 0, max);
  }

  /** Asks every peer for its leading blocks of `hashes` (at most `max`) and files the deepest for `held`. */
  async lookup(hashes: BigUint64Array, max: number): Promise<void> {
    if (this.#peers.length === 0 || max <= 0) return;
    const body = JSON.stringify({ hashes: encodeHashes(hashes, max) });
    this.stats.lookups++;
    const answers = await Promise.all(this.#peers.map((u) => this.#ask(u, body)));
    const best = Math.min(max, Math.max(0, ...answers));
    this.stats.foundBlocks += best;
    if (best > 0) this.#found.set(hashes, best);
  }

  async #ask(url: string, body: string): Promise<number> {
    try {
      const res = await fetch(`${url}/sim/v1/held`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
      });
      if (res.status !== 200) {
        await res.body?.cancel();
        this.stats.failed++;
        return 0;
      }
      const b = (await res.json()) as { blocks?: unknown };
      return typeof b.blocks === 'number' && Number.isInteger(b.blocks) && b.blocks >= 0 ? b.blocks : 0;
    } catch {
      this.stats.failed++;
      return 0;
    }
  }
}

/** The first `max` chain hashes as 16-digit hex strings (the lookup's wire form). */
export function encodeHashes(hashes: BigUint64Array, max: number): string[] {
  const n = Math.min(hashes.length, max);
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) out[i] = hashes[i]!.toString(16).padStart(16, '0');
  return out;
}

/** The lookup's hashes back as chain hashes; undefined when any is not 1–16 hex digits. */
export function decodeHashes(list: unknown): BigUint64Array | undefined {
  if (!Array.isArray(list)) return undefined;
  const out = new BigUint64Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const h: unknown = list[i];
    if (typeof h !== 'string' || !/^[0-9a-f]{1,16}$/i.test(h)) return undefined;
    out[i] = BigInt(`0x${h}`);
  }
  return out;
}
