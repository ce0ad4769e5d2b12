/**
 * The fleet's keys: the private-network swarm key every node of a fleet shares
 * (libp2p pnet, /key/swarm/psk/1.0.0/) and a node's own persistent identity;
 * and the gossip options an agent's or a router's settings name, with those
 * two files read.
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { GossipConfigError } from './types.ts';
import type { GossipOptions, GossipRelay, GossipWarning, HandoffAgent } from './types.ts';

const SWARM_KEY_HEADER = '/key/swarm/psk/1.0.0/';
const SWARM_KEY_CODEC = '/base16/';
const SWARM_KEY_HEX = /^[0-9a-fA-F]{64}$/;

export interface SwarmKey {
  /** Normalized key-file bytes, as @libp2p/pnet's preSharedKey expects. */
  file: Uint8Array;
  /** First 8 hex chars of SHA-256 of the key: lets operators compare keys without revealing them. */
  fingerprint: string;
}

/** Contents of a new swarm key file: three lines, 32 random bytes in hex. */
export function generateSwarmKey(): string {
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex');
  return `${SWARM_KEY_HEADER}\n${SWARM_KEY_CODEC}\n${key}\n`;
}

/** Validates a swarm key file's contents; throws GossipConfigError saying what a valid file looks like. */
export function parseSwarmKey(input: string | Uint8Array): SwarmKey {
  let text: string;
  if (typeof input === 'string') {
    text = input;
  } else {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(input);
    } catch {
      throw swarmKeyError('it is not UTF-8 text');
    }
  }
  const lines = text
    .trim()
    .split(/\r?\n/)
    .map((line) => line.trim());
  if (lines.length !== 3) throw swarmKeyError(`it has ${lines.length} non-blank line(s)`);
  const [header, codec, hex] = lines as [string, string, string];
  if (header !== SWARM_KEY_HEADER) throw swarmKeyError(`line 1 is ${JSON.stringify(header.slice(0, 40))}`);
  if (codec !== SWARM_KEY_CODEC)
    throw swarmKeyError(`line 2 is ${JSON.stringify(codec.slice(0, 40))} (only /base16/ is supported)`);
  if (!SWARM_KEY_HEX.test(hex)) throw swarmKeyError(`line 3 has ${hex.length} characters, not 64 hex digits`);
  const lower = hex.toLowerCase();
  return {
    file: new TextEncoder().encode(`${SWARM_KEY_HEADER}\n${SWARM_KEY_CODEC}\n${lower}`),
    fingerprint: createHash('sha256').update(Buffer.from(lower, 'hex')).digest('hex').slice(0, 8),
  };
}

function swarmKeyError(problem: string): GossipConfigError {
  return new GossipConfigError(
    `invalid swarmKey: ${problem}; expected three lines: "${SWARM_KEY_HEADER}", "${SWARM_KEY_CODEC}" and 64 hex digits (generate one with generateSwarmKey())`,
  );
}

/** A new Ed25519 identity as protobuf bytes, to persist and pass back as `privateKey`. */
export async function generateIdentity(): Promise<Uint8Array> {
  return privateKeyToProtobuf(await generateKeyPair('Ed25519'));
}

/**
 * A node's identity kept in a file: read when it exists, else generated and
 * written (mode 0600, never overwritten). A stable peer id keeps a restarted
 * agent the owner of its replica id and lets routers allowlist it.
 */
export async function loadIdentity(path: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT')
      throw new GossipConfigError(`identity file ${path}: ${(err as Error).message}`);
  }
  const key = await generateIdentity();
  try {
    await writeFile(path, key, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as { code?: string }).code === 'EEXIST') return new Uint8Array(await readFile(path));
    throw new GossipConfigError(`identity file ${path}: ${(err as Error).message}`);
  }
  return key;
}

/** The peer id (`12D3KooW…`) of an identity's protobuf bytes, as routers list it in agentPeers. */
export function peerIdOfIdentity(key: Uint8Array): string {
  try {
    return privateKeyFromProtobuf(key).publicKey.toString();
  } catch (err) {
    throw new GossipConfigError(`not a libp2p identity file: ${(err as Error).message}`);
  }
}

/** An identity's protobuf bytes as a hand-off names its agent (GossipNode.handOff). */
export function handoffAgentOf(key: Uint8Array): HandoffAgent {
  const publicKey = privateKeyFromProtobuf(key).publicKey;
  return { peerId: publicKey.toString(), author: publicKey.toMultihash().bytes };
}

/** The gossip settings agent and router share, by their config field names. */
export interface GossipSettings {
  readonly fleet: string;
  readonly gossipListen: readonly string[];
  readonly bootstrap: readonly string[];
  readonly bootstrapDns: readonly string[];
  readonly bootstrapDnsIntervalMs: number;
  readonly gossipPeers: number;
  readonly gossipMaxConnections: number;
  /** Path of the swarm key file ("" = none). */
  readonly swarmKey: string;
  readonly insecureNoSwarmKey: boolean;
  /** Path of the identity file, created if missing ("" = a new peer id each start). */
  readonly identityFile: string;
  /** A router's batch window, ms (GossipOptions.batchWindowMs; 0 = off); agents have none. */
  readonly gossipBatchMs?: number;
  /** Batches a flooding router reads a second at most (GossipOptions.batchReadsPerS); agents have none. */
  readonly gossipBatchReadsPerS?: number;
  /** States a flooding router reads a second at most (GossipOptions.batchStatesPerS); agents have none. */
  readonly gossipBatchStatesPerS?: number;
  /** How a router's batches reach the other routers (GossipOptions.relay); agents have none. */
  readonly gossipRelay?: string;
}

/** createGossipNode's options from an agent's or a router's settings: the swarm key and identity files read here; `channels` as GossipOptions'. */
export async function gossipOptionsOf(
  s: GossipSettings,
  onWarning: (w: GossipWarning) => void,
  channels?: readonly string[],
): Promise<GossipOptions> {
  return {
    ...(channels !== undefined ? { channels } : {}),
    fleet: s.fleet,
    listen: [...s.gossipListen],
    bootstrap: [...s.bootstrap],
    bootstrapDns: [...s.bootstrapDns],
    gossipPeers: s.gossipPeers,
    maxConnections: s.gossipMaxConnections,
    timing: { dnsIntervalMs: s.bootstrapDnsIntervalMs },
    ...(s.gossipBatchMs !== undefined ? { batchWindowMs: s.gossipBatchMs } : {}),
    ...(s.gossipBatchReadsPerS !== undefined ? { batchReadsPerS: s.gossipBatchReadsPerS } : {}),
    ...(s.gossipBatchStatesPerS !== undefined ? { batchStatesPerS: s.gossipBatchStatesPerS } : {}),
    ...(s.gossipRelay !== undefined ? { relay: s.gossipRelay as GossipRelay } : {}),
    ...(s.swarmKey !== '' ? { swarmKey: await readFile(s.swarmKey, 'utf8') } : {}),
    onWarning,
    ...(s.insecureNoSwarmKey ? { insecureNoSwarmKey: true } : {}),
    ...(s.identityFile !== '' ? { privateKey: await loadIdentity(s.identityFile) } : {}),
  };
}
