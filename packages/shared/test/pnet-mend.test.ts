/**
 * The swarm-key cipher's shared memory (gossip/pnet-mend.ts): after one
 * connection's large read grows it, other connections' updates no longer
 * grow it again each time (unmended, a few hundred small updates on four
 * interleaved ciphers exhaust the 64 MiB limit), and the bytes are those of
 * the same key and nonce enciphered in one go.
 */
// @ts-expect-error xsalsa20 ships no types
import xsalsa20Module from 'xsalsa20';
import { describe, expect, it } from 'vitest';
import { mendSwarmCipher } from '../src/gossip/pnet-mend.ts';

type Cipher = { update(input: Uint8Array): Uint8Array };
const xsalsa20 = xsalsa20Module as (nonce: Uint8Array, key: Uint8Array) => Cipher;
const key = new Uint8Array(32).fill(7);
const nonce = (i: number): Uint8Array => new Uint8Array(24).fill(i);

describe('the swarm-key cipher, mended', () => {
  it('keeps four interleaved ciphers within the memory limit after a growth, and their bytes right', () => {
    mendSwarmCipher();
    mendSwarmCipher(); // twice is once
    const ciphers = Array.from({ length: 4 }, (_, i) => xsalsa20(nonce(i), key));
    const sent: Uint8Array[][] = [[], [], [], []];
    const out: Uint8Array[][] = [[], [], [], []];
    const big = new Uint8Array(1 << 20).fill(3); // larger than the memory's first 640 KiB: it grows
    sent[0]!.push(big);
    out[0]!.push(ciphers[0]!.update(big));
    for (let n = 0; n < 2_000; n++) {
      const chunk = new Uint8Array(100 + (n % 37)).fill(n & 255);
      sent[n % 4]!.push(chunk);
      out[n % 4]!.push(ciphers[n % 4]!.update(chunk));
    }
    // Each stream again, whole, on a fresh cipher: the same bytes.
    for (let i = 0; i < 4; i++) {
      const whole = Buffer.concat(sent[i]!);
      expect(Buffer.from(xsalsa20(nonce(i), key).update(whole))).toEqual(Buffer.concat(out[i]!));
    }
  });
});
