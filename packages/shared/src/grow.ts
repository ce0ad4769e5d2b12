/**
 * Typed arrays indexed by a small number that grows (a replica slot, a track
 * number): `holding(a, i)` is `a` when it has index i, else a copy at least
 * twice as long (zero-filled past the old end), so growth is amortized O(1).
 */
type Grows = Float64Array | Int32Array | Uint32Array | Uint8Array;

export function holding<T extends Grows>(a: T, i: number): T {
  if (i < a.length) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(i + 1, a.length * 2));
  b.set(a);
  return b;
}
