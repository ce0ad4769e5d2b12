/**
 * One simulated request: its description (computed once per planned request
 * and shared by every policy's run: describing hashes the whole prompt), the
 * engine's view of its prompt, and its result as the client sees it.
 */
import { describeFor, type RouterConfig } from '@warmpath/router';
import { HEADERS, type RequestInfo } from '@warmpath/shared/wire';
import { promptIdentityOfBody } from '@warmpath/sim';
import { pendingResult, type PlannedRequest, type RequestResult } from '../loadgen.ts';
import { DEFAULT_MODEL } from '../scenarios.ts';

/** Per planned request, computed once and shared by every policy's run. */
export interface Prepared {
  info: RequestInfo;
  promptTokens: number;
  blockHashes: BigUint64Array;
}

export interface Rec {
  i: number;
  plan: PlannedRequest;
  prep: Prepared;
  /** Index of the router the client sends it to. */
  router: number;
  arrivedAt: number;
  lastTokenAt: number;
  result: RequestResult;
}

export type DescribeSettings = Pick<RouterConfig, 'chunkChars' | 'maxChunks' | 'charsPerToken' | 'defaultMaxTokens'>;

/** The settings a description depends on, as a key (runs with the same key share descriptions). */
export function describeSettingsKey(s: DescribeSettings): string {
  return `${s.chunkChars}/${s.maxChunks}/${s.charsPerToken}/${s.defaultMaxTokens}`;
}

/** Caches per describe settings (a run with other prefix settings describes again). */
const prepared = new Map<string, WeakMap<PlannedRequest, Prepared>>();

/** The router's description of `p` (adapters resolve to the scenario's base model, as the fleet's model list says). */
export function prepare(p: PlannedRequest, adapters: ReadonlySet<string>, settings: DescribeSettings): Prepared {
  const cacheKey = describeSettingsKey(settings);
  let cache = prepared.get(cacheKey);
  if (cache === undefined) prepared.set(cacheKey, (cache = new WeakMap()));
  let x = cache.get(p);
  if (x !== undefined) return x;
  const kind = p.path === '/v1/completions' ? 'completion' : 'chat';
  const resolveModel = (name: string) =>
    adapters.has(name) ? { model: DEFAULT_MODEL, adapter: name } : { model: name, adapter: '' };
  const body = contentRead(p.body);
  const info = describeFor(settings, body, kind, resolveModel, {
    key: p.headers?.[HEADERS.key],
    session: p.headers?.[HEADERS.session],
  });
  const id = promptIdentityOfBody(body, kind, {
    model: info.model,
    adapter: info.adapter,
    charsPerToken: 4,
    blockSize: 16,
  });
  x = { info, promptTokens: id.promptTokens, blockHashes: id.blockHashes };
  cache.set(p, x);
  return x;
}

/**
 * The body with each message's content read once: a trace prompt's text is
 * rendered each time it is read (scenarios.ts, traceMessages), and both
 * descriptions above read it.
 */
function contentRead(body: Record<string, unknown>): Record<string, unknown> {
  const messages = body['messages'];
  if (!Array.isArray(messages)) return body;
  // A spread reads each getter once and keeps its value.
  return { ...body, messages: messages.map((m: Record<string, unknown>) => ({ ...m })) };
}

export function newRec(i: number, plan: PlannedRequest, prep: Prepared, router: number, arrivedAt: number): Rec {
  return {
    i,
    plan,
    prep,
    router,
    arrivedAt,
    lastTokenAt: 0,
    result: pendingResult(plan, router, plan.at),
  };
}
