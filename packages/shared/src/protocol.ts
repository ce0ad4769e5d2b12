/**
 * Wire protocol: the one replica-state message (docs/DESIGN-RATIONALE.md §3), msgpack-encoded.
 *
 * - Versioned (`v`); an unknown version is dropped, not guessed at.
 * - `decodeState` validates every field against hard limits and returns a
 *   typed result; it never throws (gossip handlers must not).
 * - Prefix digests travel as deltas: chain hashes added and removed since the
 *   message `digest.from`, packed as little-endian u64 binary; `digest.size`
 *   is the set's size after applying, so a receiver detects drift. A gap or a
 *   new boot makes the receiver pull a full snapshot over HTTP
 *   (`encodeSnapshot`/`decodeSnapshot`).
 * - On the wire in the compact form (compact.ts: positions, no key names;
 *   the static fields left out when unchanged); the map form decodes too.
 * - Order: (bootAt, boot, seq) — a newer boot supersedes any older one, then
 *   higher seq wins (memberlist's incarnation numbers, in effect).
 */
import { Packr } from 'msgpackr';
import { fromCompact, isCompact, toCompact, type StaticBase } from './compact.ts';

export { STATIC_FIELDS, type StaticBase } from './compact.ts';

export const PROTOCOL_VERSION = 1;

/**
 * How often a quiet agent publishes by default (its `publishIntervalMs`), ms;
 * a change that matters to placement publishes at once. A router's
 * `stateTtlMs` spans three of these, so one lost or late message never
 * makes a quiet healthy replica stale.
 */
export const PUBLISH_FLOOR_MS = 500;

/** Time constant of the published arrival rate (ReplicaLoad.arrivalTokensPerS), ms. */
export const ARRIVAL_TAU_MS = 100;
/** Time constant of the published recent work rate (ReplicaLoad.recentTokensPerS), ms. */
export const RECENT_TAU_MS = 10_000;

