/**
 * A child process of the gossip mesh bench (bench/mesh.ts `--procs`): hosts
 * a share of the agents as real libp2p nodes (lib/mesh-fleet.ts) publishing
 * to routers in the parent process, so hundreds of agents do not share the
 * routers' event loop.
 *
 * Protocol (IPC messages): the parent forks it with a JSON `Spec` as argv[2];
 * it answers { type: 'ready', agents } once its agents hold their router
 * links; then `publish` starts each agent publishing every `intervalMs`
 * (spread evenly), `count` answers { type: 'count', published, peers, usage }
 * (the messages published so far, each agent's connected peers, the
 * process's CPU and event loop, its agents' link and publish counters so
 * far), and `stop`
 * stops the nodes and exits.
 * Trade-off: publish times travel in each state's `sentAt` (wall-clock ms)
 * so delay is measured across processes at 1 ms resolution.
 */
import type { GossipMeshTuning, GossipTiming } from '@warmpath/shared/gossip';
import { MeshFleet } from './mesh-fleet.ts';
import { agentStats, usage, type AgentStats, type ProcUsage } from './mesh-routers.ts';

export interface Spec {
  agents: number;
  firstAgent: number;
  swarmKey: string;
  routerAddrs: string[];
  intervalMs: number;
  digestHashes: number;
  fullEvery: number;
  timing: GossipTiming;
  mesh: GossipMeshTuning;
}

export type ChildMessage =
  | { type: 'ready'; agents: number }
  | { type: 'count'; published: number; peers: number[]; usage: ProcUsage; stats: AgentStats };

/** Progress on stderr every this many agents started. */
const PROGRESS_EVERY = 100;
const spec = JSON.parse(process.argv[2]!) as Spec;
const send = (m: ChildMessage): void => void process.send?.(m);
const fleet = await MeshFleet.start({
  routers: 0,
  agents: spec.agents,
  firstAgent: spec.firstAgent,
  routerAddrs: spec.routerAddrs,
  swarmKey: spec.swarmKey,
  digestHashes: spec.digestHashes,
  fullEvery: spec.fullEvery,
  timing: spec.timing,
  mesh: spec.mesh,
  onStarted: (n) => {
    if (n % PROGRESS_EVERY === 0) console.error(`agents ${spec.firstAgent}…: ${n} of ${spec.agents} started`);
  },
});
let stopPublishing = (): void => {};
process.on('message', (m: { type: string }) => {
  if (m.type === 'publish') stopPublishing = fleet.startPublishing(spec.intervalMs);
  else if (m.type === 'count')
    send({
      type: 'count',
      published: fleet.agents.reduce((n, a) => n + a.seq, 0),
      peers: fleet.agents.map((a) => a.node.peers().length),
      usage: usage(),
      stats: agentStats(fleet.agents),
    });
  else if (m.type === 'stop') {
    stopPublishing();
    void fleet.stop().finally(() => process.exit(0));
  }
});
// The parent gone (it crashed or was killed): nothing left to publish for.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', agents: fleet.agents.length });
