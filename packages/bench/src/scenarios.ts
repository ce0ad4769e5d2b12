/**
 * Benchmark workloads (docs/DESIGN-RATIONALE.md §6). Each scenario turns (seed, rate,
 * duration) into a deterministic, open-loop plan of requests on a simulated
 * clock: `at` is simulated ms; the runner divides by the fleet's speed.
 * Multi-turn sessions carry their history forward with deterministic
 * assistant replies, so turn k+1's prompt extends turn k's exactly, as a real
 * chat client's would.
 */
import type { Schema } from '@warmpath/shared/runtime';
import { DEFAULT_MODEL, PROFILES } from '@warmpath/sim';
import type { PlannedRequest } from './loadgen.ts';
import { arrivals, chat, session, uniform, type Message } from './plan-kit.ts';
import { longdocPlan, mixedPlan } from './pd-scenarios.ts';
import { tenantsPlan } from './tenants-plan.ts';
import { rng, textOf, zipf } from './text.ts';
import { DEFAULT_TRACE, readTrace, traceMessages, TRACE_BLOCK_TOKENS, TRACE_MAX_CONTEXT_TOKENS } from './trace-file.ts';

export {
  DEFAULT_TRACE,
  readTrace,
  traceMessages,
  TRACE_BLOCK_TOKENS,
  TRACE_MAX_CONTEXT_TOKENS,
  type TraceRecord,
} from './trace-file.ts';

/** Requests name the simulator's served base model. */
export { DEFAULT_MODEL };

export interface ScenarioParams {
  seed: number;
  /** Requests (or sessions, per scenario) per simulated second. */
  rate: number;
  /** Simulated seconds of arrivals. */
  duration: number;
  model: string;
  /** Trace file, for `trace`. */
  trace?: string | undefined;
}

export interface FleetShape {
  replicas: number;
  profile: string;
  adapters?: string[];
  maxLoras?: number;
  /** Host-memory KV tier of each replica, as a multiple of its GPU KV (vLLM's CPU offloading); 0 or absent = off. */
  cpuKvRatio?: number;
  /** KV sharing: 'peer', an engine fetches a prefix another replica holds over the network; absent = off. */
  kvSharing?: 'off' | 'peer';
  /**
   * The engines' scheduling policy (vLLM's --scheduling-policy); 'priority':
   * the agents pass each request's band as the engine's `priority` (their
   * --engine-priority), as docs/TENANTS.md tells operators to deploy bands;
   * absent = fcfs.
   */
  schedulingPolicy?: 'fcfs' | 'priority';
}

/** The `cpuKvRatio` setting, as `warmpath bench` and `warmpath demo` both take it. */
export const CPU_KV_RATIO_SETTING = {
  cpuKvRatio: {
    type: 'number',
    default: 0,
    min: 0,
    max: 1000,
    doc: "host-memory KV tier of each replica, × its GPU KV (vLLM's CPU offloading; 0 = off)",
  },
} as const satisfies Schema;

/** The host tier in tokens for a fleet shape: cpuKvRatio × the profile's GPU KV (0 = off). */
export function cpuKvTokensOf(shape: FleetShape): number {
  const p = (PROFILES as Record<string, { numGpuBlocks: number; blockSize: number }>)[shape.profile];
  return p === undefined ? 0 : Math.round((shape.cpuKvRatio ?? 0) * p.numGpuBlocks * p.blockSize);
}

export interface Scenario {
  name: string;
  summary: string;
  fleet: FleetShape;
  defaults: { rate: number; duration: number };
  build(p: ScenarioParams): PlannedRequest[];
}

/**
 * seed: 10 replicas; 4 system-prompt templates of 2k tokens (one takes 70%
 * of traffic); users hold conversations (1–6 turns) of unique 500-token
 * turns; Poisson session arrivals; the last third of the run is a 2× spike.
 */
