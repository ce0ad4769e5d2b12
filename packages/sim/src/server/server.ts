/**
 * The simulator's HTTP face: vLLM's OpenAI-compatible dialect over node:http,
 * backed by one EngineModel driven in (scaled) real time.
 *
 * Per request: validate → prompt identity (canonical text, chain hashes) →
 * model.submit → the driver's step events write SSE chunks / the final JSON.
 * One timer per replica (the driver), none per request; a client that goes
 * away aborts its sequence and frees its blocks.
 *
 * Modules: routes.ts (the route table), inference.ts (inference and probe),
 * streams.ts (step events → responses), fault-control.ts (faults in effect),
 * context.ts (what handlers share), disagg.ts (roles and the engines'
 * disaggregated protocols), receive.ts (a decode worker's KV transfer),
 * kv-store.ts (the KV side channel between workers).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mulberry32 } from '@warmpath/shared/runtime';
import { EngineModel } from '../model/engine.ts';
import { NET_KV_BYTES_PER_S, PROFILES, isProfileName } from '../model/profiles.ts';
import type { EngineProfile, ProfileName } from '../model/profiles.ts';
import { simSchema } from './config.ts';
import type { SimContext } from './context.ts';
import { RealTimeDriver } from './driver.ts';
import { FaultControl } from './fault-control.ts';
import type { DisaggContext } from './context.ts';
import type { KvFailurePolicy, Role } from './disagg.ts';
import { applyFaultSpec, noFaults } from './faults.ts';
import { KvStore } from './kv-store.ts';
import type { FaultState } from './faults.ts';
import { RemotePeerKv } from './peer-kv.ts';
import { handle } from './routes.ts';
import { InflightStreams } from './streams.ts';

/**
 * Idle keep-alive connections close after 65 s: longer than the agent's and
 * router's 60 s upstream keep-alive, so the client closes an idle connection
 * first and never reuses one the simulator has just closed.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** Options left out take simSchema's defaults (config.ts), except `port`. */
export interface SimServerOptions {
  /** Default 0: chosen by the OS (the CLI's default is 8000). */
  readonly port?: number;
  readonly host?: string;
  readonly profile?: ProfileName | EngineProfile;
  /** Served base model id. */
  readonly model?: string;
  /** LoRA adapters registered at start. */
  readonly adapters?: readonly string[];
  /** LoRA on even without static adapters (dynamic loading). Implied by `adapters`. */
  readonly enableLora?: boolean;
  readonly maxLoras?: number;
  readonly maxCpuLoras?: number;
  /** Simulated time runs `speed`× faster than wall time. */
  readonly speed?: number;
  /** Start-up faults, CLI syntax (`crash-after=30s`, `slow=2`, ...). */
  readonly faults?: readonly string[];
  readonly charsPerToken?: number;
  /** Output tokens when the request names no max_tokens. */
  readonly defaultMaxTokens?: number;
  readonly bodyLimitBytes?: number;
  readonly enablePrefixCaching?: boolean;
  /** Host-memory KV tier in tokens; default the profile's (off). */
  readonly cpuKvTokens?: number;
  /** KV sharing: the other simulators' base URLs (also set on POST /sim/v1/kv-peers); default none, off. */
  readonly kvPeers?: readonly string[];
  /** vLLM's --scheduling-policy (default fcfs). */
  readonly schedulingPolicy?: 'fcfs' | 'priority';
  /** Serve /v1/load_lora_adapter and /v1/unload_lora_adapter. */
  readonly allowRuntimeLora?: boolean;
  /** Seed of the error-rate and KV-transfer faults' PRNG. */
  readonly seed?: number;
  /** Disaggregation role (README, "Disaggregation"). */
  readonly role?: Role;
  /** KV link bandwidth, Gbit/s per GPU. */
  readonly kvLinkGbps?: number;
  readonly kvLinkLatencyMs?: number;
  /** Simulated ms a decode worker waits for a KV transfer. */
  readonly kvTimeoutMs?: number;
  readonly kvLoadFailurePolicy?: KvFailurePolicy;
  /** Called by the crash fault. Default: drop every connection and stop listening. */
  readonly onCrash?: () => void;
}

export interface SimServer {
  readonly url: string;
  readonly port: number;
  readonly model: EngineModel;
  readonly modelName: string;
  /** Current faults; `setFaults` takes the runtime JSON shape. */
  faults(): FaultState;
  setFaults(update: unknown): FaultState;
  close(): Promise<void>;
}

