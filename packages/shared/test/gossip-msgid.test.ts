/**
 * The gossip message id (gossip/libp2p.ts shortMsgId): 16 bytes — the last 8
 * of the author's Ed25519 key, then the seqno big-endian — so IHAVE, IWANT
 * and IDONTWANT carry 16 bytes per message, not gossipsub's 44; distinct
 * authors or seqnos give distinct ids.
 */
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { Message } from '@libp2p/gossipsub';
import { describe, expect, it } from 'vitest';
import { shortMsgId } from '../src/gossip/libp2p.ts';

async function signed(seq: bigint): Promise<Message & { type: 'signed' }> {
  const key = await generateKeyPair('Ed25519');
  // An Ed25519 peer id holds its public key (all shortMsgId reads of it).
  const from = { type: 'Ed25519', publicKey: key.publicKey } as unknown as Extract<Message, { type: 'signed' }>['from'];
  return {
    type: 'signed',
    from,
    key: key.publicKey,
    sequenceNumber: seq,
    topic: 't',
    data: new Uint8Array(),
    signature: new Uint8Array(64),
  };
}

describe('the gossip message id', () => {
  it('is the key tail and the seqno, 16 bytes, distinct per author and per seqno', async () => {
    const a = await signed(0x0102030405060708n);
    const id = shortMsgId(a);
    expect(id.byteLength).toBe(16);
    expect([...id.subarray(0, 8)]).toEqual([...a.key.raw.subarray(24)]);
    expect([...id.subarray(8)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const b = await signed(0x0102030405060708n);
    expect(Buffer.from(shortMsgId(b))).not.toEqual(Buffer.from(id));
    expect(Buffer.from(shortMsgId({ ...a, sequenceNumber: 0x0102030405060709n }))).not.toEqual(Buffer.from(id));
  });
});
