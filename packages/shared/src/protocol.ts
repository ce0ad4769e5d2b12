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
import { fromCompact, isCompact, STATIC_FIELDS, toCompact, wirePackr as packr, type StaticBase } from './compact.ts';
import { packHashes, unpackHashes } from './hash-bytes.ts';
import { bin, Invalid, isObj, LIMITS, num, oneOf, str, strList, sub } from './bounds.ts';

export { STATIC_FIELDS, type StaticBase } from './compact.ts';
export { LIMITS } from './bounds.ts';
export { packHashes, unpackHashes } from './hash-bytes.ts';

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

/** The longest report age a router extrapolates the other routers' work over (expectedSince), ms. */
export const MAX_EXPECT_AGE_MS = 1_000;

/**
 * The work (tokens) a router expects others sent a replica since a report
 * `ageMs` old: the published arrival rate (times the others' share of it,
 * folded into `rate` by the caller) over at most MAX_EXPECT_AGE_MS. Routers
 * add it to the queue they read; the agent's publisher runs the same
 * prediction to tell when the routers' guess has drifted (publisher.ts).
 */
export function expectedSince(rate: number, ageMs: number): number {
  return (rate * Math.min(MAX_EXPECT_AGE_MS, Math.max(0, ageMs))) / 1000;
}

