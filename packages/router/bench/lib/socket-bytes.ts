/**
 * Bytes per node for the gossip mesh bench (bench/mesh.ts): every TCP socket
 * a node opens or accepts is attributed to it (node:diagnostics_channel,
 * with the node's name carried by AsyncLocalStorage from its start), counted
 * from bytesRead / bytesWritten: what crosses the wire, encryption and
 * framing included. O(sockets) per reading.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

/** Run a node's start inside `owner.run(name, …)`: its sockets count as that node's. */
export const owner = new AsyncLocalStorage<string>();
const live = new Map<Socket, string>();
const closed = new Map<string, { read: number; written: number }>();
const track = (socket: Socket): void => {
  const who = owner.getStore();
  if (who === undefined) return;
  live.set(socket, who);
  socket.once('close', () => {
    live.delete(socket);
    const c = closed.get(who) ?? { read: 0, written: 0 };
    c.read += socket.bytesRead;
    c.written += socket.bytesWritten;
    closed.set(who, c);
  });
};
subscribe('net.client.socket', (m) => track((m as { socket: Socket }).socket));
subscribe('net.server.socket', (m) => track((m as { socket: Socket }).socket));

export function bytesByNode(): Map<string, { read: number; written: number }> {
  const out = new Map([...closed].map(([k, v]) => [k, { ...v }]));
  for (const [socket, who] of live) {
    const c = out.get(who) ?? { read: 0, written: 0 };
    c.read += socket.bytesRead;
    c.written += socket.bytesWritten;
    out.set(who, c);
  }
  return out;
}