const seedScenario: Scenario = {
  name: 'seed',
  summary:
    '10 replicas, shared 2k-token system prompts (one dominant), unique 500-token turns, Poisson arrivals, then a 2x spike',
  fleet: { replicas: 10, profile: 'h100x4-llama3-70b' },
  defaults: { rate: 100, duration: 50 },
  build(p) {
    const r = rng(p.seed);
    const templates = [0, 1, 2, 3].map((i) => textOf(`seed/system-${i}`, 2000));
    const pickTemplate = () => (r() < 0.7 ? 0 : 1 + Math.floor(r() * 3));
    const spikeAt = (p.duration * 1000 * 2) / 3;
    // Sessions arrive at rate / 3.5 (mean turns) so requests arrive at ≈ rate, doubled in the spike.
    return arrivals(
      p,
      r,
      (at) => ((at >= spikeAt ? 2 : 1) * p.rate) / 3.5,
      (at, s) => {
        const phase = at >= spikeAt ? 'spike' : 'steady';
        const turns = 1 + Math.floor(r() * 6);
        return session(
          p,
          `seed/s${p.seed}/${s}`,
          at,
          templates[pickTemplate()],
          turns,
          { user: () => 500, reply: uniform(r, 20, 60), gapMs: uniform(r, 3000, 8000) },
          () => phase,
        );
      },
    );
  },
};

/** chat: long multi-turn sessions whose history grows turn by turn. */
const chatScenario: Scenario = {
  name: 'chat',
  summary: 'multi-turn sessions (4-12 turns) with growing history behind one short system prompt',
  fleet: { replicas: 8, profile: 'h100-llama3-8b' },
  defaults: { rate: 20, duration: 60 },
  build(p) {
    const r = rng(p.seed ^ 0xc4a7);
    const system = textOf('chat/system', 400);
    return arrivals(
      p,
      r,
      () => p.rate,
      (at, s) => {
        const turns = 4 + Math.floor(r() * 9);
        return session(
          p,
          `chat/s${p.seed}/${s}`,
          at,
          system,
          turns,
          { user: uniform(r, 100, 400), reply: uniform(r, 100, 300), gapMs: uniform(r, 2000, 6000) },
          (t) => `turn${Math.min(t, 9)}`,
        );
      },
    );
  },
};

/**
 * fanout: agent sessions. Each step fans out 4–16 parallel calls that share
 * the conversation prefix and a routing key (prompt_cache_key = session id);
 * the next step's prefix grows by the step's results.
 */
const fanoutScenario: Scenario = {
  name: 'fanout',
  summary: 'agent sessions fanning out 4-16 parallel calls sharing a routing key and the conversation prefix',
  fleet: { replicas: 8, profile: 'h100-llama3-8b' },
  defaults: { rate: 5, duration: 60 },
  build(p) {
    const r = rng(p.seed ^ 0xfa17);
    const system = textOf('fanout/system', 1000);
    return arrivals(
      p,
      r,
      () => p.rate,
      (at, s) => {
        const out: PlannedRequest[] = [];
        const id = `fanout/s${p.seed}/${s}`;
        const history: Message[] = [
          { role: 'system', content: system },
          { role: 'user', content: textOf(`${id}/task`, 2000 + Math.round(r() * 2000)) },
        ];
        const steps = 2 + Math.floor(r() * 3);
        let t = at;
        for (let step = 0; step < steps && t < p.duration * 1000; step++) {
          const width = 4 + Math.floor(r() * 13);
          for (let k = 0; k < width; k++) {
            const msgs: Message[] = [...history, { role: 'user', content: textOf(`${id}/st${step}/call${k}`, 60) }];
            out.push(chat(p, t + k * 5, msgs, 80, `step${step}`, { prompt_cache_key: id }, id));
          }
          history.push({ role: 'assistant', content: textOf(`${id}/st${step}/results`, 40 * width) });
          t += 4000 + r() * 4000;
        }
        return out;
      },
    );
  },
};

export const LORA_ADAPTERS = Array.from({ length: 32 }, (_, i) => `lora-${String(i).padStart(2, '0')}`);

