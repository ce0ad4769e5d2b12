/**
 * Where a router's received gossip bytes go, counted from each gossipsub RPC
 * as read off its stream (GossipNode.onRpc: after noise and yamux, before
 * any processing). Each RPC's bytes are split, exactly, into:
 *  - state: the payload of the first copy of each message (the encoded
 *    state, what the router needs);
 *  - author and signature: `from`, `seqno`, `signature` and `key` of the
 *    first copy (StrictSign: the author is known and cannot be forged);
 *  - framing: the rest of the first copy (topic, protobuf tags and lengths),
 *    the RPC's length prefix and subscriptions;
 *  - duplicates: every byte of every later copy of a message already seen;
 *  - control, by kind: IHAVE, IWANT, GRAFT, PRUNE, IDONTWANT.
 * The wire bytes minus these are the transport's (noise, yamux, multistream,
 * identify), measured on the socket by the bench. Protobuf sizes are computed,
 * not re-encoded: a length-delimited field costs its tag (1 byte), a varint
 * length and its bytes. O(fields) per RPC.
 */
import type { GossipRpc } from '@warmpath/shared/gossip';

export const CONTROL_KINDS = ['ihave', 'iwant', 'graft', 'prune', 'idontwant'] as const;
export type ControlKind = (typeof CONTROL_KINDS)[number];

export interface RpcBytes {
  rpcs: number;
  /** Message copies received, and of them first copies (unique messages). */
  copies: number;
  unique: number;
  state: number;
  authorSignature: number;
  framing: number;
  duplicates: number;
  control: Record<ControlKind, number>;
  /** Every byte of every RPC, its length prefix included (= the sum of the above). */
  total: number;
}

export function emptyRpcBytes(): RpcBytes {
  return {
    rpcs: 0,
    copies: 0,
    unique: 0,
    state: 0,
    authorSignature: 0,
    framing: 0,
    duplicates: 0,
    control: { ihave: 0, iwant: 0, graft: 0, prune: 0, idontwant: 0 },
    total: 0,
  };
}

const varint = (n: number): number => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : 4);
/** A length-delimited field holding n bytes. */
const field = (n: number): number => 1 + varint(n) + n;
const opt = (b: Uint8Array | undefined): number => (b === undefined || b.byteLength === 0 ? 0 : field(b.byteLength));
const text = (s: string | undefined): number => (s === undefined ? 0 : field(Buffer.byteLength(s)));
const ids = (xs: readonly Uint8Array[] | undefined): number => (xs ?? []).reduce((n, x) => n + field(x.byteLength), 0);

function controlEntry(kind: ControlKind, e: Record<string, unknown>): number {
  const topic = text(e.topicID as string | undefined);
  const msgIds = ids(e.messageIDs as Uint8Array[] | undefined);
  if (kind === 'prune') {
    const peers = ((e.peers as Array<{ peerID?: Uint8Array; signedPeerRecord?: Uint8Array }>) ?? []).reduce(
      (n, p) => n + field(opt(p.peerID) + opt(p.signedPeerRecord)),
      0,
    );
    const backoff = e.backoff === undefined ? 0 : 1 + varint(Number(e.backoff));
    return field(topic + peers + backoff);
  }
  return field(topic + msgIds);
}

/** Counts one RPC of `bytes` bytes into `into`; `seen` holds the ids (author + seqno) of messages already received. */
export function countRpc(into: RpcBytes, rpc: GossipRpc, bytes: number, seen: Set<string>): void {
  into.rpcs++;
  let rest = bytes + varint(bytes);
  for (const m of rpc.messages) {
    const whole = field(opt(m.from) + opt(m.data) + opt(m.seqno) + text(m.topic) + opt(m.signature) + opt(m.key));
    rest -= whole;
    into.copies++;
    const id = `${Buffer.from(m.from ?? []).toString('base64')}/${Buffer.from(m.seqno ?? []).toString('hex')}`;
    if (seen.has(id)) {
      into.duplicates += whole;
      continue;
    }
    seen.add(id);
    into.unique++;
    const author = opt(m.from) + opt(m.seqno) + opt(m.signature) + opt(m.key);
    into.state += m.data?.byteLength ?? 0;
    into.authorSignature += author;
    into.framing += whole - author - (m.data?.byteLength ?? 0);
  }
  if (rpc.control !== undefined) {
    let inner = 0;
    for (const kind of CONTROL_KINDS) {
      const entries = (rpc.control[kind] ?? []) as unknown as Array<Record<string, unknown>>;
      const n = entries.reduce((s, e) => s + controlEntry(kind, e), 0);
      into.control[kind] += n;
      inner += n;
    }
    // The control field's own tag and length go with framing.
    rest -= inner;
  }
  into.framing += rest;
  into.total += bytes + varint(bytes);
}

/** b − a, field by field (a window's counts from two readings). */
export function diffRpcBytes(b: RpcBytes, a: RpcBytes): RpcBytes {
  const out = emptyRpcBytes();
  for (const k of ['rpcs', 'copies', 'unique', 'state', 'authorSignature', 'framing', 'duplicates', 'total'] as const)
    out[k] = b[k] - a[k];
  for (const k of CONTROL_KINDS) out.control[k] = b.control[k] - a.control[k];
  return out;
}

export function cloneRpcBytes(x: RpcBytes): RpcBytes {
  return { ...x, control: { ...x.control } };
}

/** The routers' mean of each count, per message published. */
export function meanRpcBytes(xs: RpcBytes[], published: number): RpcBytes {
  const out = emptyRpcBytes();
  const per = (f: (x: RpcBytes) => number): number =>
    xs.reduce((s, x) => s + f(x), 0) / Math.max(1, xs.length) / Math.max(1, published);
  for (const k of ['rpcs', 'copies', 'unique', 'state', 'authorSignature', 'framing', 'duplicates', 'total'] as const)
    out[k] = per((x) => x[k]);
  for (const k of CONTROL_KINDS) out.control[k] = per((x) => x.control[k]);
  return out;
}
