/**
 * Relayed state in batches (docs/GOSSIP.md, "Batches: one signature for many
 * states"): the wire forms and the window.
 *
 *  - A hand-off frame (agent → its first-hop router, on a libp2p stream over
 *    the Noise connection that already names the agent): varint length, then
 *    varint group length, the group (UTF-8; empty = none) and the state bytes.
 *  - A batch (the router's one gossipsub message per window and group):
 *    BATCH_MAGIC, the router's epoch (4 bytes, random per process), then
 *    per state: varint (slot × 2 + 1 when the author follows), [varint
 *    author length, the author's peer id (multihash bytes)], varint state
 *    length, the state bytes. A slot names one agent for one router and
 *    epoch: its peer id goes beside its state on first sight and then at
 *    most once per AUTHOR_EVERY_MS; receivers keep slot → peer id per
 *    (router, epoch) and skip a state whose slot they have not learnt yet
 *    (the next naming is at most a second away). BATCH_MAGIC is 0xc1, the
 *    one byte msgpack never uses, so no state (msgpack, map or compact
 *    form) is ever read as a batch nor a batch as a state.
 *  - The window (`Batcher`), per group: a group's batches go out at most
 *    once per `windowMs`. A state that comes when the last batch is a
 *    window old or older goes at once, alone; one that comes sooner waits
 *    with the others until that window ends (or until the pending bytes
 *    reach `maxBytes`). So a quiet router adds no delay, a busy one puts a
 *    window's states under one signature, and no state waits more than
 *    `windowMs` (Nagle's rule, per group).
 *  - Coalescing (`compose`, coalesce.ts): a state of an agent that already
 *    has one waiting in the group's window takes that one's place as one
 *    state standing for both, where the two compose; else it waits beside
 *    it. The pending bytes follow the replacement; the count of states
 *    composed away is `coalesced`.
 *
 * Complexity: pack and unpack O(bytes); a peer id's text is base58 of its
 * multihash, O(length²) on 38 bytes, cached.
 * Trade-off: a state waits up to `windowMs` at its first hop; in exchange the
 * signature, seqno, key, message id, IHAVE and framing of a gossipsub message
 * are paid once per batch instead of once per state.
 */

/** The first byte of every batch; msgpack never uses it (docs: "never used"). */
export const BATCH_MAGIC = 0xc1;

/** One state inside a batch: its agent's slot, its author (the agent's peer id) when named, and its bytes. */
export interface BatchEntry {
  readonly slot: number;
  readonly author: string | undefined;
  readonly state: Uint8Array;
}
/** A state as packed: its agent's slot, the agent's peer id (multihash bytes) when named. */
export interface PackedEntry {
  readonly slot: number;
  readonly author?: Uint8Array | undefined;
  readonly state: Uint8Array;
}

/** A batch names each of its agents at most once per this long, ms; a receiver that missed it waits as long. */
export const AUTHOR_EVERY_MS = 1_000;
/** Agents one router's epoch numbers at most; past it a new epoch starts (every agent named again). */
const MAX_SLOTS = 65_536;
const EPOCH_BYTES = 4;

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    len++;
  }
  return len;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}

/** [value, next offset], or undefined when the bytes end first or it runs past 4 bytes (2^28). */
function readVarint(bytes: Uint8Array, at: number): [number, number] | undefined {
  let n = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (at >= bytes.byteLength) return undefined;
    const b = bytes[at++]!;
    n += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return [n, at];
  }
  return undefined;
}

/** One batch of `epoch` from its states. */
export function packBatch(epoch: number, entries: readonly PackedEntry[]): Uint8Array {
  let size = 1 + EPOCH_BYTES;
  for (const e of entries) {
    const author = e.author?.byteLength ?? -1;
    size += varintLength(e.slot * 2 + 1) + (author < 0 ? 0 : varintLength(author) + author);
    size += varintLength(e.state.byteLength) + e.state.byteLength;
  }
  const out = new Uint8Array(size);
  out[0] = BATCH_MAGIC;
  new DataView(out.buffer).setUint32(1, epoch >>> 0);
  let at = 1 + EPOCH_BYTES;
  for (const e of entries) {
    at = writeVarint(out, at, e.slot * 2 + (e.author !== undefined ? 1 : 0));
    if (e.author !== undefined) {
      at = writeVarint(out, at, e.author.byteLength);
      out.set(e.author, at);
      at += e.author.byteLength;
    }
    at = writeVarint(out, at, e.state.byteLength);
    out.set(e.state, at);
    at += e.state.byteLength;
  }
  return out;
}

export const isBatch = (data: Uint8Array): boolean => data.byteLength > 0 && data[0] === BATCH_MAGIC;