export const ENGINE_KINDS = ['vllm', 'sglang', 'llamacpp', 'tgi'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
export const REPLICA_STATUSES = ['ready', 'draining', 'down'] as const;
export type ReplicaStatus = (typeof REPLICA_STATUSES)[number];
export const ENDPOINTS = ['chat', 'completion', 'responses', 'embedding'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/** Hard limits applied on decode. Changing them is a protocol change. */
export const LIMITS = {
  messageBytes: 256 * 1024, // 256 KiB per state message
  snapshotBytes: 8 * 1024 * 1024, // 8 MiB per digest snapshot (1M hashes)
  stringChars: 256,
  urlChars: 2048,
  listItems: 1024,
  deltaHashes: 30_000, // per message, added + removed
  maxNumber: Number.MAX_SAFE_INTEGER,
} as const;

export interface ReplicaCapacity {
  /** KV cache capacity in tokens. */
  kvTokens: number;
  /** GPU LoRA slots (0 = no LoRA). */
  adapterSlots: number;
  /** Relative weight on the ring (1 = one reference replica). */
  weight: number;
  /** Max concurrently running sequences (0 = unknown). */
  maxRunning: number;
}

export interface ReplicaLoad {
  running: number;
  waiting: number;
  /** KV in use, tokens. */
  kvUsedTokens: number;
  /** Requests accepted by the agent and not yet finished. */
  inflight: number;
  /** Work of those requests in tokens (uncached prompt + expected output). */
  inflightTokens: number;
  /** Uncached prompt tokens of admitted requests still waiting for their first token: the prefill queue. */
  prefillTokens: number;
  /**
   * Work admitted per second lately (uncached prompt + expected output,
   * tokens/s; an exponential average, time constant ARRIVAL_TAU_MS). A router
   * that shares the clients with others multiplies it by a report's age to
   * expect the work they sent since. Absent from older agents (read as 0).
   */
  arrivalTokensPerS?: number;
  /**
   * The same work per second over a longer time constant (RECENT_TAU_MS):
   * what the replica's clients of the last several seconds (conversations
   * between turns) send it. A router expects that much per second more while
   * choosing a home for a new conversation. Absent from older agents (read as 0).
   */
  recentTokensPerS?: number;
}

export interface DigestDelta {
  /** seq of the message this delta follows; -1 for "no base" (fetch a snapshot). */
  from: number;
  added: BigUint64Array;
  removed: BigUint64Array;
  /** Digest size after applying. */
  size: number;
}

export interface ReplicaState {
  v: typeof PROTOCOL_VERSION;
  fleet: string;
  /** Stable replica id (survives restarts). */
  replica: string;
  /** New on every agent start. */
  boot: string;
  /** Agent start time, ms since the epoch: orders boots. */
  bootAt: number;
  seq: number;
  /** Send time, ms since the epoch. */
  sentAt: number;
  /** The agent's proxy base URL (OpenAI endpoints). */
  url: string;
  /** The agent's admin base URL (digest snapshot, state). */
  admin: string;
  engine: EngineKind;
  models: string[];
  adapters: string[];
  hotAdapters: string[];
  endpoints: Endpoint[];
  capacity: ReplicaCapacity;
  load: ReplicaLoad;
  status: ReplicaStatus;
  /** Prefix chunk size in characters; must match the router's. */
  chunkChars: number;
  digest: DigestDelta;
  /**
   * Sender only, never on a decoded state: the seq of the message whose
   * static fields (url, admin, engine, models, adapters, endpoints, capacity,
   * chunkChars) this one repeats. Set, the compact form leaves them out and a
   * receiver that holds a state of this boot at least that recent fills them
   * in (compact.ts).
   */
  staticSeq?: number;
}

/** The name lists the compact form sends names as indexes of. */
const NAMES = { engines: ENGINE_KINDS, statuses: REPLICA_STATUSES, endpoints: ENDPOINTS } as const;

const packr = new Packr({ useRecords: false, moreTypes: false, int64AsType: 'number' });

export function packHashes(hashes: ArrayLike<bigint>): Uint8Array {
  const out = new Uint8Array(hashes.length * 8);
  const view = new DataView(out.buffer);
  for (let i = 0; i < hashes.length; i++) view.setBigUint64(i * 8, hashes[i]!, true);
  return out;
}

export function unpackHashes(bytes: Uint8Array): BigUint64Array {
  const n = bytes.byteLength >>> 3;
  const out = new BigUint64Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < n; i++) out[i] = view.getBigUint64(i * 8, true);
  return out;
}

/** The map form (every key named): what the compact form is laid out from; decodable. */
function stateMap(s: ReplicaState): Record<string, unknown> {
  return {
    ...s,
    digest: {
      ...s.digest,
      added: packHashes(s.digest.added),
      removed: packHashes(s.digest.removed),
    },
  };
}

/** A state message in the compact form (compact.ts); static fields left out when `s.staticSeq` is set. */
export function encodeState(s: ReplicaState): Uint8Array {
  return packr.pack(toCompact(stateMap(s), NAMES, s.staticSeq !== undefined));
}

/** A state message in the map form, as agents before the compact form sent it (tests, the corpus). */
export function encodeStateMap(s: ReplicaState): Uint8Array {
  const { staticSeq: _omit, ...rest } = s;
  return packr.pack(stateMap(rest));
}

export type DecodeResult<T> = { ok: true; value: T } | { ok: false; reason: DropReason; detail: string };

/** Why a message was dropped; counted in metrics by these names. */
export const DROP_REASONS = ['too_large', 'malformed', 'version', 'invalid', 'no_base'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

class Invalid extends Error {}

const isObj = (x: unknown): x is Record<string, unknown> => {
  if (x === null || typeof x !== 'object') return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
};

function str(o: Record<string, unknown>, k: string, max: number = LIMITS.stringChars): string {
  const v = o[k];
  if (typeof v !== 'string' || v.length > max) throw new Invalid(`${k}: expected string of at most ${max} chars`);
  return v;
}
function num(o: Record<string, unknown>, k: string, min = 0, max: number = LIMITS.maxNumber, int = false): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (int && !Number.isInteger(v)))
    throw new Invalid(`${k}: expected ${int ? 'integer' : 'number'} in [${min}, ${max}]`);
  return v;
}
function strList(o: Record<string, unknown>, k: string): string[] {
  const v = o[k];
  if (!Array.isArray(v) || v.length > LIMITS.listItems)
    throw new Invalid(`${k}: expected list of at most ${LIMITS.listItems}`);
  for (const x of v)
    if (typeof x !== 'string' || x.length > LIMITS.stringChars)
      throw new Invalid(`${k}: items must be strings of at most ${LIMITS.stringChars} chars`);
  return v as string[];
}
function oneOf<T extends string>(o: Record<string, unknown>, k: string, allowed: readonly T[]): T {
  const v = o[k];
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v))
    throw new Invalid(`${k}: expected one of ${allowed.join(', ')}`);
  return v as T;
}
function sub(o: Record<string, unknown>, k: string): Record<string, unknown> {
  const v = o[k];
  if (!isObj(v)) throw new Invalid(`${k}: expected map`);
  return v;
}
function bin(o: Record<string, unknown>, k: string): Uint8Array {
  const v = o[k];
  if (!(v instanceof Uint8Array) || v.byteLength % 8 !== 0) throw new Invalid(`${k}: expected binary of 8-byte hashes`);
  return v;
}