export async function startSimServer(options: SimServerOptions = {}): Promise<SimServer> {
  const server = createServer({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS }, (req, res) => void handle(ctx, req, res));
  const ctx = createContext(options, () => {
    if (options.onCrash !== undefined) {
      options.onCrash();
      return;
    }
    ctx.driver.stop();
    server.close();
    server.closeAllConnections();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? simSchema.host.default, () => {
      server.off('error', reject);
      resolve();
    });
  });
  ctx.faults.apply();
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const anyAddress = addr.address === '0.0.0.0' || addr.address === '::';
  ctx.disagg.address.host = anyAddress ? '127.0.0.1' : addr.address;
  ctx.disagg.address.port = addr.port;
  let closed = false;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    model: ctx.model,
    modelName: ctx.modelName,
    faults: () => ctx.faults.state,
    setFaults: (update) => ctx.faults.set(update),
    close: async () => {
      if (closed) return;
      closed = true;
      ctx.driver.stop();
      ctx.faults.stop();
      ctx.streams.destroyAll();
      ctx.disagg.store.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Resolves the options (defaults here, once) and builds the model, its driver, the streams and the fault control. */
function createContext(options: SimServerOptions, crash: () => void): SimContext {
  const profile: EngineProfile =
    options.profile === undefined
      ? profileByName(simSchema.profile.default)
      : typeof options.profile === 'string'
        ? profileByName(options.profile)
        : options.profile;
  const adapters = options.adapters ?? [];
  const loraEnabled = options.enableLora === true || adapters.length > 0;
  const speed = options.speed ?? simSchema.speed.default;
  if (!(speed > 0)) throw new RangeError('speed must be > 0');
  const peerKv = new RemotePeerKv(NET_KV_BYTES_PER_S);
  peerKv.peers = options.kvPeers ?? [];
  const model = new EngineModel(profile, {
    peers: peerKv,
    maxLoras: loraEnabled ? (options.maxLoras ?? simSchema.maxLoras.default) : 0,
    maxCpuLoras: options.maxCpuLoras ?? simSchema.maxCpuLoras.default,
    adapters,
    enablePrefixCaching: options.enablePrefixCaching ?? simSchema.enablePrefixCaching.default,
    ...(options.cpuKvTokens !== undefined && options.cpuKvTokens > 0 ? { cpuKvTokens: options.cpuKvTokens } : {}),
    priorityScheduling: options.schedulingPolicy === 'priority',
  });
  const boot = Math.floor(Math.random() * 0xffffff)
    .toString(16)
    .padStart(6, '0');
  let seqCounter = 0;
  const initialFaults = applyFaultSpec(noFaults(), options.faults ?? []);
  const streams = new InflightStreams(model, () => faults.state);
  const driver = new RealTimeDriver(model, speed, (r) => streams.deliver(r));
  const faults = new FaultControl(model, driver, speed, initialFaults, crash);
  return {
    model,
    driver,
    profile,
    modelName: options.model ?? simSchema.model.default,
    speed,
    charsPerToken: options.charsPerToken ?? simSchema.charsPerToken.default,
    defaultMaxTokens: options.defaultMaxTokens ?? simSchema.maxTokensDefault.default,
    bodyLimit: options.bodyLimitBytes ?? simSchema.bodyLimitBytes.default,
    loraEnabled,
    allowRuntimeLora: options.allowRuntimeLora ?? simSchema.allowRuntimeLora.default,
    boot,
    createdUnix: Math.floor(Date.now() / 1000),
    cacheInfo: cacheInfoOf(profile, model.enablePrefixCaching),
    loraPaths: new Map<string, string>(adapters.map((a) => [a, `/adapters/${a}`])),
    random: mulberry32(options.seed ?? simSchema.seed.default), // seeded so error-rate faults are reproducible
    nextSeqId: () => `${boot}-${(seqCounter++).toString(36)}`,
    streams,
    faults,
    disagg: disaggContext(options, boot, speed),
    peerKv,
  };
}

/**
 * A fetched-nobody KV record expires after the time vLLM's prefill worker
 * holds unread blocks (VLLM_NIXL_ABORT_REQUEST_TIMEOUT's default), in simulated time.
 */
const KV_HOLD_MS = 480_000;

function disaggContext(options: SimServerOptions, boot: string, speed: number): DisaggContext {
  return {
    role: options.role ?? (simSchema.role.default as Role),
    link: {
      gbps: options.kvLinkGbps ?? simSchema.kvLinkGbps.default,
      latencyMs: options.kvLinkLatencyMs ?? simSchema.kvLinkLatencyMs.default,
    },
    timeoutMs: options.kvTimeoutMs ?? simSchema.kvTimeoutMs.default,
    failurePolicy: options.kvLoadFailurePolicy ?? (simSchema.kvLoadFailurePolicy.default as KvFailurePolicy),
    engineId: `sim-engine-${boot}`,
    store: new KvStore(KV_HOLD_MS / speed),
    address: { host: '127.0.0.1', port: 0 },
    stats: { produced: 0, received: 0, failed: 0, recomputed: 0 },
  };
}

/** vLLM's cache_config_info labels for this profile. */
function cacheInfoOf(profile: EngineProfile, prefixCaching: boolean): Record<string, string> {
  return {
    block_size: String(profile.blockSize),
    cache_dtype: 'auto',
    calculate_kv_scales: 'False',
    cpu_offload_gb: '0',
    enable_prefix_caching: prefixCaching ? 'True' : 'False',
    gpu_memory_utilization: '0.9',
    is_attention_free: 'False',
    num_cpu_blocks: 'None',
    num_gpu_blocks: String(profile.numGpuBlocks),
    num_gpu_blocks_override: 'None',
    prefix_caching_hash_algo: 'sha256',
    sliding_window: 'None',
    swap_space: '4',
  };
}

function profileByName(name: string): EngineProfile {
  if (!isProfileName(name))
    throw new RangeError(`unknown profile "${name}" (known: ${Object.keys(PROFILES).join(', ')})`);
  return PROFILES[name];
}
