/** What the simulator's route handlers share: the model, its driver, the settings and the live state of one server. */
import type { EngineModel } from '../model/engine.ts';
import type { EngineProfile } from '../model/profiles.ts';
import type { KvLink } from '../model/transfer.ts';
import type { KvFailurePolicy, Role } from './disagg.ts';
import type { RealTimeDriver } from './driver.ts';
import type { FaultControl } from './fault-control.ts';
import type { KvStore } from './kv-store.ts';
import type { RemotePeerKv } from './peer-kv.ts';
import type { InflightStreams } from './streams.ts';

/** Disaggregation settings and state of one worker (disagg.ts). */
export interface DisaggContext {
  readonly role: Role;
  readonly link: KvLink;
  /** Simulated ms a decode worker waits for a transfer. */
  readonly timeoutMs: number;
  readonly failurePolicy: KvFailurePolicy;
  /** vLLM's remote_engine_id of this worker. */
  readonly engineId: string;
  /** Finished prefills' KV, served on /sim/v1/kv/{key}. */
  readonly store: KvStore;
  /** Where peers reach this worker's side channel (set once listening). */
  readonly address: { host: string; port: number };
  readonly stats: { produced: number; received: number; failed: number; recomputed: number };
}

export interface SimContext {
  readonly model: EngineModel;
  readonly driver: RealTimeDriver;
  readonly profile: EngineProfile;
  /** Served base model id. */
  readonly modelName: string;
  readonly speed: number;
  readonly charsPerToken: number;
  /** Output tokens when the request names no max_tokens. */
  readonly defaultMaxTokens: number;
  readonly bodyLimit: number;
  readonly loraEnabled: boolean;
  /** Serve /v1/load_lora_adapter and /v1/unload_lora_adapter. */
  readonly allowRuntimeLora: boolean;
  /** Random per start: part of sequence and permission ids. */
  readonly boot: string;
  /** Unix seconds the server started (the metrics' `_created`). */
  readonly createdUnix: number;
  /** vLLM's cache_config_info labels. */
  readonly cacheInfo: Readonly<Record<string, string>>;
  /** Adapter → path, as /v1/models reports it. */
  readonly loraPaths: Map<string, string>;
  /** Seeded so error-rate faults are reproducible. */
  readonly random: () => number;
  /** A new sequence id, unique within this server. */
  readonly nextSeqId: () => string;
  readonly streams: InflightStreams;
  readonly faults: FaultControl;
  readonly disagg: DisaggContext;
  /** KV sharing: the other simulators this engine fetches prefixes from (none: off). */
  readonly peerKv: RemotePeerKv;
}
