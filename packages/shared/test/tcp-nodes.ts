/** Gossip nodes over TCP for the shared package's tests: started with a fast heartbeat, stopped after each test. */
import { afterEach } from 'vitest';
import { createGossipNode, type GossipNode } from '../src/gossip.ts';
import type { GossipOptions } from '../src/gossip/types.ts';

/** Call inside a describe block: returns `start`, whose nodes are stopped after each of its tests. */
export function tcpNodes(fleet: string): (o: Partial<GossipOptions>) => Promise<GossipNode> {
  const nodes: GossipNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.stop()));
  });
  return async (o) => {
    const node = await createGossipNode({
      fleet,
      insecureNoSwarmKey: true,
      onWarning: null,
      timing: { heartbeatIntervalMs: 100 },
      ...o,
    });
    await node.start();
    nodes.push(node);
    return node;
  };
}