/** lora: dozens of adapters with Zipf popularity on replicas with 4 GPU slots. */
const loraScenario: Scenario = {
  name: 'lora',
  summary: '32 LoRA adapters, Zipf popularity, max_loras 4, short prompts',
  fleet: { replicas: 8, profile: 'h100-llama3-8b', adapters: LORA_ADAPTERS, maxLoras: 4 },
  defaults: { rate: 20, duration: 60 },
  build(p) {
    const r = rng(p.seed ^ 0x10a);
    const pick = zipf(r, LORA_ADAPTERS.length, 1.0);
    return arrivals(
      p,
      r,
      () => p.rate,
      (at, i) => {
        const adapter = LORA_ADAPTERS[pick()]!;
        const msgs: Message[] = [
          { role: 'system', content: textOf(`lora/system/${adapter}`, 300) },
          { role: 'user', content: textOf(`lora/${p.seed}/${i}`, 200 + Math.round(r() * 300)) },
        ];
        return {
          at,
          tag: adapter,
          body: { model: adapter, messages: msgs, max_tokens: 64 + Math.round(r() * 128), ignore_eos: true },
        };
      },
    );
  },
};

/** pianos: rare huge inputs and outputs among short chats. */
const pianosScenario: Scenario = {
  name: 'pianos',
  summary: 'short chats with rare huge requests (2%: 24k-token inputs, 1.5k-token outputs)',
  fleet: { replicas: 8, profile: 'h100-llama3-8b' },
  defaults: { rate: 20, duration: 60 },
  build(p) {
    const r = rng(p.seed ^ 0x91a0);
    const system = textOf('pianos/system', 300);
    return arrivals(
      p,
      r,
      () => p.rate,
      (at, i) => {
        const piano = r() < 0.02;
        const msgs: Message[] = [
          { role: 'system', content: system },
          { role: 'user', content: textOf(`pianos/${p.seed}/${i}`, piano ? 24_000 : 100 + Math.round(r() * 400)) },
        ];
        return chat(p, at, msgs, piano ? 1500 : 50 + Math.round(r() * 150), piano ? 'piano' : 'short');
      },
    );
  },
};

/**
 * longctx: long prompts (8–32k tokens) with little reuse, as in document
 * question answering and agents with large contexts: a session's first turn is
 * either one of 8 shared documents (Zipf, 30% of sessions) or a context of
 * its own (70%), plus a question; 0–2 follow-up turns resend the history.
 * Most prefill is unique, so placement is mostly about load and queueing,
 * and the few reusable prefixes are expensive to miss.
 */
const longctxScenario: Scenario = {
  name: 'longctx',
  summary: 'long prompts (8-32k tokens), low reuse: shared documents (30%) or unique contexts, 1-3 turns',
  fleet: { replicas: 10, profile: 'h100-llama3-8b' },
  // 14 req/s is where round-robin starts refusing; warmpath was not tuned on this scenario.
  defaults: { rate: 14, duration: 60 },
  build(p) {
    const r = rng(p.seed ^ 0x1c7c);
    const docs = Array.from({ length: 8 }, (_, i) => textOf(`longctx/doc-${i}`, 8_000 + ((i * 2_000) % 16_001)));
    const pickDoc = zipf(r, docs.length, 1.0);
    // Sessions arrive at rate / 2 (mean turns) so requests arrive at ≈ rate.
    return arrivals(
      p,
      r,
      () => p.rate / 2,
      (at, s) => {
        const id = `longctx/s${p.seed}/${s}`;
        const context = r() < 0.3 ? docs[pickDoc()]! : textOf(`${id}/context`, Math.round(8_000 + r() * 24_000));
        const turns = 1 + Math.floor(r() * 3);
        return session(
          p,
          id,
          at,
          context,
          turns,
          { user: uniform(r, 50, 200), reply: uniform(r, 100, 400), gapMs: uniform(r, 5000, 15000) },
          (t) => (t === 0 ? 'first' : 'follow-up'),
        );
      },
    );
  },
};

