/**
 * The agent's part in prefill/decode disaggregation (docs/DISAGGREGATION.md):
 * which role its engine plays, where a prefill engine serves its KV
 * bootstrap, and whether a request is a decode leg whose prompt KV comes by
 * transfer (then it joins no prefill queue here, and the cache model records
 * its chain as the engine's cache will hold it).
 *
 * Role, in order: --role when not `auto`; SGLang's /get_server_info
 * `disaggregation_mode` (`prefill`, `decode`, `null`); the simulator's
 * /sim/v1/state `role`; else `both`. vLLM exposes its kv_role on no API, so
 * a vLLM agent of a disaggregated fleet takes --role.
 */
import type { EngineKind, ReplicaRole } from '@warmpath/shared/wire';
import { REPLICA_ROLES } from '@warmpath/shared/wire';
import { getJson, isRecord } from './engines/types.ts';
import type { AdapterContext } from './engines/types.ts';

/** SGLang's default --disaggregation-bootstrap-port. */
export const SGLANG_BOOTSTRAP_PORT = 8998;

const asRole = (x: unknown): ReplicaRole | undefined =>
  typeof x === 'string' && (REPLICA_ROLES as readonly string[]).includes(x) ? (x as ReplicaRole) : undefined;

/** The engine's own role, or undefined when it does not say (or cannot be reached in time). */
export async function engineRole(
  engine: EngineKind,
  ctx: AdapterContext,
  signal: AbortSignal,
): Promise<ReplicaRole | undefined> {
  try {
    if (engine === 'sglang') {
      const info = await getJson(ctx, '/get_server_info', signal);
      return isRecord(info) ? asRole(info.disaggregation_mode) : undefined;
    }
    if (engine === 'vllm') {
      const state = await getJson(ctx, '/sim/v1/state', signal);
      return isRecord(state) ? asRole(state.role) : undefined;
    }
  } catch {
    // No such API here: the role is not the engine's to say.
  }
  return undefined;
}

/** --role, else the engine's, else both. */
export async function resolveRole(
  configured: string,
  engine: EngineKind,
  ctx: AdapterContext,
  timeoutMs: number,
): Promise<ReplicaRole> {
  const fixed = asRole(configured);
  if (fixed !== undefined) return fixed;
  return (await engineRole(engine, ctx, AbortSignal.timeout(timeoutMs))) ?? 'both';
}

/** The KV bootstrap address a prefill replica publishes: --kv-bootstrap, else the engine's host and SGLang's default port (vLLM: its own port). */
export function kvBootstrapOf(configured: string, engine: EngineKind, engineUrl: string): string {
  if (configured !== '') return configured;
  const u = new URL(engineUrl);
  const port = engine === 'sglang' ? SGLANG_BOOTSTRAP_PORT : Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  return `${u.hostname}:${port}`;
}

/**
 * Is this request a decode leg whose prompt KV arrives by transfer? vLLM:
 * kv_transfer_params with do_remote_prefill; SGLang: bootstrap_room on a
 * decode replica (a `both` replica ignores it, as SGLang's null mode does).
 */
export function receivesKv(body: Readonly<Record<string, unknown>>, role: ReplicaRole): boolean {
  if (role === 'prefill') return false;
  const p = body.kv_transfer_params;
  if (isRecord(p)) return p.do_remote_prefill === true && typeof p.remote_host === 'string';
  return role === 'decode' && typeof body.bootstrap_room === 'number';
}