function validateState(raw: unknown): ReplicaState {
  if (!isObj(raw)) throw new Invalid('message: expected map');
  const cap = sub(raw, 'capacity');
  const load = sub(raw, 'load');
  const dg = sub(raw, 'digest');
  const added = bin(dg, 'added');
  const removed = bin(dg, 'removed');
  if ((added.byteLength + removed.byteLength) / 8 > LIMITS.deltaHashes)
    throw new Invalid(`digest: more than ${LIMITS.deltaHashes} hashes`);
  const endpoints = strList(raw, 'endpoints');
  for (const e of endpoints)
    if (!(ENDPOINTS as readonly string[]).includes(e)) throw new Invalid(`endpoints: unknown "${e}"`);
  return {
    v: PROTOCOL_VERSION,
    fleet: str(raw, 'fleet'),
    replica: str(raw, 'replica'),
    boot: str(raw, 'boot'),
    bootAt: num(raw, 'bootAt'),
    seq: num(raw, 'seq', 0, LIMITS.maxNumber, true),
    sentAt: num(raw, 'sentAt'),
    url: str(raw, 'url', LIMITS.urlChars),
    admin: str(raw, 'admin', LIMITS.urlChars),
    engine: oneOf(raw, 'engine', ENGINE_KINDS),
    models: strList(raw, 'models'),
    adapters: strList(raw, 'adapters'),
    hotAdapters: strList(raw, 'hotAdapters'),
    endpoints: endpoints as Endpoint[],
    capacity: {
      kvTokens: num(cap, 'kvTokens'),
      adapterSlots: num(cap, 'adapterSlots', 0, 1e6, true),
      weight: num(cap, 'weight', 0, 1e6),
      maxRunning: num(cap, 'maxRunning', 0, 1e9, true),
    },
    load: {
      running: num(load, 'running'),
      waiting: num(load, 'waiting'),
      kvUsedTokens: num(load, 'kvUsedTokens'),
      inflight: num(load, 'inflight'),
      inflightTokens: num(load, 'inflightTokens'),
      prefillTokens: num(load, 'prefillTokens'),
      ...(load.arrivalTokensPerS !== undefined ? { arrivalTokensPerS: num(load, 'arrivalTokensPerS') } : {}),
      ...(load.recentTokensPerS !== undefined ? { recentTokensPerS: num(load, 'recentTokensPerS') } : {}),
    },
    status: oneOf(raw, 'status', REPLICA_STATUSES),
    chunkChars: num(raw, 'chunkChars', 1, 1 << 20, true),
    digest: {
      from: num(dg, 'from', -1, LIMITS.maxNumber, true),
      size: num(dg, 'size', 0, 1e8, true),
      added: unpackHashes(added),
      removed: unpackHashes(removed),
    },
  };
}