/** A batch's epoch and states (views into `data`), or undefined when it is not a well-formed batch of at most `maxEntries`. */
export function unpackBatch(
  data: Uint8Array,
  maxEntries: number,
): { epoch: number; entries: BatchEntry[] } | undefined {
  if (!isBatch(data) || data.byteLength < 1 + EPOCH_BYTES) return undefined;
  const epoch = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1);
  const entries: BatchEntry[] = [];
  for (let at = 1 + EPOCH_BYTES; at < data.byteLength;) {
    const h = readVarint(data, at);
    if (h === undefined || entries.length >= maxEntries) return undefined;
    at = h[1];
    let author: string | undefined;
    if (h[0] % 2 === 1) {
      const a = readVarint(data, at);
      if (a === undefined || a[0] === 0 || a[0] > MAX_PEER_ID_BYTES || a[1] + a[0] > data.byteLength) return undefined;
      author = peerIdText(data.subarray(a[1], a[1] + a[0]));
      at = a[1] + a[0];
    }
    const s = readVarint(data, at);
    if (s === undefined || s[0] === 0 || s[1] + s[0] > data.byteLength) return undefined;
    entries.push({ slot: Math.floor(h[0] / 2), author, state: data.subarray(s[1], s[1] + s[0]) });
    at = s[1] + s[0];
  }
  return entries.length > 0 ? { epoch, entries } : undefined;
}

/** A peer id's multihash is at most this long (an identity-hashed Ed25519 key is 38; sha256 34). */
const MAX_PEER_ID_BYTES = 64;
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const texts = new Map<string, string>();
const TEXT_CACHE = 4_096;

/** A peer id's usual text (base58btc of its multihash, as PeerId.toString()), cached. */
export function peerIdText(multihash: Uint8Array): string {
  const key = Buffer.from(multihash.buffer, multihash.byteOffset, multihash.byteLength).toString('latin1');
  const hit = texts.get(key);
  if (hit !== undefined) return hit;
  const digits: number[] = [];
  for (const byte of multihash) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) {
      carry += digits[i]! * 256;
      digits[i] = carry % 58;
      carry = Math.floor(carry / 58);
    }
    for (; carry > 0; carry = Math.floor(carry / 58)) digits.push(carry % 58);
  }
  let text = '';
  for (let i = 0; i < multihash.byteLength && multihash[i] === 0; i++) text += '1';
  for (let i = digits.length - 1; i >= 0; i--) text += BASE58[digits[i]!];
  if (texts.size >= TEXT_CACHE) texts.clear();
  texts.set(key, text);
  return text;
}

function randomEpoch(): number {
  return Math.floor(Math.random() * 2 ** 32);
}

/** One hand-off frame: length, group, state. */
export function packHandoff(group: string | undefined, state: Uint8Array): Uint8Array {
  const g = Buffer.from(group ?? '', 'utf8');
  const body = varintLength(g.byteLength) + g.byteLength + state.byteLength;
  const out = new Uint8Array(varintLength(body) + body);
  let at = writeVarint(out, 0, body);
  at = writeVarint(out, at, g.byteLength);
  out.set(g, at);
  out.set(state, at + g.byteLength);
  return out;
}

/**
 * Reads hand-off frames from a stream's chunks, whatever their boundaries.
 * `push` returns the whole frames completed so far, or undefined once the
 * stream is malformed (a frame over `maxBytes`, a bad group length): the
 * caller closes it.
 */
