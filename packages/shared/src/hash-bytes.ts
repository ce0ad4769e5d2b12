/**
 * Chain hashes on the wire: 8 bytes each, little-endian, back to back (the
 * digest's `added`, `removed`, `host` and `gpu`, and a snapshot's hashes).
 * O(hashes); unpacking copies, so the result never shares a pooled buffer.
 */

export function packHashes(hashes: ArrayLike<bigint>): Uint8Array {
  const out = new Uint8Array(hashes.length * 8);
  const view = new DataView(out.buffer);
  for (let i = 0; i < hashes.length; i++) view.setBigUint64(i * 8, hashes[i]!, true);
  return out;
}

/** Hashes travel little-endian; on a little-endian host (every one Node ships for but s390x) they are copied whole. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function unpackHashes(bytes: Uint8Array): BigUint64Array {
  const n = bytes.byteLength >>> 3;
  const out = new BigUint64Array(n);
  if (LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes.subarray(0, n * 8)); // one copy into a buffer of its own, never a pool's
    return out;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < n; i++) out[i] = view.getBigUint64(i * 8, true);
  return out;
}
