/**
 * The hard limits of the wire protocol and the bounded readers decode
 * validates a msgpack map with: each reads one field, checks its type and
 * bound, and throws `Invalid` (caught by protocol.ts's decode, never past
 * it). Changing a limit is a protocol change.
 */
/** Hard limits applied on decode. Changing them is a protocol change. */
export const LIMITS = {
  messageBytes: 256 * 1024, // 256 KiB per state message
  snapshotBytes: 8 * 1024 * 1024, // 8 MiB per digest snapshot (1M hashes)
  stringChars: 256,
  urlChars: 2048,
  listItems: 1024,
  deltaHashes: 30_000, // per message, added + removed
  maxNumber: Number.MAX_SAFE_INTEGER,
} as const;

export class Invalid extends Error {}

export const isObj = (x: unknown): x is Record<string, unknown> => {
  if (x === null || typeof x !== 'object') return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
};

export function str(o: Record<string, unknown>, k: string, max: number = LIMITS.stringChars): string {
  const v = o[k];
  if (typeof v !== 'string' || v.length > max) throw new Invalid(`${k}: expected string of at most ${max} chars`);
  return v;
}
export function num(
  o: Record<string, unknown>,
  k: string,
  min = 0,
  max: number = LIMITS.maxNumber,
  int = false,
): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (int && !Number.isInteger(v)))
    throw new Invalid(`${k}: expected ${int ? 'integer' : 'number'} in [${min}, ${max}]`);
  return v;
}
export function strList(o: Record<string, unknown>, k: string): string[] {
  const v = o[k];
  if (!Array.isArray(v) || v.length > LIMITS.listItems)
    throw new Invalid(`${k}: expected list of at most ${LIMITS.listItems}`);
  for (const x of v)
    if (typeof x !== 'string' || x.length > LIMITS.stringChars)
      throw new Invalid(`${k}: items must be strings of at most ${LIMITS.stringChars} chars`);
  return v as string[];
}
export function oneOf<T extends string>(o: Record<string, unknown>, k: string, allowed: readonly T[]): T {
  const v = o[k];
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v))
    throw new Invalid(`${k}: expected one of ${allowed.join(', ')}`);
  return v as T;
}
export function sub(o: Record<string, unknown>, k: string): Record<string, unknown> {
  const v = o[k];
  if (!isObj(v)) throw new Invalid(`${k}: expected map`);
  return v;
}
export function bin(o: Record<string, unknown>, k: string): Uint8Array {
  const v = o[k];
  if (!(v instanceof Uint8Array) || v.byteLength % 8 !== 0) throw new Invalid(`${k}: expected binary of 8-byte hashes`);
  return v;
}