/**
 * trace: Mooncake-format JSONL replay. `rate` is a time-compression factor
 * (2 = twice as fast as recorded); `duration` cuts the trace (simulated s;
 * 0, the default, is one whole pass). A longer duration replays the trace
 * pass after pass (each starts one mean inter-arrival gap after the last
 * one's final request), every block id of pass k shifted past those of pass
 * k − 1: each pass has the trace's own sharing and reuses no other pass's
 * prefixes (new users, not the same ones again). So an hour of the
 * 17-minute trace at ten times its rate loads 100 replicas as one pass
 * loads 10.
 */
const traceScenario: Scenario = {
  name: 'trace',
  summary:
    'replay of a Mooncake-format trace (timestamp, input_length, output_length, hash_ids of 512-token blocks), repeated with fresh block ids to fill a longer duration',
  fleet: { replicas: 10, profile: 'h100-llama3-8b' },
  defaults: { rate: 1, duration: 0 },
  build(p) {
    const recs = readTrace(p.trace ?? DEFAULT_TRACE);
    const out: PlannedRequest[] = [];
    if (recs.length === 0) return out;
    const last = recs[recs.length - 1]!.timestamp;
    const span = Math.max(1, last + last / Math.max(1, recs.length - 1));
    let ids = 0;
    for (const rec of recs) for (const id of rec.hash_ids) ids = Math.max(ids, id + 1);
    const end = p.duration > 0 ? p.duration * 1000 : span / p.rate;
    for (let pass = 0; ; pass++) {
      for (const rec of recs) {
        const at = (rec.timestamp + pass * span) / p.rate;
        if (at >= end) return out;
        const output = Math.max(1, rec.output_length);
        // Leave room for the output and the chat template's few tokens.
        const input = Math.min(rec.input_length, TRACE_MAX_CONTEXT_TOKENS - output - 64);
        const hashIds = rec.hash_ids.slice(0, Math.ceil(input / TRACE_BLOCK_TOKENS)).map((id) => id + pass * ids);
        out.push(chat(p, at, traceMessages({ ...rec, input_length: input, hash_ids: hashIds }), output, 'trace'));
      }
      if (((pass + 1) * span) / p.rate >= end) return out;
    }
  },
};

/** tenants: four tenants on one fleet, one flooding at five times its share (tenants-plan.ts). */
const tenantsScenario: Scenario = {
  name: 'tenants',
  summary:
    'two steady interactive chat tenants, one flooding at 5x its share (standard band, token limit), one batch tenant',
  // Engines schedule by the bands (docs/TENANTS.md, "Priority bands").
  fleet: { replicas: 4, profile: 'h100-llama3-8b', schedulingPolicy: 'priority' },
  // 16: the fleet carries every tenant at its share, and not the flood's excess.
  defaults: { rate: 16, duration: 180 },
  build: (p) => tenantsPlan(p),
};

/** longdoc: long prompts and long outputs, the case a prefill/decode split is built for (pd-scenarios.ts). */
const longdocScenario: Scenario = {
  name: 'longdoc',
  summary: 'long prompts (6-16k tokens) and long outputs (300-1200 tokens): shared documents (30%) or unique contexts',
  fleet: { replicas: 10, profile: 'h100-llama3-8b' },
  defaults: { rate: 8, duration: 60 },
  build: longdocPlan,
};

/** mixed: short chats among long documents, the case for deciding the split per request (pd-scenarios.ts). */
const mixedScenario: Scenario = {
  name: 'mixed',
  summary: 'short chats (85%: 0.4-0.7k-token prompts) among long documents (15%: 8-24k tokens)',
  fleet: { replicas: 10, profile: 'h100-llama3-8b' },
  defaults: { rate: 30, duration: 60 },
  build: mixedPlan,
};

export const SCENARIOS: Readonly<Record<string, Scenario>> = {
  seed: seedScenario,
  chat: chatScenario,
  fanout: fanoutScenario,
  lora: loraScenario,
  pianos: pianosScenario,
  trace: traceScenario,
  longctx: longctxScenario,
  tenants: tenantsScenario,
  longdoc: longdocScenario,
  mixed: mixedScenario,
};
