/**
 * The tenants file (`--tenants FILE`, YAML or JSON): parsed and validated
 * into a `TenantSet`, and watched so that an edit takes effect without a
 * restart.
 *
 * Steps: parse (JSON.parse when it is JSON, else the YAML parser) → check
 * every tenant, collecting every problem with its path (`tenants[2].keys`)
 * → build the name and key maps. Watching: fs.watch on the file's folder
 * (an editor's save often replaces the file, which a watch on the file
 * itself would lose) and a slow stat poll as a backstop (network and
 * container filesystems miss events); a change is read after a short
 * settle delay; a file that fails keeps the last good set in force and is
 * reported once per content.
 * Complexity: O(tenants + keys) per load.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { parse } from 'yaml';
import { PRIORITY_BANDS, type PriorityBand } from '@warmpath/shared/wire';
import type { BandReserve, Tenant, TenantLimits } from './types.ts';

/** The tenants in force: by name and by API key's digest (keyDigest). */
export interface TenantSet {
  readonly tenants: ReadonlyMap<string, Tenant>;
  readonly byKey: ReadonlyMap<string, Tenant>;
  /** The interactive reserve (`reserve:` in the file; tenants/split.ts); absent: none. */
  readonly reserve?: BandReserve;
}

/** Keys are looked up by their SHA-256: a lookup's timing then tells nothing about a key. */
export const keyDigest = (key: string): string => createHash('sha256').update(key).digest('base64');

/** A file that does not hold a valid tenants list; `problems` lists each one with its path. */
export class TenantFileError extends Error {
  readonly code = 'config_invalid';
  readonly problems: readonly string[];
  constructor(path: string, problems: readonly string[]) {
    const shown = problems.slice(0, 20);
    const more = problems.length > shown.length ? `\n  … and ${problems.length - shown.length} more` : '';
    super(`tenants file ${path}:\n  ${shown.join('\n  ')}${more}`);
    this.name = 'TenantFileError';
    this.problems = problems;
  }
}

/** A tenant's name is a metrics label and a log field: short, plain. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const LIMIT_KEYS = ['requestsPerMinute', 'tokensPerMinute', 'concurrent', 'burstSeconds'] as const;
const TENANT_KEYS = new Set(['name', 'keys', 'weight', 'priorities', 'limits', 'slo']);

const isRecord = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x);

/** Parses and validates a tenants document; throws TenantFileError naming every problem. */
export function parseTenants(text: string, path: string): TenantSet {
  let doc: unknown;
  try {
    // JSON.parse first: a YAML parser takes seconds over thousands of tenants (docs/TENANTS.md, "Memory").
    doc = /^\s*\{/.test(text) ? JSON.parse(text) : parse(text);
  } catch (err) {
    throw new TenantFileError(path, [`not YAML or JSON: ${(err as Error).message.split('\n')[0]}`]);
  }
  if (!isRecord(doc) || !Array.isArray(doc.tenants))
    throw new TenantFileError(path, ['expected an object with a `tenants` list']);
  const problems: string[] = [];
  const tenants = new Map<string, Tenant>();
  const byKey = new Map<string, Tenant>();
  doc.tenants.forEach((raw: unknown, i: number) => {
    const at = `tenants[${i}]`;
    const t = checkTenant(raw, at, problems);
    if (t === undefined) return;
    if (tenants.has(t.name)) return problems.push(`${at}.name: "${t.name}" is declared twice`);
    tenants.set(t.name, t);
    for (const key of t.keys) {
      const d = keyDigest(key);
      const owner = byKey.get(d);
      if (owner !== undefined) problems.push(`${at}.keys: a key of "${t.name}" is also a key of "${owner.name}"`);
      else byKey.set(d, t);
    }
  });
  const reserve = checkReserve(doc.reserve, problems);
  if (problems.length > 0) throw new TenantFileError(path, problems);
  return { tenants, byKey, ...(reserve !== undefined ? { reserve } : {}) };
}

/** Lent after this long without one side's requests, when the file does not say (docs/TENANTS.md, "Interactive reserve"). */
export const LEND_AFTER_S = 10;

function checkReserve(raw: unknown, problems: string[]): BandReserve | undefined {
  if (raw === undefined) return undefined;
  if (!isRecord(raw)) {
    problems.push('reserve: expected an object');
    return undefined;
  }
  for (const k of Object.keys(raw))
    if (k !== 'interactive' && k !== 'lendAfterSeconds') problems.push(`reserve.${k}: unknown field`);
  const share = raw.interactive;
  const lend = raw.lendAfterSeconds ?? LEND_AFTER_S;
  const before = problems.length;
  if (typeof share !== 'number' || !(share > 0 && share < 1))
    problems.push('reserve.interactive: expected a share of the replicas, > 0 and < 1');
  if (typeof lend !== 'number' || !(lend > 0 && lend <= 3600))
    problems.push('reserve.lendAfterSeconds: expected a number > 0 and ≤ 3600');
  return problems.length > before ? undefined : { interactive: share as number, lendAfterSeconds: lend as number };
}

function checkTenant(raw: unknown, at: string, problems: string[]): Tenant | undefined {
  if (!isRecord(raw)) {
    problems.push(`${at}: expected an object`);
    return undefined;
  }
  const before = problems.length;
  for (const k of Object.keys(raw)) if (!TENANT_KEYS.has(k)) problems.push(`${at}.${k}: unknown field`);
  const name = raw.name;
  if (typeof name !== 'string' || !NAME.test(name))
    problems.push(`${at}.name: expected 1–64 letters, digits, ".", "_" or "-"`);
  const keys = raw.keys;
  if (
    !Array.isArray(keys) ||
    keys.length === 0 ||
    !keys.every((k) => typeof k === 'string' && k.trim() === k && k !== '')
  )
    problems.push(`${at}.keys: expected a non-empty list of API keys (strings, no surrounding spaces)`);
  const weight = raw.weight ?? 1;
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0 || weight > 1e6)
    problems.push(`${at}.weight: expected a number > 0 and ≤ 1e6`);
  const priorities = raw.priorities ?? ['standard'];
  const bands = PRIORITY_BANDS as readonly unknown[];
  if (
    !Array.isArray(priorities) ||
    priorities.length === 0 ||
    !priorities.every((p) => bands.includes(p)) ||
    new Set(priorities).size !== priorities.length
  )
    problems.push(`${at}.priorities: expected a non-empty list of distinct bands (${PRIORITY_BANDS.join(', ')})`);
  const limits = checkLimits(raw.limits, `${at}.limits`, problems);
  const slo = checkSlo(raw.slo, `${at}.slo`, problems);
  if (problems.length > before) return undefined;
  return {
    name: name as string,
    keys: keys as string[],
    weight: weight as number,
    priorities: priorities as PriorityBand[],
    limits,
    ...(slo !== undefined ? { slo } : {}),
  };
}