export const ENGINE_KINDS = ['vllm', 'sglang', 'llamacpp', 'tgi'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
export const REPLICA_STATUSES = ['ready', 'draining', 'down'] as const;
export type ReplicaStatus = (typeof REPLICA_STATUSES)[number];
/** A replica's part in a prefill/decode-disaggregated fleet: prefill (KV producer), decode (KV consumer) or both (serves a whole request). */
export const REPLICA_ROLES = ['both', 'prefill', 'decode'] as const;
export type ReplicaRole = (typeof REPLICA_ROLES)[number];
export const ENDPOINTS = ['chat', 'completion', 'responses', 'embedding'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

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
  /**
   * Requests of the lower priority bands (standard, batch) the agent admitted
   * and not yet finished: what holds a shared replica of the interactive
   * reserve to its lower-band slots (docs/TENANTS.md, "Interactive
   * reserve"). Absent when none, and from older agents (read as 0).
   */
  lowerInflight?: number;
  /** A decode replica's engine ITL p99 over its agent's last 10 s, ms (agent itl.ts); absent elsewhere or unknown. */
  itlP99Ms?: number;
}

export interface DigestDelta {
  /** seq of the message this delta follows; -1 for "no base" (fetch a snapshot). */
  from: number;
  added: BigUint64Array;
  removed: BigUint64Array;
  /**
   * An engine with a host-memory KV tier (evicted from the GPU, reloadable
   * over PCIe): held hashes now only in host memory (`host`), and held ones
   * back on the GPU (`gpu`). A receiver updates only hashes it holds; a hash
   * in `added` is on the GPU. Both absent without the tier.
   */
  host?: BigUint64Array;
  gpu?: BigUint64Array;
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
  /**
   * The model group whose gossip topic the state is published on (the
   * agent's `--group`); absent: its base model when it serves one (groupOf).
   * Optional, absent from older agents.
   */
  group?: string;
  adapters: string[];
  hotAdapters: string[];
  endpoints: Endpoint[];
  capacity: ReplicaCapacity;
  load: ReplicaLoad;
  status: ReplicaStatus;
  /** Prefix chunk size in characters; must match the router's. */
  chunkChars: number;
  digest: DigestDelta;
  /** Disaggregation role; absent from older agents and aggregated replicas (read as 'both'). */
  role?: ReplicaRole;
  /** Topology label (host, rack or zone): a KV transfer between replicas of one zone costs less. Absent = unknown. */
  zone?: string;
  /** Where a prefill replica's engine serves its KV bootstrap (SGLang's bootstrap_host:bootstrap_port), `host:port`. */
  kvBootstrap?: string;
  /**
   * Sender only, never on a decoded state: the seq of the message whose
   * static fields (STATIC_FIELDS in compact.ts: the URLs, engine, models,
   * group, adapters, endpoints, capacity, chunkChars, role, zone,
   * kvBootstrap) this one repeats. Set, the compact form leaves them out and
   * a receiver that holds a state of this boot at least that recent fills
   * them in (compact.ts).
   */
  staticSeq?: number;
}

/** The name lists the compact form sends names as indexes of. */
const NAMES = {
  engines: ENGINE_KINDS,
  statuses: REPLICA_STATUSES,
  endpoints: ENDPOINTS,
  roles: REPLICA_ROLES,
} as const;

/**
 * The model group a state belongs to (docs/OPERATIONS.md, "Splitting
 * routers by model group"): its `group`, else its one base model; undefined
 * for an agent serving several base models and no `--group`, which only
 * routers serving every group hold.
 */
export function groupOf(s: Pick<ReplicaState, 'group' | 'models'>): string | undefined {
  return s.group ?? (s.models.length === 1 ? s.models[0] : undefined);
}

/** The map form (every key named): what the compact form is laid out from; decodable. */
function stateMap(s: ReplicaState): Record<string, unknown> {
  return {
    ...s,
    digest: {
      from: s.digest.from,
      size: s.digest.size,
      added: packHashes(s.digest.added),
      removed: packHashes(s.digest.removed),
      ...(s.digest.host !== undefined && s.digest.host.length > 0 ? { host: packHashes(s.digest.host) } : {}),
      ...(s.digest.gpu !== undefined && s.digest.gpu.length > 0 ? { gpu: packHashes(s.digest.gpu) } : {}),
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

/** `held`: the state a compact message's left-out static fields came from; where each is still the held one (none replaced by `extra`), it was validated with it. */
function validateState(raw: unknown, held?: ReplicaState): ReplicaState {
  if (!isObj(raw)) throw new Invalid('message: expected map');
  const h =
    held !== undefined && STATIC_FIELDS.every((k) => raw[k] === held[k as keyof ReplicaState]) ? held : undefined;
  const cap = sub(raw, 'capacity');
  const load = sub(raw, 'load');
  const dg = sub(raw, 'digest');
  const added = bin(dg, 'added');
  const removed = bin(dg, 'removed');
  const host = dg.host !== undefined ? bin(dg, 'host') : undefined;
  const gpu = dg.gpu !== undefined ? bin(dg, 'gpu') : undefined;
  if (
    (added.byteLength + removed.byteLength + (host?.byteLength ?? 0) + (gpu?.byteLength ?? 0)) / 8 >
    LIMITS.deltaHashes
  )
    throw new Invalid(`digest: more than ${LIMITS.deltaHashes} hashes`);
  const endpoints = h?.endpoints ?? validEndpoints(raw);
  return {
    v: PROTOCOL_VERSION,
    fleet: str(raw, 'fleet'),
    replica: str(raw, 'replica'),
    boot: str(raw, 'boot'),
    bootAt: num(raw, 'bootAt'),
    seq: num(raw, 'seq', 0, LIMITS.maxNumber, true),
    sentAt: num(raw, 'sentAt'),
    url: h?.url ?? str(raw, 'url', LIMITS.urlChars),
    admin: h?.admin ?? str(raw, 'admin', LIMITS.urlChars),
    engine: h?.engine ?? oneOf(raw, 'engine', ENGINE_KINDS),
    models: h?.models ?? strList(raw, 'models'),
    ...(raw.group !== undefined ? { group: h?.group ?? str(raw, 'group') } : {}),
    adapters: h?.adapters ?? strList(raw, 'adapters'),
    hotAdapters: strList(raw, 'hotAdapters'),
    endpoints,
    capacity: h?.capacity ?? {
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
      ...(load.lowerInflight !== undefined ? { lowerInflight: num(load, 'lowerInflight', 0, 1e9, true) } : {}),
      ...(load.itlP99Ms !== undefined ? { itlP99Ms: num(load, 'itlP99Ms', 0, 1e7) } : {}),
    },
    status: oneOf(raw, 'status', REPLICA_STATUSES),
    chunkChars: h?.chunkChars ?? num(raw, 'chunkChars', 1, 1 << 20, true),
    digest: {
      from: num(dg, 'from', -1, LIMITS.maxNumber, true),
      size: num(dg, 'size', 0, 1e8, true),
      added: unpackHashes(added),
      removed: unpackHashes(removed),
      ...(host !== undefined ? { host: unpackHashes(host) } : {}),
      ...(gpu !== undefined ? { gpu: unpackHashes(gpu) } : {}),
    },
    ...(raw.role !== undefined ? { role: h?.role ?? oneOf(raw, 'role', REPLICA_ROLES) } : {}),
    ...(raw.zone !== undefined ? { zone: h?.zone ?? str(raw, 'zone') } : {}),
    ...(raw.kvBootstrap !== undefined ? { kvBootstrap: h?.kvBootstrap ?? str(raw, 'kvBootstrap') } : {}),
  };
}

function validEndpoints(raw: Record<string, unknown>): Endpoint[] {
  const endpoints = strList(raw, 'endpoints');
  const unknown = endpoints.find((e) => !(ENDPOINTS as readonly string[]).includes(e));
  if (unknown !== undefined) throw new Invalid(`endpoints: unknown "${unknown}"`);
  return endpoints as Endpoint[];
}

/**
 * The one decode path of every wire object: size limit → msgpack → a map →
 * known version → `validate`. Each failure is a reason, never a throw.
 */
function decodeBounded<T, B extends StaticBase = StaticBase>(
  bytes: Uint8Array,
  limit: number,
  validate: (raw: Record<string, unknown>, held?: B) => T,
  base?: (replica: string, boot: string) => B | undefined,
): DecodeResult<T> {
  if (bytes.byteLength > limit)
    return { ok: false, reason: 'too_large', detail: `${bytes.byteLength} bytes > ${limit}` };
  let raw: unknown;
  let heldStatic = false; // a compact message without its static group: fromCompact filled it from `base`
  try {
    raw = packr.unpack(bytes);
    if (base !== undefined && isCompact(raw)) {
      heldStatic = !Array.isArray(raw[2]);
      raw = fromCompact(raw, NAMES, base);
    }
  } catch (err) {
    return { ok: false, reason: 'malformed', detail: (err as Error)?.message ?? 'msgpack decode failed' };
  }
  // Not the sender's fault: this receiver lacks the state the message builds on.
  if (typeof raw === 'string') return { ok: false, reason: 'no_base', detail: raw };
  if (!isObj(raw)) return { ok: false, reason: 'malformed', detail: 'not a msgpack map' };
  if (raw.v !== PROTOCOL_VERSION) return { ok: false, reason: 'version', detail: `unknown version ${String(raw.v)}` };
  try {
    const held = heldStatic ? base?.(String(raw.replica), String(raw.boot)) : undefined;
    return { ok: true, value: validate(raw, held) };
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
  base: (replica: string, boot: string) => ReplicaState | undefined = () => undefined,
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
  /** Of `hashes`, those only in host memory (DigestDelta.host); absent without the tier. */
  host?: BigUint64Array;
}

export function encodeSnapshot(s: DigestSnapshot): Uint8Array {
  const { host, ...rest } = s;
  return packr.pack({
    ...rest,
    hashes: packHashes(s.hashes),
    ...(host !== undefined && host.length > 0 ? { host: packHashes(host) } : {}),
  });
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
    ...(raw.host !== undefined ? { host: unpackHashes(bin(raw, 'host')) } : {}),
  }));
}

export const SNAPSHOT_CONTENT_TYPE = 'application/vnd.warmpath.digest+msgpack';
