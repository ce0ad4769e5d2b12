/**
 * Coalescing an agent's states at its first hop (docs/GOSSIP.md, "Batches:
 * one signature for many states"): two states of one agent waiting in one
 * batch window go out as one, so every other router decodes, judges and
 * applies one state where it would have applied both.
 *
 * Rules (`coalesceStates(older, newer)`, both as they came on the wire):
 *  - Only the newest figures matter: the result is `newer` field for field
 *    (its seq, sentAt, load, status, size), but for its digest delta and,
 *    where `newer` left them out, its static fields.
 *  - The digest delta chains: `newer.digest.from` must be `older.seq`, of
 *    the same fleet, replica, boot and bootAt; the result follows what
 *    `older` followed (`from` = older's from), and applying it to any digest
 *    equals applying `older`'s delta, then `newer`'s (`composeDeltas`).
 *    Anything else — another boot, a gap, `older.digest.from` −1 (a
 *    self-contained digest: receivers replace theirs with it), digest fields
 *    this code does not know — is not composed: both go out as they came.
 *  - Static fields: a compact state may leave them out (`staticSeq`). If
 *    `older` carried them and `newer` left them out, the result carries
 *    older's (they are newer's: a static change always goes out whole, so
 *    every state from `staticSeq` on has the same ones). If both left them
 *    out, the result asks for the earlier `staticSeq` of the two, which a
 *    receiver that could read `older` holds.
 *  - Only the compact form is composed (every current agent sends it); the
 *    map form is passed through. Fields the compact form put in `extra`
 *    (ones this version does not know) travel as newer's.
 *  - The result obeys the protocol's limits (hashes a delta, bytes a
 *    message), else nothing is composed.
 * Tier moves: per hash, one delta maps the hash's standing at a receiver —
 * absent, on the GPU, in host memory only — as digest-sync.ts applies it
 * (removed, then added, then `gpu`, then `host` where held). Those maps are
 * closed under composition (identity, each constant, "host → GPU", "held →
 * host"), so any two deltas compose to one, each hash named by the fewest
 * lists that give its composed map. This holds where a receiver's
 * host-memory hashes are among its held ones, as digest-sync.ts keeps them.
 * A hash named in `removed` that a receiver never held is a no-op there.
 * Complexity: O(hashes of both deltas + bytes of both states), and only
 * when a second state of one agent lands in a window.
 * Trade-off: the first hop unpacks and repacks both states; the receivers
 * save a decode, judge and apply each.
 */
import { isObj, LIMITS } from './bounds.ts';
import { isCompact, isInt, wirePackr as packr } from './compact.ts';
import { packHashes, unpackHashes } from './hash-bytes.ts';

/** A digest delta's hash lists (DigestDelta without from and size). */
export interface HashDelta {
  readonly added: BigUint64Array;
  readonly removed: BigUint64Array;
  readonly host?: BigUint64Array | undefined;
  readonly gpu?: BigUint64Array | undefined;
}

/** A composed delta: every list present (empty when none). */
export type FullDelta = { readonly [K in keyof HashDelta]-?: BigUint64Array };

const R = 1;
const A = 2;
const G = 4;
const H = 8;

/** A hash's standing at a receiver: 0 absent, 1 on the GPU, 2 in host memory only. */
function step(flags: number, s: number): number {
  if (flags & R) s = 0;
  if (flags & A) s = 1;
  if (flags & G && s === 2) s = 1;
  if (flags & H && s !== 0) s = 2;
  return s;
}

/** The map from each standing to the next, as one number (base 3). */
const mapOf = (f: (s: number) => number): number => f(0) + 3 * f(1) + 9 * f(2);

/** Each map one delta can make, and the fewest lists that make it. */
const FLAGS_OF = new Map<number, number>();
for (const flags of [0, H, G, A, A | H, R])
  FLAGS_OF.set(
    mapOf((s) => step(flags, s)),
    flags,
  );

function flagsOf(delta: HashDelta, into: Map<bigint, number>, shift: number): void {
  const lists = [
    [delta.removed, R],
    [delta.added, A],
    [delta.gpu, G],
    [delta.host, H],
  ] as const;
  for (const [list, flag] of lists)
    if (list !== undefined) for (const h of list) into.set(h, (into.get(h) ?? 0) | (flag << shift));
}

