/**
 * The simulator's settings: one schema with each default and its unit. The
 * CLI fills it from file, environment and flags (`warmpath sim --help`);
 * startSimServer takes the same defaults for options a caller leaves out.
 */
import { DEFAULT_MAX_BODY_BYTES, LOG_LEVELS } from '@warmpath/shared/runtime';
import type { Schema } from '@warmpath/shared/runtime';
import { PROFILE_NAMES } from '../model/profiles.ts';
import { KV_FAILURE_POLICIES, ROLES } from './disagg.ts';

export const DEFAULT_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';

export const simSchema = {
  port: {
    type: 'number',
    default: 8000,
    min: 0,
    max: 65535,
    integer: true,
    essential: true,
    doc: 'TCP port; 0 = chosen by the OS',
  },
  host: { type: 'string', default: '127.0.0.1', essential: true, doc: 'address to listen on' },
  profile: {
    type: 'string',
    default: 'h100-llama3-8b',
    choices: PROFILE_NAMES,
    essential: true,
    doc: 'engine profile (KV size, batch limits, step times)',
  },
  model: { type: 'string', default: DEFAULT_MODEL, essential: true, doc: 'served base model id' },
  adapters: {
    type: 'list',
    default: [],
    essential: true,
    doc: 'LoRA adapters registered at start (comma-separated); turns LoRA on',
  },
  enableLora: { type: 'boolean', default: false, doc: 'LoRA on without static adapters (load them at runtime)' },
  maxLoras: {
    type: 'number',
    default: 1,
    min: 1,
    max: 1024,
    integer: true,
    essential: true,
    doc: 'GPU LoRA slots (vLLM --max-loras)',
  },
  maxCpuLoras: {
    type: 'number',
    default: 4,
    min: 1,
    max: 4096,
    integer: true,
    doc: 'adapters kept in CPU memory; loads from there are fast',
  },
  speed: {
    type: 'number',
    default: 1,
    min: 0.001,
    max: 10000,
    essential: true,
    doc: 'simulated time runs this many times faster than wall time',
  },
  fault: { type: 'list', default: [], essential: true, doc: 'fault to inject, repeatable (see below)' },
  charsPerToken: { type: 'number', default: 4, min: 0.5, max: 64, doc: 'characters per token of the token estimate' },
  maxTokensDefault: {
    type: 'number',
    default: 16,
    min: 1,
    integer: true,
    doc: 'output tokens when a request sets no max_tokens',
  },
  bodyLimitBytes: {
    type: 'number',
    default: DEFAULT_MAX_BODY_BYTES,
    min: 1024,
    integer: true,
    doc: 'largest request body, bytes (16 MiB)',
  },
  enablePrefixCaching: {
    type: 'boolean',
    default: true,
    doc: 'prefix caching (--no-enable-prefix-caching to turn off)',
  },
  cpuKvTokens: {
    type: 'number',
    default: 0,
    min: 0,
    integer: true,
    doc: "host-memory KV tier for GPU-evicted blocks, tokens (vLLM's CPU offloading; 0 = the profile's, off)",
  },
  kvPeers: {
    type: 'list',
    default: [],
    doc: "KV sharing: the other simulators' base URLs (comma-separated), whose prefixes this one fetches over the network",
  },
  schedulingPolicy: {
    type: 'string',
    default: 'fcfs',
    choices: ['fcfs', 'priority'],
    doc: "vLLM's --scheduling-policy: fcfs, or priority (the request's `priority`, lower first; fcfs refuses a non-zero one)",
  },
  allowRuntimeLora: { type: 'boolean', default: true, doc: 'serve /v1/load_lora_adapter and /v1/unload_lora_adapter' },
  seed: { type: 'number', default: 1, integer: true, doc: 'seed of the error-rate and KV-transfer faults' },
  role: {
    type: 'string',
    default: 'both',
    choices: ROLES,
    essential: true,
    doc: 'disaggregation role: prefill (KV producer), decode (KV consumer) or both (see README, "Disaggregation")',
  },
  kvLinkGbps: {
    type: 'number',
    default: 200,
    min: 0.001,
    doc: 'KV link bandwidth between prefill and decode workers, Gbit/s per GPU',
  },
  kvLinkLatencyMs: { type: 'number', default: 1, min: 0, doc: 'fixed cost of one KV transfer, ms' },
  kvTimeoutMs: {
    type: 'number',
    default: 30_000,
    min: 1,
    doc: 'how long a decode worker waits for a KV transfer (SGLang: for its room) before it gives up, simulated ms',
  },
  kvLoadFailurePolicy: {
    type: 'string',
    default: 'recompute',
    choices: KV_FAILURE_POLICIES,
    doc: "when a transfer fails: recompute the prompt locally, or fail the request (vLLM's kv_load_failure_policy)",
  },
  logLevel: {
    type: 'string',
    default: 'info',
    choices: LOG_LEVELS,
    essential: true,
    doc: 'least severe level logged (JSON lines on stderr)',
  },
} as const satisfies Schema;
