/**
 * The yamux patch (patches/@chainsafe__libp2p-yamux@*.patch; docs/GOSSIP.md,
 * the mesh settings' table): a stream grants the sender more window once
 * half of it is used, not after every data frame, so a router reading
 * hundreds of small batches a second does not answer each one with an
 * encrypted frame and a socket write of its own.
 */
import { StreamState, YamuxStream } from '@chainsafe/libp2p-yamux/stream';
import { describe, expect, it } from 'vitest';

// The yamux spec's frame types (frame.ts is not exported).
const DATA = 0;
const WINDOW_UPDATE = 1;
const WINDOW = 256 * 1024;

/** A frame header the stream sends (a window update carries no body). */
interface Sent {
  type: number;
  length: number;
}

function inbound(sent: Sent[]): YamuxStream {
  const log = Object.assign(() => {}, { error() {}, trace() {}, enabled: false, newScope: () => log });
  return new YamuxStream({
    id: '1',
    streamId: 1,
    state: StreamState.Established,
    direction: 'inbound',
    initialStreamWindowSize: WINDOW,
    sendFrame: (frame: Sent) => {
      sent.push(frame);
      return true;
    },
    getRTT: () => -1,
    log,
  } as unknown as ConstructorParameters<typeof YamuxStream>[0]);
}

function data(bytes: number) {
  return { header: { type: DATA, flag: 0, streamID: 1, length: bytes }, data: new Uint8Array(bytes) };
}

describe('yamux receive window', () => {
  it('grants more window once half of it is used, not once a frame, and never lets the sender run dry', () => {
    const sent: Sent[] = [];
    const stream = inbound(sent);
    const frame = 512;
    let received = 0;
    let updates = 0;
    // Three windows' worth of small frames, as batches arrive: the sender's window is the last grant less what it sent since.
    let senderWindow = WINDOW;
    for (let k = 0; k < (3 * WINDOW) / frame; k++) {
      expect(senderWindow).toBeGreaterThanOrEqual(frame);
      stream.handleData(data(frame) as never);
      received += frame;
      senderWindow -= frame;
      for (const f of sent.splice(0)) {
        if (f.type !== WINDOW_UPDATE) continue;
        updates++;
        senderWindow += f.length;
      }
    }
    expect(received).toBe(3 * WINDOW);
    // One update per half window received (two a window), not one per frame as unpatched.
    expect(updates).toBeGreaterThanOrEqual(5);
    expect(updates).toBeLessThanOrEqual(7);
    expect(senderWindow).toBeGreaterThanOrEqual(WINDOW / 2);
  });
});