/** One delta equal to applying `a`, then `b`, to any digest (the header's tier rule); undefined if none is (never, while the maps stay closed). */
export function composeDeltas(a: HashDelta, b: HashDelta): FullDelta | undefined {
  const both = new Map<bigint, number>();
  flagsOf(a, both, 0);
  flagsOf(b, both, 4);
  const out = { added: [] as bigint[], removed: [] as bigint[], host: [] as bigint[], gpu: [] as bigint[] };
  for (const [h, f] of both) {
    const flags = FLAGS_OF.get(mapOf((s) => step(f >> 4, step(f & 15, s))));
    if (flags === undefined) return undefined;
    if (flags & R) out.removed.push(h);
    if (flags & A) out.added.push(h);
    if (flags & G) out.gpu.push(h);
    if (flags & H) out.host.push(h);
  }
  return {
    added: BigUint64Array.from(out.added),
    removed: BigUint64Array.from(out.removed),
    host: BigUint64Array.from(out.host),
    gpu: BigUint64Array.from(out.gpu),
  };
}

type Obj = Record<string, unknown>;
/** The fields toCompact moves from the static group into `extra` when their position cannot carry them. */
const STATIC_EXTRA = ['engine', 'endpoints', 'capacity', 'role'] as const;

/** A compact state's parts this module reads, or undefined when it is not one it composes. */
function partsOf(bytes: Uint8Array): { a: unknown[]; ident: unknown[]; dg: unknown[]; extra: Obj } | undefined {
  let a: unknown;
  try {
    a = packr.unpack(bytes);
  } catch {
    return undefined;
  }
  if (!isCompact(a) || !Array.isArray(a[4])) return undefined;
  const extra = a.length === 6 ? a[5] : {};
  if (!isObj(extra) || extra.digest !== undefined) return undefined;
  return { a, ident: a[1] as unknown[], dg: a[4], extra };
}

const hashes = (x: unknown): BigUint64Array | undefined =>
  x === null || x === undefined
    ? new BigUint64Array(0)
    : x instanceof Uint8Array && x.byteLength % 8 === 0
      ? unpackHashes(x)
      : undefined;

/** The two digests' hash lists, when both are well formed. */
function deltasOf(o: unknown[], n: unknown[]): [HashDelta, HashDelta] | undefined {
  const [oa, or, oh, og, na, nr, nh, ng] = [o[2], o[3], o[4], o[5], n[2], n[3], n[4], n[5]].map(hashes);
  if ([oa, or, oh, og, na, nr, nh, ng].some((x) => x === undefined)) return undefined;
  return [
    { added: oa!, removed: or!, host: oh!, gpu: og! },
    { added: na!, removed: nr!, host: nh!, gpu: ng! },
  ];
}

/** Does `newer` follow `older` in one agent's chain (the header's second rule)? */
function chained(o: ReturnType<typeof partsOf> & object, n: ReturnType<typeof partsOf> & object): boolean {
  const [oi, ni] = [o.ident, n.ident];
  if (o.a[0] !== n.a[0] || [0, 1, 2, 3].some((i) => oi[i] !== ni[i])) return false;
  const [from, seq] = [o.dg[0], oi[4]];
  return isInt(seq) && isInt(from) && from >= 0 && from < seq && isInt(n.dg[1]) && n.dg[0] === seq;
}

/** One state that stands for `older` then `newer` (the header's rules), or undefined when they are not composed. */
export function coalesceStates(older: Uint8Array, newer: Uint8Array): Uint8Array | undefined {
  const o = partsOf(older);
  const n = partsOf(newer);
  if (o === undefined || n === undefined || !chained(o, n)) return undefined;
  const deltas = deltasOf(o.dg, n.dg);
  const d = deltas && composeDeltas(deltas[0], deltas[1]);
  if (d === undefined) return undefined;
  if (d.added.length + d.removed.length + d.host.length + d.gpu.length > LIMITS.deltaHashes) return undefined;
  const extra: Obj = { ...n.extra };
  let stat = n.a[2];
  if (!Array.isArray(stat)) {
    if (!isInt(n.extra.staticSeq) || n.extra.staticSeq > (o.ident[4] as number)) return undefined;
    if (Array.isArray(o.a[2])) {
      stat = o.a[2];
      delete extra.staticSeq;
      for (const k of STATIC_EXTRA) if (o.extra[k] !== undefined) extra[k] = o.extra[k];
    } else {
      if (!isInt(o.extra.staticSeq)) return undefined;
      extra.staticSeq = Math.min(o.extra.staticSeq, n.extra.staticSeq);
    }
  }
  const list = (x: BigUint64Array): Uint8Array | null => (x.length > 0 ? packHashes(x) : null);
  const dg: unknown[] = [o.dg[0], n.dg[1], packHashes(d.added), packHashes(d.removed), list(d.host), list(d.gpu)];
  while (dg.length > 4 && dg[dg.length - 1] === null) dg.pop();
  const out: unknown[] = [n.a[0], n.ident, stat, n.a[3], dg];
  if (Object.keys(extra).length > 0) out.push(extra);
  const bytes = packr.pack(out);
  return bytes.byteLength <= LIMITS.messageBytes ? bytes : undefined;
}