function checkLimits(raw: unknown, at: string, problems: string[]): TenantLimits {
  if (raw === undefined) return {};
  if (!isRecord(raw)) {
    problems.push(`${at}: expected an object`);
    return {};
  }
  const limits: Record<string, number> = {};
  for (const k of Object.keys(raw))
    if (!(LIMIT_KEYS as readonly string[]).includes(k))
      problems.push(`${at}.${k}: unknown limit (${LIMIT_KEYS.join(', ')})`);
  for (const k of LIMIT_KEYS) {
    const v = raw[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) problems.push(`${at}.${k}: expected an integer ≥ 1`);
    else limits[k] = v;
  }
  return limits;
}

function checkSlo(raw: unknown, at: string, problems: string[]): Tenant['slo'] {
  if (raw === undefined) return undefined;
  if (!isRecord(raw)) {
    problems.push(`${at}: expected an object of bands`);
    return undefined;
  }
  const slo: Partial<Record<PriorityBand, { ttftMs: number }>> = {};
  for (const [band, v] of Object.entries(raw)) {
    const ttft = isRecord(v) ? v.ttftMs : undefined;
    if (!(PRIORITY_BANDS as readonly string[]).includes(band)) problems.push(`${at}.${band}: not a band`);
    else if (typeof ttft !== 'number' || !(ttft > 0)) problems.push(`${at}.${band}.ttftMs: expected a number > 0`);
    else slo[band as PriorityBand] = { ttftMs: ttft };
  }
  return slo;
}

/** Reads and validates the file; throws TenantFileError (or the read's error, with the path). */
export function loadTenantFile(path: string): TenantSet {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TenantFileError(path, [
      `cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    ]);
  }
  return parseTenants(text, path);
}

export interface WatchOptions {
  /** A valid new set is in force. */
  onReload: (set: TenantSet) => void;
  /** The file changed but is not valid: the last good set stays. Once per content. */
  onError: (err: TenantFileError) => void;
  /** Stat poll period, ms (the backstop to fs.watch). */
  pollMs?: number;
  /** Wait this long after a change before reading, ms (a save may come in several writes). */
  settleMs?: number;
}

/** Watches `path`; the set given is the one in force. Returns a stop function. */
export function watchTenantFile(path: string, o: WatchOptions): () => void {
  let last = fingerprint(path);
  let lastText = readText(path);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = (): void => {
    timer = undefined;
    const now = fingerprint(path);
    if (now === last) return;
    last = now;
    const text = readText(path);
    if (text === lastText) return;
    lastText = text;
    try {
      if (text === undefined) throw new TenantFileError(path, ['cannot read it (removed?)']);
      o.onReload(parseTenants(text, path));
    } catch (err) {
      o.onError(err instanceof TenantFileError ? err : new TenantFileError(path, [(err as Error).message]));
    }
  };
  const soon = (): void => {
    if (timer === undefined) timer = setTimeout(check, o.settleMs ?? 100);
  };
  let watcher: FSWatcher | undefined;
  try {
    const file = basename(path);
    watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
      if (name === null || name === file) soon();
    });
    watcher.on('error', () => {}); // the poll still runs
  } catch {
    watcher = undefined; // no watch on this filesystem: the poll alone
  }
  const poll = setInterval(soon, o.pollMs ?? 5_000);
  poll.unref();
  return () => {
    watcher?.close();
    clearInterval(poll);
    if (timer !== undefined) clearTimeout(timer);
  };
}

function fingerprint(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
