/**
 * A child process of the gossip mesh bench (bench/mesh.ts `--router-procs`):
 * hosts a share of the routers as real libp2p nodes with their fleet views
 * (lib/mesh-fleet.ts), so no one event loop carries every router and the
 * routers of a large fleet do not queue behind each other's handshakes.
 *
 * Protocol (IPC; lib/mesh-routers.ts is the parent's side): forked with a
 * JSON `RouterSpec` as argv[2] (every router's listen address, this child's
 * first router and how many), it sends { type: 'ready', routers } once they
 * listen. Then each request { id, type } is answered by { id, type, … }:
 *  - 'snap': each router's peers, mesh peers, replicas held, drops, RPC
 *    bytes, gossip stats and socket bytes; the process's CPU and event loop
 *    (cumulative: the parent takes differences);
 *  - 'measure' { on }: answers the delays recorded so far; on starts a new
 *    record of each delivered state's delay (now − its `sentAt`);
 *  - 'holds' { name, timeoutMs }: the wall-clock ms at which every router
 *    here held that replica (null if not within the timeout);
 *  - 'feed' { hz }: with `spec.feed`, its synthetic agents (lib/mesh-feed.ts)
 *    start handing their states to these routers, each every 1/hz s (0:
 *    stop); the feed's counts then ride on each 'snap';
 *  - 'stop': stops the nodes and exits.
 * Trade-off: delay runs from the agent's wall clock to the router's, 1 ms
 * resolution; processes on one host read one clock, so no offset enters.
 */
import { MeshFleet } from './mesh-fleet.ts';
import { SyntheticFeed } from './mesh-feed.ts';
import {
  snapRouters,
  usage,
  whenHolds,
  type RouterReply,
  type RouterRequest,
  type RouterSpec,
} from './mesh-routers.ts';
import { owner } from './socket-bytes.ts';

const spec = JSON.parse(process.argv[2]!) as RouterSpec;
const send = (m: RouterReply): void => void process.send?.(m);
let delays: number[] | undefined;
const fleet = await MeshFleet.start({
  ...spec.options,
  routers: spec.routers,
  agents: 0,
  firstRouter: spec.firstRouter,
  listenAddrs: spec.listenAddrs,
  ...(spec.candidates === 'first' ? { candidates: spec.listenAddrs.slice(0, 1) } : {}),
  swarmKey: spec.swarmKey,
  wrapStart: (name, start) => owner.run(name, start),
  onDelivery: (_router, state, origin) => {
    const whose = spec.delays ?? 'all';
    if (whose === 'all' || (whose === 'relayed' && origin.vouchedBy !== undefined))
      delays?.push(Date.now() - state.sentAt);
  },
});
const feed =
  spec.feed !== undefined
    ? await SyntheticFeed.create(fleet, spec.feed.agents, spec.feed.firstAgent, spec.feed)
    : undefined;
let stopFeed = (): void => {};
process.on('message', (m: RouterRequest) => {
  if (m.type === 'snap')
    send({ id: m.id, type: 'snap', routers: snapRouters(fleet), usage: usage(), fed: feed && { ...feed.counts } });
  else if (m.type === 'feed') {
    stopFeed();
    stopFeed = m.hz > 0 && feed !== undefined ? feed.start(m.hz) : () => {};
    send({ id: m.id, type: 'feed' });
  } else if (m.type === 'measure') {
    send({ id: m.id, type: 'measure', delays: delays ?? [] });
    delays = m.on ? [] : undefined;
  } else if (m.type === 'holds') {
    const check = (): boolean => fleet.routers.every((r) => r.view.replicas.has(m.name));
    void whenHolds(check, m.timeoutMs).then((at) => send({ id: m.id, type: 'holds', at }));
  } else if (m.type === 'stop') {
    stopFeed();
    void fleet.stop().finally(() => process.exit(0));
  }
});
// The parent gone (it crashed or was killed): nothing left to route for.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', routers: fleet.routers.map((r) => ({ name: r.name, peerId: r.node.peerId })) });
