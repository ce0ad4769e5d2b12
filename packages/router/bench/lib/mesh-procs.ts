/**
 * The agents of the gossip mesh bench in child processes (lib/mesh-agents.ts),
 * an even share in each, so a router's figures are not bounded by agents
 * sharing its event loop. Steps: fork each child with its share; wait for
 * every 'ready'; `publish` starts them all; `count` asks each for its
 * published total and its agents' peer counts; `stop` ends them.
 * Complexity: one IPC round trip per child per call.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { ChildMessage, Spec } from './mesh-agents.ts';
import type { GossipStats } from '@warmpath/shared/gossip';
import { agentStats, childAnswer } from './mesh-routers.ts';
import type { AgentCount } from './mesh-window.ts';

const CHILD = new URL('./mesh-agents.ts', import.meta.url).pathname;
/** A child's agents are up and linked within this long, ms. */
const READY_TIMEOUT_MS = 600_000;

export class AgentProcs {
  readonly #children: ChildProcess[];

  private constructor(children: ChildProcess[]) {
    this.#children = children;
  }

  /** Forks `procs` children sharing `spec.agents` agents; resolves once all are ready. */
  static async start(procs: number, spec: Spec): Promise<AgentProcs> {
    let first = spec.firstAgent;
    const children = Array.from({ length: procs }, (_, i) => {
      const share = Math.floor(spec.agents / procs) + (i < spec.agents % procs ? 1 : 0);
      const child = { ...spec, agents: share, firstAgent: first };
      first += share;
      return fork(CHILD, [JSON.stringify(child)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    });
    const out = new AgentProcs(children);
    try {
      await Promise.all(children.map((c) => reply(c, 'ready', READY_TIMEOUT_MS)));
    } catch (err) {
      out.stop();
      throw err;
    }
    return out;
  }

  publish(): void {
    for (const c of this.#children) c.send({ type: 'publish' });
  }

  /** Messages published so far by every agent, each agent's connected peers, each process's usage, the agents' counters so far. */
  async count(): Promise<AgentCount> {
    const replies = await Promise.all(
      this.#children.map((c) => {
        const r = reply(c, 'count', 30_000);
        c.send({ type: 'count' });
        return r;
      }),
    );
    const counts = replies.flatMap((m) => (m.type === 'count' ? [m] : []));
    return {
      published: counts.reduce((n, m) => n + m.published, 0),
      peers: counts.flatMap((m) => m.peers),
      usage: counts.map((m) => m.usage),
      stats: agentStats(counts.map((m) => ({ node: { stats: () => m.stats as GossipStats } }))),
    };
  }

  stop(): void {
    for (const c of this.#children) if (c.connected) c.send({ type: 'stop' });
  }
}

/** The child's next message of `type` (mesh-routers.ts childAnswer). */
const reply = (c: ChildProcess, type: ChildMessage['type'], timeoutMs: number): Promise<ChildMessage> =>
  childAnswer<ChildMessage>(c, (m) => m.type === type, timeoutMs, `agent process ('${type}')`);
