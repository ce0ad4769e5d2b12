/**
 * Gossip options, validated once: unknown keys and bad values throw
 * GossipConfigError saying what is acceptable; defaults come from
 * constants.ts; the result is frozen.
 */
import { lookup } from 'node:dns/promises';
import { privateKeyFromProtobuf } from '@libp2p/crypto/keys';
import { multiaddr } from '@multiformats/multiaddr';
import type { Multiaddr } from '@multiformats/multiaddr';
import {
  BATCH_RELAY,
  BATCH_READS_PER_S,
  BATCH_STATES_PER_S,
  BATCH_WINDOW_MS,
  MAX_WINDOW_MS,
  BOOTSTRAP_REDIAL_INTERVAL_MS,
  CHANNEL_NAME_PATTERN,
  DEFAULT_GOSSIP_PORT,
  DEFAULT_LISTEN,
  DIAL_TIMEOUT_MS,
  DNS_INTERVAL_MS,
  FLEET_NAME_PATTERN,
  GOSSIP_WINDOWS,
  HEARTBEAT_INTERVAL_MS,
  IDONTWANT_MIN_BYTES,
  ISOLATION_WARNING_AFTER_MS,
  MAX_CONNECTIONS,
  MESSAGE_CACHE_WINDOWS,
  MESH_D,
  MESH_D_HI,
  MESH_D_LAZY,
  MESH_D_LO,
  SILENT_PEER_GRACE_MS,
  TOPIC_PREFIX,
  TOPIC_SUFFIX,
} from './constants.ts';
import { validateGroups } from './groups.ts';
import { parseSwarmKey } from './keys.ts';
import type { SwarmKey } from './keys.ts';
import { GossipConfigError } from './types.ts';
import type {
  GossipMeshTuning,
  GossipOptions,
  GossipPrivateKey,
  GossipRelay,
  GossipResolver,
  GossipTiming,
  GossipWarning,
} from './types.ts';

export interface ValidatedOptions {
  fleet: string;
  topic: string;
  listen: string[];
  bootstrap: Multiaddr[];
  /** `bootstrapDns` names with their ports. */
  dns: ReadonlyArray<{ name: string; port: number }>;
  resolve: GossipResolver;
  gossipPeers: number;
  maxConnections: number;
  swarmKey: SwarmKey | undefined;
  privateKey: GossipPrivateKey | undefined;
  onWarning: ((warning: GossipWarning) => void) | null;
  timing: Required<GossipTiming>;
  mesh: Required<GossipMeshTuning>;
  subscribe: boolean;
  /** `channels` name → its topic. */
  channels: ReadonlyMap<string, string>;
  /** The groups a subscriber serves (groups.ts); undefined: every group. */
  groups: readonly string[] | undefined;
  /** A subscriber's batch window, ms (batch.ts); 0: it takes no hand-offs and relays states one by one. */
  batchWindowMs: number;
  /** Batches a flooding router reads a second at most (GossipOptions.batchReadsPerS); 0: the window stays fixed. */
  batchReadsPerS: number;
  /** States a flooding router reads a second at most (GossipOptions.batchStatesPerS); 0: no states budget. */
  batchStatesPerS: number;
  /** How a batching router's batches reach the other routers (GossipOptions.relay). */
  relay: GossipRelay;
}

/**
 * Does this node send its batches straight to every router of the group and
 * relay none (a subscriber with a batch window, relay 'flood')? Its gossipsub
 * mesh then stays empty: a copy it missed comes by IHAVE/IWANT (libp2p.ts).
 */
export function floodsBatches(config: ValidatedOptions): boolean {
  return config.subscribe && config.batchWindowMs > 0 && config.relay === 'flood';
}

const OPTION_KEYS = new Set([
  'fleet',
  'listen',
  'bootstrap',
  'bootstrapDns',
  'resolve',
  'gossipPeers',
  'maxConnections',
  'swarmKey',
  'insecureNoSwarmKey',
  'privateKey',
  'onWarning',
  'timing',
  'mesh',
  'subscribe',
  'channels',
  'groups',
  'batchWindowMs',
  'batchReadsPerS',
  'batchStatesPerS',
  'relay',
]);
const TIMING_KEYS = new Set([
  'heartbeatIntervalMs',
  'redialIntervalMs',
  'dialTimeoutMs',
  'isolationWarningAfterMs',
  'silentPeerGraceMs',
  'dnsIntervalMs',
]);
/** A DNS name, optionally with a port: `routers.prod.svc.cluster.local`, `gpu-hosts:4001`. */
const DNS_ENTRY =
  /^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?)(?::(\d{1,5}))?$/;

export function topicFor(fleet: string): string {
  validateFleet(fleet);
  return `${TOPIC_PREFIX}${fleet}${TOPIC_SUFFIX}`;
}