export class HandoffReader {
  #buffer = new Uint8Array(0);
  readonly #maxBytes: number;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  push(chunk: Uint8Array): Array<{ group: string | undefined; state: Uint8Array }> | undefined {
    this.#buffer = this.#buffer.byteLength === 0 ? chunk.slice() : Buffer.concat([this.#buffer, chunk]);
    const frames: Array<{ group: string | undefined; state: Uint8Array }> = [];
    let at = 0;
    for (;;) {
      const len = readVarint(this.#buffer, at);
      if (len === undefined) break; // the length itself is not complete yet
      if (len[0] > this.#maxBytes) return undefined;
      if (len[1] + len[0] > this.#buffer.byteLength) break;
      const end = len[1] + len[0];
      const g = readVarint(this.#buffer, len[1]);
      if (g === undefined || g[1] + g[0] >= end) return undefined;
      const group = g[0] === 0 ? undefined : Buffer.from(this.#buffer.subarray(g[1], g[1] + g[0])).toString('utf8');
      frames.push({ group, state: this.#buffer.subarray(g[1] + g[0], end) });
      at = end;
    }
    if (this.#buffer.byteLength > this.#maxBytes + 8 && at === 0) return undefined;
    this.#buffer = this.#buffer.subarray(at);
    return frames;
  }
}

/** One state standing for `older` then `newer` of one agent, or undefined when they are not composed (coalesce.ts). */
export type Compose = (older: Uint8Array, newer: Uint8Array) => Uint8Array | undefined;

interface Pending {
  readonly entries: PackedEntry[];
  /** Each agent's last entry in `entries` (by its peer id's bytes). */
  readonly agents: Map<string, number>;
  bytes: number;
  readonly timer: NodeJS.Timeout;
}

/** An entry's share of the pending bytes (its framing bounded by 6 bytes). */
const sizeOf = (e: PackedEntry): number => (e.author?.byteLength ?? 0) + e.state.byteLength + 6;

/**
 * The window (the header's rule): per group, batches at most once per
 * `windowMs` (read when a batch starts to fill), a state after a quiet window at once, early when the pending
 * bytes reach `maxBytes`. A group's states are never held longer than one
 * window. O(1) per state.
 */
export class Batcher {
  readonly #windowMs: () => number;
  readonly #maxBytes: number;
  readonly #flush: (group: string | undefined, batch: Uint8Array, states: number) => void;
  readonly #compose: Compose | undefined;
  readonly #pending = new Map<string, Pending>();
  /** States composed into another one waiting in their window (never sent on their own). */
  coalesced = 0;
  /** Each agent's slot in this epoch (by its peer id's bytes) and when a batch last named it. */
  readonly #slots = new Map<string, { slot: number; namedAt: number }>();
  #epoch = randomEpoch();
  /** When each group's last batch went out (Date.now()); one entry per group this router relayed. */
  readonly #sentAt = new Map<string, number>();

  constructor(
    windowMs: number | (() => number),
    maxBytes: number,
    flush: (group: string | undefined, batch: Uint8Array, states: number) => void,
    compose?: Compose,
  ) {
    this.#windowMs = typeof windowMs === 'number' ? () => windowMs : windowMs;
    this.#maxBytes = maxBytes;
    this.#flush = flush;
    this.#compose = compose;
  }

  add(group: string | undefined, author: Uint8Array, state: Uint8Array): void {
    const key = group ?? '';
    const id = Buffer.from(author.buffer, author.byteOffset, author.byteLength).toString('latin1');
    const entry = this.#entry(id, author, state);
    let p = this.#pending.get(key);
    if (p !== undefined && this.#coalesce(p, id, entry)) return;
    const size = sizeOf(entry);
    if (p !== undefined && p.bytes + size > this.#maxBytes) {
      this.#send(key);
      p = undefined;
    }
    if (p === undefined) {
      const wait = (this.#sentAt.get(key) ?? -Infinity) + this.#windowMs() - Date.now();
      if (wait <= 0) return this.#emit(key, [entry]);
      p = { entries: [], agents: new Map(), bytes: 1, timer: setTimeout(() => this.#send(key), wait) };
      this.#pending.set(key, p);
    }
    p.agents.set(id, p.entries.length);
    p.entries.push(entry);
    p.bytes += size;
  }

  /** Puts `entry` in place of its agent's waiting state as one state for both, if they compose and fit; true when it did. */
  #coalesce(p: Pending, id: string, entry: PackedEntry): boolean {
    const at = p.agents.get(id);
    const waiting = at !== undefined ? p.entries[at] : undefined;
    if (waiting === undefined || this.#compose === undefined) return false;
    const state = this.#compose(waiting.state, entry.state);
    if (state === undefined) return false;
    // Named in either: the batch names it (the slot's naming clock already counted this one).
    const merged = { slot: waiting.slot, author: waiting.author ?? entry.author, state };
    const grown = sizeOf(merged) - sizeOf(waiting);
    if (p.bytes + grown > this.#maxBytes) return false;
    p.entries[at!] = merged;
    p.bytes += grown;
    this.coalesced++;
    return true;
  }

  /** Sends every pending batch now (on stop, and in tests). */
  flushAll(): void {
    for (const key of [...this.#pending.keys()]) this.#send(key);
  }

  #send(key: string): void {
    const p = this.#pending.get(key);
    if (p === undefined) return;
    clearTimeout(p.timer);
    this.#pending.delete(key);
    this.#emit(key, p.entries);
  }

  #emit(key: string, entries: PackedEntry[]): void {
    this.#sentAt.set(key, Date.now());
    this.#flush(key === '' ? undefined : key, packBatch(this.#epoch, entries), entries.length);
  }

  /** The state with its agent's slot, and its peer id on first sight or once AUTHOR_EVERY_MS has passed. */
  #entry(id: string, author: Uint8Array, state: Uint8Array): PackedEntry {
    let s = this.#slots.get(id);
    if (s === undefined) {
      if (this.#slots.size >= MAX_SLOTS) {
        this.#slots.clear();
        this.#epoch = randomEpoch();
      }
      this.#slots.set(id, (s = { slot: this.#slots.size, namedAt: -Infinity }));
    }
    const now = Date.now();
    if (now - s.namedAt < AUTHOR_EVERY_MS) return { slot: s.slot, state };
    s.namedAt = now;
    return { slot: s.slot, author, state };
  }
}
