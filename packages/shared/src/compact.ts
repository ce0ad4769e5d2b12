/**
 * The state message's compact wire form: positions instead of key names.
 *
 * The same fields as the map form (protocol.ts), laid out as a msgpack array
 * of five or six groups, so no key name travels:
 *
 *   [v, [fleet, replica, boot, bootAt, seq, sentAt − bootAt],
 *    [url, admin, engine#, models, adapters, endpoint bits, [kv, slots, weight, maxRunning], chunkChars,
 *     group?, role#?, zone?, kvBootstrap?] | nil,
 *    [status#, hotAdapters, [running, waiting, kvUsed, inflight, inflightTokens, prefillTokens, arrival, recent]],
 *    [from, size, added, removed, host?, gpu?], extra?]
 *
 * Steps: encode lays the known fields out by position (names as their index
 * in the protocol's lists, the endpoints as one bit each, sentAt as its offset
 * from bootAt; an optional field absent is nil, trailing nils dropped); whatever it cannot place losslessly (a field it does not know
 * — an optional one a newer agent adds — or a figure the position cannot
 * carry exactly) goes in `extra`, a map merged over the fields on decode.
 * Decode rebuilds the map form, which protocol.ts validates as before.
 * The static group (what changes only when the replica is reconfigured) is
 * nil when the sender says "as in my message `staticSeq`": the receiver
 * fills it from the state it holds of that boot, if that state is at least
 * that recent (`StaticBase`), else drops the message (`no_base`) — the next
 * full message (every periodic one is) repairs the view.
 * Complexity: O(fields + hashes). Trade-off: positional fields are
 * unreadable without this table, so the map form stays decodable (mixed
 * fleets, the committed corpus) and remains the reference shape.
 * Invariant: decode(encode(map)) is the same map, field for field.
 */
import { Packr } from 'msgpackr';

/** The msgpack settings every wire object is packed and read with (protocol.ts, coalesce.ts). */
export const wirePackr = new Packr({ useRecords: false, moreTypes: false, int64AsType: 'number' });

/** The protocol's name lists (protocol.ts) a name travels as its index in. */
export interface NameLists {
  readonly engines: readonly string[];
  readonly statuses: readonly string[];
  readonly endpoints: readonly string[];
  readonly roles: readonly string[];
}

type Obj = Record<string, unknown>;

const IDENT = ['fleet', 'replica', 'boot', 'bootAt', 'seq', 'sentAt'] as const;
const STATIC = [
  'url',
  'admin',
  'engine',
  'models',
  'adapters',
  'endpoints',
  'capacity',
  'chunkChars',
  'group',
  'role',
  'zone',
  'kvBootstrap',
] as const;
const CAPACITY = ['kvTokens', 'adapterSlots', 'weight', 'maxRunning'] as const;
const LOAD = [
  'running',
  'waiting',
  'kvUsedTokens',
  'inflight',
  'inflightTokens',
  'prefillTokens',
  'arrivalTokensPerS',
  'recentTokensPerS',
  'lowerInflight',
  'itlP99Ms',
] as const;
const DIGEST = ['from', 'size', 'added', 'removed', 'host', 'gpu'] as const;
const TOP = new Set<string>(['v', ...IDENT, ...STATIC, 'status', 'hotAdapters', 'load', 'digest', 'staticSeq']);
const NESTED = { capacity: CAPACITY, load: LOAD, digest: DIGEST } as const;

/** The fields a message may leave out when the receiver holds them (the static group). */
export const STATIC_FIELDS: readonly string[] = STATIC;

/** The state a receiver holds of a replica (its boot and seq; the static fields are read from it by name). */
export interface StaticBase {
  readonly boot: string;
  readonly seq: number;
}

const isObj = (x: unknown): x is Obj => x !== null && typeof x === 'object' && !Array.isArray(x);
export const isInt = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x);

/** `x`'s index in `list`, or the value itself (extra carries it) when it is not there; absent is nil. */
function index(list: readonly string[], x: unknown, name: string, extra: Obj): number | null {
  if (x === undefined) return null;
  const i = list.indexOf(x as string);
  if (i >= 0) return i;
  extra[name] = x;
  return null;
}

function endpointBits(ENDPOINTS: readonly string[], x: unknown, extra: Obj): number | null {
  if (!Array.isArray(x)) return ((extra.endpoints = x), null);
  let bits = 0;
  for (const e of x) {
    const i = ENDPOINTS.indexOf(e as string);
    if (i < 0 || (bits & (1 << i)) !== 0) return ((extra.endpoints = x), null);
    bits |= 1 << i;
  }
  // Bits decode in the protocol's order: only a list already in that order survives as bits.
  const ordered = ENDPOINTS.filter((_, i) => (bits & (1 << i)) !== 0);
  return ordered.every((e, i) => e === x[i]) ? bits : ((extra.endpoints = x), null);
}

const trim = (out: unknown[]): unknown[] => {
  while (out.length > 0 && (out[out.length - 1] === null || out[out.length - 1] === undefined)) out.pop();
  return out;
};