/** The topic of a further channel of the fleet (GossipOptions.channels). */
export function channelTopic(fleet: string, name: string): string {
  validateFleet(fleet);
  if (!CHANNEL_NAME_PATTERN.test(name) || name === 'state')
    throw new GossipConfigError(
      `invalid channel ${JSON.stringify(name)}: use 1-32 lowercase letters, digits or '-', starting with a letter; not 'state'`,
    );
  return `${TOPIC_PREFIX}${fleet}/${name}/1`;
}

function parseChannels(fleet: string, value: unknown): Map<string, string> {
  if (value === undefined) return new Map();
  if (!Array.isArray(value)) throw new GossipConfigError('channels must be an array of names');
  return new Map(value.map((name: unknown) => [String(name), channelTopic(fleet, String(name))]));
}

function validateFleet(fleet: unknown): asserts fleet is string {
  if (typeof fleet !== 'string' || !FLEET_NAME_PATTERN.test(fleet)) {
    throw new GossipConfigError(
      `invalid fleet ${JSON.stringify(fleet)}: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
}

function parseAddrs(key: string, value: unknown): Multiaddr[] {
  if (!Array.isArray(value)) throw new GossipConfigError(`${key} must be an array of multiaddr strings`);
  return value.map((text: unknown, i) => {
    if (typeof text !== 'string') throw new GossipConfigError(`${key}[${i}] must be a multiaddr string`);
    try {
      return multiaddr(text);
    } catch (err) {
      throw new GossipConfigError(
        `${key}[${i}] ${JSON.stringify(text)} is not a multiaddr (e.g. /ip4/10.0.0.5/tcp/4001/p2p/12D3Koo...): ${errorText(err)}`,
      );
    }
  });
}

function validateTiming(timing: unknown): Required<GossipTiming> {
  const out: Required<GossipTiming> = {
    heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    redialIntervalMs: BOOTSTRAP_REDIAL_INTERVAL_MS,
    dialTimeoutMs: DIAL_TIMEOUT_MS,
    isolationWarningAfterMs: ISOLATION_WARNING_AFTER_MS,
    silentPeerGraceMs: SILENT_PEER_GRACE_MS,
    dnsIntervalMs: DNS_INTERVAL_MS,
  };
  if (timing === undefined) return out;
  if (timing === null || typeof timing !== 'object') throw new GossipConfigError('timing must be an object');
  for (const [key, value] of Object.entries(timing)) {
    if (!TIMING_KEYS.has(key)) {
      throw new GossipConfigError(`unknown option timing.${key}; known: ${[...TIMING_KEYS].join(', ')}`);
    }
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 10 || value > 600_000) {
      throw new GossipConfigError(`timing.${key} must be a number of milliseconds between 10 and 600000`);
    }
    out[key as keyof GossipTiming] = value;
  }
  return out;
}

/** Mesh overrides: integers with Dlo ≤ D ≤ Dhi, as gossipsub requires. */
function validateMesh(mesh: unknown): Required<GossipMeshTuning> {
  if (mesh !== undefined && (mesh === null || typeof mesh !== 'object'))
    throw new GossipConfigError('mesh must be an object');
  const m = (mesh ?? {}) as Record<string, unknown>;
  const known = ['D', 'Dlo', 'Dhi', 'Dlazy', 'gossipWindows', 'idontwantMinDataSize'];
  for (const key of Object.keys(m))
    if (!known.includes(key)) throw new GossipConfigError(`unknown option mesh.${key}; known: ${known.join(', ')}`);
  const out = {
    D: count('mesh.D', m.D, MESH_D, 1),
    Dlo: count('mesh.Dlo', m.Dlo, MESH_D_LO, 0),
    Dhi: count('mesh.Dhi', m.Dhi, MESH_D_HI, 1),
    Dlazy: count('mesh.Dlazy', m.Dlazy, MESH_D_LAZY, 0),
    gossipWindows: count('mesh.gossipWindows', m.gossipWindows, GOSSIP_WINDOWS, 1),
    idontwantMinDataSize: count('mesh.idontwantMinDataSize', m.idontwantMinDataSize, IDONTWANT_MIN_BYTES, 0),
  };
  if (!(out.Dlo <= out.D && out.D <= out.Dhi)) throw new GossipConfigError('mesh must have Dlo ≤ D ≤ Dhi');
  if (out.gossipWindows > MESSAGE_CACHE_WINDOWS)
    throw new GossipConfigError(`mesh.gossipWindows must be at most ${MESSAGE_CACHE_WINDOWS}`);
  return out;
}

function parseDns(value: unknown): Array<{ name: string; port: number }> {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new GossipConfigError('bootstrapDns must be an array of DNS names');
  return value.map((text: unknown, i) => {
    const m = typeof text === 'string' ? DNS_ENTRY.exec(text) : null;
    const port = m?.[5] === undefined ? DEFAULT_GOSSIP_PORT : Number(m[5]);
    if (m === null || port < 1 || port > 65535) {
      throw new GossipConfigError(
        `bootstrapDns[${i}] ${JSON.stringify(text)} is not a DNS name with an optional port (e.g. warmpath-routers-gossip or gpu-hosts.internal:4001)`,
      );
    }
    return { name: m[1]!, port };
  });
}

function count(key: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 100_000)
    throw new GossipConfigError(`${key} must be an integer from ${min} to 100000`);
  return value;
}

async function lookupAll(name: string): Promise<string[]> {
  return (await lookup(name, { all: true })).map((a) => a.address);
}

export function validateOptions(opts: GossipOptions): ValidatedOptions {
  if (opts === null || typeof opts !== 'object') throw new GossipConfigError('options must be an object');
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key))
      throw new GossipConfigError(`unknown option ${key}; known: ${[...OPTION_KEYS].join(', ')}`);
  }
  validateFleet(opts.fleet);
  const listen = parseAddrs('listen', opts.listen ?? [...DEFAULT_LISTEN]).map(String);
  if (listen.length === 0) throw new GossipConfigError('listen must name at least one multiaddr');
  const bootstrap = parseAddrs('bootstrap', opts.bootstrap ?? []);
  const dns = parseDns(opts.bootstrapDns);
  if (opts.resolve !== undefined && typeof opts.resolve !== 'function')
    throw new GossipConfigError('resolve must be a function');
  let privateKey: GossipPrivateKey | undefined;
  if (opts.privateKey instanceof Uint8Array) {
    try {
      privateKey = privateKeyFromProtobuf(opts.privateKey);
    } catch (err) {
      throw new GossipConfigError(
        `privateKey bytes are not a protobuf-encoded libp2p private key (see generateIdentity()): ${errorText(err)}`,
      );
    }
  } else {
    privateKey = opts.privateKey;
  }
  const onWarning = opts.onWarning === undefined ? emitProcessWarning : opts.onWarning;
  if (onWarning !== null && typeof onWarning !== 'function')
    throw new GossipConfigError('onWarning must be a function or null');
  if (opts.subscribe !== undefined && typeof opts.subscribe !== 'boolean')
    throw new GossipConfigError('subscribe must be true or false');
  const timing = Object.freeze(validateTiming(opts.timing));
  if (opts.insecureNoSwarmKey !== undefined && typeof opts.insecureNoSwarmKey !== 'boolean')
    throw new GossipConfigError('insecureNoSwarmKey must be true or false');
  if (opts.swarmKey === undefined && opts.insecureNoSwarmKey !== true) {
    throw new GossipConfigError(
      'a swarm key is required: without one anyone who reaches the gossip port can join the fleet and publish replica state. ' +
        'Pass swarmKey (--swarm-key FILE; `warmpath keygen > swarm.key` makes one) or, for tests and experiments only, insecureNoSwarmKey (--insecure-no-swarm-key)',
    );
  }
  return Object.freeze({
    subscribe: opts.subscribe ?? true,
    channels: parseChannels(opts.fleet, opts.channels),
    groups: validateGroups(opts.groups),
    fleet: opts.fleet,
    topic: topicFor(opts.fleet),
    listen,
    bootstrap,
    dns,
    resolve: opts.resolve ?? lookupAll,
    gossipPeers: count('gossipPeers', opts.gossipPeers, 0, 0),
    maxConnections: count('maxConnections', opts.maxConnections, MAX_CONNECTIONS, 1),
    swarmKey: opts.swarmKey === undefined ? undefined : parseSwarmKey(opts.swarmKey),
    privateKey,
    onWarning,
    timing,
    mesh: Object.freeze(validateMesh(opts.mesh)),
    batchWindowMs: batchWindow(opts.batchWindowMs),
    batchReadsPerS: count('batchReadsPerS', opts.batchReadsPerS, BATCH_READS_PER_S, 0),
    batchStatesPerS: count('batchStatesPerS', opts.batchStatesPerS, BATCH_STATES_PER_S, 0),
    relay: relayOf(opts.relay),
  });
}

function relayOf(value: unknown): GossipRelay {
  if (value === undefined) return BATCH_RELAY;
  if (value !== 'flood' && value !== 'mesh') throw new GossipConfigError("relay must be 'flood' or 'mesh'");
  return value;
}

/** A batch window of 0 (off) to 1,000 ms: beyond, a state's delay would use up its budget at the first hop. */
function batchWindow(value: unknown): number {
  if (value === undefined) return BATCH_WINDOW_MS;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_WINDOW_MS)
    throw new GossipConfigError(`batchWindowMs must be a number of milliseconds from 0 (off) to ${MAX_WINDOW_MS}`);
  return value;
}

function emitProcessWarning(warning: GossipWarning): void {
  process.emitWarning(warning.message, { code: warning.code });
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}
