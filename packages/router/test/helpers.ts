/** Test fixtures: replica states, requests, views. */
import { describeRequest, encodeState, type ReplicaState } from '@warmpath/shared/wire';
import { waitFor } from '@warmpath/testkit';
import { routerConfig } from '../src/config.ts';
import { FleetView } from '../src/fleet/view.ts';
import { affinityKey } from '../src/placement/eligible.ts';
import { LocalState } from '../src/core/local.ts';
import { warmpathOptions } from '../src/placement/registry.ts';
import type { PlacementRequest, WarmpathOptions } from '../src/placement/types.ts';

export type StateOverrides = Partial<Omit<ReplicaState, 'capacity' | 'load' | 'digest'>> & {
  capacity?: Partial<ReplicaState['capacity']>;
  load?: Partial<ReplicaState['load']>;
  digest?: Partial<ReplicaState['digest']>;
};

export function makeState(id: string, o: StateOverrides = {}): ReplicaState {
  const { capacity, load, digest, ...rest } = o;
  const added = digest?.added ?? new BigUint64Array(0);
  return {
    v: 1,
    fleet: 'test',
    replica: id,
    boot: `${id}-boot`,
    bootAt: 1,
    seq: 1,
    sentAt: Date.now(),
    url: `http://127.0.0.1:1/${id}`,
    admin: `http://127.0.0.1:1/${id}-admin`,
    engine: 'vllm',
    models: ['m'],
    adapters: [],
    hotAdapters: [],
    endpoints: ['chat', 'completion', 'responses'],
    status: 'ready',
    chunkChars: 256,
    ...rest,
    capacity: { kvTokens: 100_000, adapterSlots: 0, weight: 1, maxRunning: 64, ...capacity },
    load: { running: 0, waiting: 0, kvUsedTokens: 0, inflight: 0, inflightTokens: 0, prefillTokens: 0, ...load },
    digest: { from: -1, removed: new BigUint64Array(0), size: digest?.size ?? added.length, ...digest, added },
  };
}

export const encode = encodeState;

/** The router's validated default config: what FleetView and LocalState take in tests. */
export const CONFIG = routerConfig();
/** Warmpath's options as the router builds them: from its config defaults (chunkChars 256, boundFloorTokens…). */
export function options(): WarmpathOptions {
  return warmpathOptions(CONFIG);
}

export function makeView(
  states: ReplicaState[] = [],
  opts: Partial<ConstructorParameters<typeof FleetView>[0]> = {},
): FleetView {
  const view = new FleetView({
    fleet: 'test',
    chunkChars: 256,
    stateTtlMs: CONFIG.stateTtlMs,
    forgetAfterMs: CONFIG.forgetAfterMs,
    ...opts,
  });
  for (const s of states) view.apply(s);
  return view;
}

export const SYSTEM = 'You are a careful assistant. '.repeat(120); // ≈ 3.5k chars: 13 chunks

export function chat(user: string, extra: Record<string, unknown> = {}, system = SYSTEM): Record<string, unknown> {
  return {
    model: 'm',
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: user },
    ],
    max_tokens: 16,
    ...extra,
  };
}

export function preq(
  body: Record<string, unknown>,
  o: {
    exclude?: Set<string>;
    now?: number;
    keyHeader?: string;
    sessionHeader?: string;
    kind?: 'chat' | 'completion' | 'embedding' | 'responses';
    view?: FleetView;
  } = {},
): PlacementRequest {
  const kind = o.kind ?? 'chat';
  const info = describeRequest(body, kind, {
    keyHeader: o.keyHeader,
    sessionHeader: o.sessionHeader,
    resolveModel: o.view ? (n) => o.view!.resolveModel(n) : (n) => ({ model: n, adapter: '' }),
  });
  return { info, endpoint: kind, key: affinityKey(info, 8), body, exclude: o.exclude, now: o.now ?? Date.now() };
}

export function local(): LocalState {
  return new LocalState(CONFIG);
}

/** Digest of a request's chain: the first n hashes of its chain. */
export function chainOf(body: Record<string, unknown>, n = Infinity): BigUint64Array {
  const info = describeRequest(body, 'chat');
  return info.hashes.slice(0, Math.min(n, info.hashes.length));
}

/**
 * Keeps a router hearing the fleet: applies `state(seq)` now and every
 * `everyMs` after, as an agent's periodic publish would. `settled` resolves
 * once the view has heard the fleet for a whole stateTtlMs, when an unknown
 * model is a 404 rather than a retryable 503 (`no_replica`).
 */
export function keepHearing(
  router: { view: { apply(s: ReplicaState): unknown; settled(now: number): boolean; now(): number } },
  state: (seq: number) => ReplicaState,
  everyMs = 100,
): { settled: Promise<void>; stop(): void } {
  let seq = 1;
  router.view.apply(state(seq++));
  const timer = setInterval(() => router.view.apply(state(seq++)), everyMs);
  timer.unref();
  const settled = waitFor(() => router.view.settled(router.view.now()), {
    timeoutMs: 15_000,
    intervalMs: 50,
    message: 'the router to have heard the fleet for stateTtlMs',
  }).then(() => undefined);
  return { settled, stop: () => clearInterval(timer) };
}
