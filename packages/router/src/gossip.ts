// Temporary: @warmpath/shared does not export gossip yet; switch to the package import when it does.
export { createGossipNode } from '../../shared/src/gossip.ts';
export type { GossipNode } from '../../shared/src/gossip.ts';
