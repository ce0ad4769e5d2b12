/**
 * A request's priority band (x-warmpath-priority, set by a router with a
 * tenants file) as the engine's own scheduler takes it, when the engine runs
 * one: vLLM's `priority` under `--scheduling-policy priority` (lower values
 * first) and SGLang's under `--enable-priority-scheduling` (higher values
 * first, its default order). Off by default (`enginePriority`): vLLM
 * refuses a non-zero priority when it schedules first come, first served.
 *
 * Steps: band rank → the engine's value → spliced into the raw body after
 * its opening brace (re-serialized only when the client sent a `priority`
 * of its own, which the band replaces).
 */
import { PRIORITY_BANDS, type EngineKind } from '@warmpath/shared/wire';

/** The `priority` value per band rank, for the engines that schedule by it. */
export const ENGINE_PRIORITY: Partial<Record<EngineKind, readonly number[]>> = {
  vllm: [0, 1, 2],
  sglang: [2, 1, 0],
};

/** The band's rank from the header, or undefined. */
export function bandOf(header: string | string[] | undefined): number | undefined {
  if (typeof header !== 'string') return undefined;
  const i = (PRIORITY_BANDS as readonly string[]).indexOf(header);
  return i < 0 ? undefined : i;
}

/** The body with the engine's `priority` for band rank `band`; undefined when the engine takes none. */
export function withPriority(
  engine: EngineKind,
  band: number,
  parsed: Record<string, unknown>,
  raw: Buffer,
): { body: Buffer; parsed: Record<string, unknown> } | undefined {
  const value = ENGINE_PRIORITY[engine]?.[band];
  if (value === undefined) return undefined;
  const next = { ...parsed, priority: value };
  if ('priority' in parsed) return { body: Buffer.from(JSON.stringify(next)), parsed: next };
  const open = raw.indexOf(0x7b); // '{'
  if (open < 0) return undefined;
  const empty = /^\s*\}/.test(raw.subarray(open + 1, open + 64).toString('latin1'));
  const insert = Buffer.from(`"priority":${value}${empty ? '' : ','}`);
  return { body: Buffer.concat([raw.subarray(0, open + 1), insert, raw.subarray(open + 1)]), parsed: next };
}
