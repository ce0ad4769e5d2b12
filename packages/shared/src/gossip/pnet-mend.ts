/**
 * Mends the swarm-key cipher's memory handling (xsalsa20, the WebAssembly
 * stream cipher @libp2p/pnet encrypts every connection with) once per
 * process, before the first node starts.
 *
 * The fault: every cipher in the process shares one WebAssembly memory
 * (10 pages, at most 1,000: 64 MiB), and each keeps its own view of it.
 * When one cipher grows the memory (a read larger than the free space), the
 * others' views go stale (a detached buffer, length 0), and a stale cipher
 * takes length 0 for "too small" and grows the memory again by all it
 * holds. So after one growth, every update of another connection grows it
 * once more, and a router with a few hundred connections reaches the limit
 * within a few hundred messages: `WebAssembly.Memory.grow(): Maximum memory
 * size exceeded`, the process down (test/pnet-mend.test.ts reproduces it;
 * docs/GOSSIP.md, "Fleet size").
 * The mend: before an update, a cipher whose view is stale reads the memory
 * afresh (its own `realloc(0)` grows by nothing and renews the view); it then
 * grows only when the memory really is too small.
 * Invariant: every cipher's bytes are those of the unmended cipher; only
 * the growth changes. Trade-off: it reaches into the cipher's prototype
 * (the package's one WASM class, found through an instance), so a new
 * xsalsa20 with other internals would fail the check below, loudly at
 * start, rather than silently.
 */
// @ts-expect-error xsalsa20 ships no types (the shape used is `XSalsa20` below)
import xsalsa20Module from 'xsalsa20';

type Cipher = { _memory: Uint8Array; realloc(size: number): void; update(i: Uint8Array, o: Uint8Array): void };
type XSalsa20 = (nonce: Uint8Array, key: Uint8Array) => { _xor: Cipher };

let mended = false;

/** Mends xsalsa20, the module @libp2p/pnet loads; a second call does nothing. Throws if its internals differ. */
export function mendSwarmCipher(): void {
  if (mended) return;
  // The same module pnet imports (one version in the lockfile; one copy in the npm bundle).
  const xsalsa20 = xsalsa20Module as XSalsa20;
  const proto = Object.getPrototypeOf(xsalsa20(new Uint8Array(24), new Uint8Array(32))._xor) as Cipher;
  if (typeof proto.update !== 'function' || typeof proto.realloc !== 'function')
    throw new Error('xsalsa20: not the cipher pnet-mend.ts knows (update, realloc)');
  const update = proto.update;
  proto.update = function (this: Cipher, input: Uint8Array, output: Uint8Array): void {
    if (this._memory.length === 0) this.realloc(0);
    update.call(this, input, output);
  };
  mended = true;
}