/** Positions of `o`'s `keys` (absent = nil); `o`'s other keys land in `extra[name]`. */
function lay(o: unknown, keys: readonly string[], extra: Obj, name: string): unknown[] {
  if (!isObj(o)) return ((extra[name] = o), []);
  const out = keys.map((k) => (o[k] === undefined ? null : o[k]));
  const rest = Object.keys(o).filter((k) => !keys.includes(k) && o[k] !== undefined);
  if (rest.length > 0) extra[name] = Object.fromEntries(rest.map((k) => [k, o[k]]));
  return trim(out);
}

/** The compact array for a map-form message; `omitStatic` leaves the static group out (see the header). */
export function toCompact(m: Obj, names: NameLists, omitStatic = false): unknown[] {
  const extra: Obj = {};
  for (const k of Object.keys(m)) if (!TOP.has(k) && m[k] !== undefined) extra[k] = m[k];
  const offset = isInt(m.sentAt) && isInt(m.bootAt) ? m.sentAt - m.bootAt : null;
  if (offset === null) extra.sentAt = m.sentAt;
  const ident = [m.fleet, m.replica, m.boot, m.bootAt, m.seq, offset];
  let stat: unknown[] | null = null;
  if (!omitStatic) {
    stat = trim([
      m.url,
      m.admin,
      index(names.engines, m.engine, 'engine', extra),
      m.models,
      m.adapters,
      endpointBits(names.endpoints, m.endpoints, extra),
      lay(m.capacity, CAPACITY, extra, 'capacity'),
      m.chunkChars,
      m.group ?? null,
      index(names.roles, m.role, 'role', extra),
      m.zone ?? null,
      m.kvBootstrap ?? null,
    ]);
  } else extra.staticSeq = m.staticSeq;
  const dyn = [index(names.statuses, m.status, 'status', extra), m.hotAdapters, lay(m.load, LOAD, extra, 'load')];
  const out: unknown[] = [m.v, ident, stat, dyn, lay(m.digest, DIGEST, extra, 'digest')];
  if (Object.keys(extra).length > 0) out.push(extra);
  return out;
}

/** Rebuilds `o` from positions (nil = absent), then merges `more` (extra's part for it) over them. */
function unlay(a: unknown, keys: readonly string[], more: unknown): Obj {
  const o: Obj = {};
  if (Array.isArray(a)) keys.forEach((k, i) => a[i] !== null && a[i] !== undefined && (o[k] = a[i]));
  if (isObj(more)) for (const k of Object.keys(more)) if (k !== '__proto__') o[k] = more[k];
  return o;
}

/** Is `raw` a compact message (an array of five or six groups)? */
export const isCompact = (raw: unknown): raw is unknown[] =>
  Array.isArray(raw) && (raw.length === 5 || raw.length === 6) && Array.isArray(raw[1]) && Array.isArray(raw[3]);

/**
 * The map form of a compact message, or a string saying why it cannot be
 * one (the static group left out and `base` not holding it).
 */
export function fromCompact(
  a: unknown[],
  names: NameLists,
  base?: (replica: string, boot: string) => StaticBase | undefined,
): Obj | string {
  const extra = isObj(a[5]) ? a[5] : {};
  const [fleet, replica, boot, bootAt, seq, offset] = a[1] as unknown[];
  const m: Obj = { v: a[0], fleet, replica, boot, bootAt, seq };
  if (isInt(offset) && isInt(bootAt)) m.sentAt = bootAt + offset;
  if (Array.isArray(a[2])) {
    const [url, admin, engine, models, adapters, bits, capacity, chunkChars, group, role, zone, kvBootstrap] =
      a[2] as unknown[];
    Object.assign(m, { url, admin, models, adapters, chunkChars });
    for (const [k, x] of [
      ['group', group],
      ['zone', zone],
      ['kvBootstrap', kvBootstrap],
    ] as const)
      if (x !== null && x !== undefined) m[k] = x;
    if (isInt(role)) m.role = names.roles[role];
    m.engine = isInt(engine) ? names.engines[engine] : undefined;
    m.endpoints = isInt(bits) ? names.endpoints.filter((_, i) => (bits & (1 << i)) !== 0) : undefined;
    m.capacity = unlay(capacity, CAPACITY, extra.capacity);
  } else {
    const held = typeof replica === 'string' && typeof boot === 'string' ? base?.(replica, boot) : undefined;
    const since = extra.staticSeq;
    if (held === undefined || held.boot !== boot || !isInt(since) || held.seq < since)
      return 'static fields left out and not held from that boot';
    for (const k of STATIC) m[k] = (held as unknown as Obj)[k];
  }
  const [status, hotAdapters, load] = a[3] as unknown[];
  m.status = isInt(status) ? names.statuses[status] : undefined;
  m.hotAdapters = hotAdapters;
  m.load = unlay(load, LOAD, extra.load);
  m.digest = unlay(a[4], DIGEST, extra.digest);
  for (const k of Object.keys(extra))
    if (k !== '__proto__' && k !== 'staticSeq' && !(k in NESTED) && k !== 'capacity') m[k] = extra[k];
  return m;
}