/**
 * The one decode path of every wire object: size limit → msgpack → a map →
 * known version → `validate`. Each failure is a reason, never a throw.
 */
function decodeBounded<T>(
  bytes: Uint8Array,
  limit: number,
  validate: (raw: Record<string, unknown>) => T,
  base?: (replica: string, boot: string) => StaticBase | undefined,
): DecodeResult<T> {
  if (bytes.byteLength > limit)
    return { ok: false, reason: 'too_large', detail: `${bytes.byteLength} bytes > ${limit}` };
  let raw: unknown;
  try {
    raw = packr.unpack(bytes);
    if (base !== undefined && isCompact(raw)) raw = fromCompact(raw, NAMES, base);
  } catch (err) {
    return { ok: false, reason: 'malformed', detail: (err as Error)?.message ?? 'msgpack decode failed' };
  }
  // Not the sender's fault: this receiver lacks the state the message builds on.
  if (typeof raw === 'string') return { ok: false, reason: 'no_base', detail: raw };
  if (!isObj(raw)) return { ok: false, reason: 'malformed', detail: 'not a msgpack map' };
  if (raw.v !== PROTOCOL_VERSION) return { ok: false, reason: 'version', detail: `unknown version ${String(raw.v)}` };
  try {
    return { ok: true, value: validate(raw) };
  } catch (err) {
    return { ok: false, reason: 'invalid', detail: err instanceof Invalid ? err.message : String(err) };
  }
}

/**
 * Decodes and validates a gossip payload, in the compact or the map form.
 * `base` hands the static fields of the replica's state the receiver holds
 * (a compact message may leave them out); without it such a message is
 * invalid. Never throws.
 */
export function decodeState(
  bytes: Uint8Array,
  base: (replica: string, boot: string) => StaticBase | undefined = () => undefined,
): DecodeResult<ReplicaState> {
  return decodeBounded(bytes, LIMITS.messageBytes, validateState, base);
}

/** Does `incoming` supersede `current`? Newer boot first, then higher seq. */
export function supersedes(
  incoming: Pick<ReplicaState, 'bootAt' | 'boot' | 'seq'>,
  current: Pick<ReplicaState, 'bootAt' | 'boot' | 'seq'> | undefined,
): boolean {
  if (current === undefined) return true;
  if (incoming.boot === current.boot) return incoming.seq > current.seq;
  if (incoming.bootAt !== current.bootAt) return incoming.bootAt > current.bootAt;
  return incoming.boot > current.boot;
}

/** Full digest, served by the agent's admin API for routers that missed deltas. */
export interface DigestSnapshot {
  v: typeof PROTOCOL_VERSION;
  replica: string;
  boot: string;
  /** The seq of the last state message whose delta this snapshot includes. */
  seq: number;
  chunkChars: number;
  hashes: BigUint64Array;
}

export function encodeSnapshot(s: DigestSnapshot): Uint8Array {
  return packr.pack({ ...s, hashes: packHashes(s.hashes) });
}

/** Decodes and validates a digest snapshot. Never throws. */
export function decodeSnapshot(bytes: Uint8Array): DecodeResult<DigestSnapshot> {
  return decodeBounded(bytes, LIMITS.snapshotBytes, (raw) => ({
    v: PROTOCOL_VERSION,
    replica: str(raw, 'replica'),
    boot: str(raw, 'boot'),
    seq: num(raw, 'seq', 0, LIMITS.maxNumber, true),
    chunkChars: num(raw, 'chunkChars', 1, 1 << 20, true),
    hashes: unpackHashes(bin(raw, 'hashes')),
  }));
}

export const SNAPSHOT_CONTENT_TYPE = 'application/vnd.warmpath.digest+msgpack';
