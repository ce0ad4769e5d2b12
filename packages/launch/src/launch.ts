/**
 * A local fleet of real processes: N simulator replicas, each with its agent,
 * and R routers, joined by real libp2p gossip under a generated swarm key.
 * The demo, the live benchmark and the end-to-end tests all launch fleets here.
 *
 * Steps: write a swarm key to a temporary directory → start the simulators
 * (in parallel; with KV sharing, each told the others' URLs) → one agent per
 * simulator (in parallel) → the routers, one after another, each
 * bootstrapping to every agent and to the routers started before it (still
 * running). A failure at any step stops what already started.
 *
 * Topology: agents are publish-only gossip nodes and dial nobody; every
 * router bootstraps to every agent, so each agent's flood publish reaches
 * each router in one hop and no agent receives the fleet's state (a fleet of
 * N agents costs each agent O(1) messages). The routers also form a mesh of
 * their own (agents never relay), which the routers' topic needs: the
 * tenants' global limits (docs/TENANTS.md). In production the same holds with
 * either side's --bootstrap list: agents listing the routers, or routers
 * listing the agents, and the routers' DNS name for each other.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSwarmKey } from '@warmpath/shared/gossip';
import { startProcess, type Proc, type StartOptions } from './processes.ts';

export interface LaunchOptions {
  replicas: number;
  routers: number;
  /** Simulator profile (see `warmpath sim --help`). */
  profile?: string;
  /** Simulated time runs this many times faster than wall time. */
  speed?: number;
  model?: string;
  adapters?: readonly string[];
  maxLoras?: number;
  /** Router placement policy. */
  policy?: string;
  fleet?: string;
  /** Disaggregation role of replica i (`warmpath sim --role`; its agent learns it from the simulator); default both. */
  roles?: readonly ('both' | 'prefill' | 'decode')[];
  /** Topology label of replica i (`warmpath agent --zone`); default none. */
  zones?: readonly string[];
  /** KV sharing: each simulator fetches prefixes the others hold (`warmpath sim --kv-peers`), told once they listen. */
  kvSharing?: boolean;
  /** Extra flags per component. */
  simArgs?: readonly string[];
  agentArgs?: readonly string[];
  routerArgs?: readonly string[];
  /** Use a private network (default true). */
  privateNetwork?: boolean;
  /** Run every process through this program instead of the warmpath CLI (the soak's sampling wrapper, soak-child.ts), with `env` added. */
  script?: string;
  /** Run the routers through this program (the live benchmark's router-entry.ts: the peers' emulations registered). */
  routerScript?: string;
  env?: NodeJS.ProcessEnv;
}

/** A launched fleet: its processes, how to reach its routers, and how to stop it. */
export interface LocalFleet {
  readonly sims: Proc[];
  readonly agents: Proc[];
  readonly routers: Proc[];
  readonly routerUrls: string[];
  readonly swarmKeyFile: string | undefined;
  readonly bootstrap: string[];
  /** Starts one more router (e.g. to replace a stopped one). */
  addRouter(policy?: string, extraArgs?: readonly string[]): Promise<Proc>;
  /** Waits until every router sees `replicas` ready replicas. */
  waitConverged(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Polls `fn` until it returns true or the time runs out (a throw counts as not yet). */
async function pollUntil(fn: () => Promise<boolean>, timeoutMs: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await fn()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Replicas a router currently considers ready (from its fleet endpoint). */
export async function readyReplicas(routerUrl: string): Promise<number> {
  const res = await fetch(`${routerUrl}/warmpath/v1/fleet`);
  if (!res.ok) return 0;
  const body = (await res.json()) as { replicas?: Array<{ status?: string; fresh?: boolean }> };
  return (body.replicas ?? []).filter((r) => r.status === 'ready' && r.fresh !== false).length;
}

/** The flags every agent and router of the fleet shares: its name and its swarm key (or none). */
function commonArgs(opts: LaunchOptions): { args: string[]; swarmKeyFile: string | undefined } {
  const fleetName = opts.fleet ?? `fleet-${process.pid}-${Date.now().toString(36)}`;
  let swarmKeyFile: string | undefined;
  if (opts.privateNetwork !== false) {
    swarmKeyFile = join(mkdtempSync(join(tmpdir(), 'warmpath-fleet-')), 'swarm.key');
    writeFileSync(swarmKeyFile, generateSwarmKey(), { mode: 0o600 });
  }
  const key = swarmKeyFile !== undefined ? ['--swarm-key', swarmKeyFile] : ['--insecure-no-swarm-key'];
  return { args: ['--fleet', fleetName, ...key], swarmKeyFile };
}

function simArgs(opts: LaunchOptions, i: number): string[] {
  const role = opts.roles?.[i];
  return [
    'sim',
    '--port',
    '0',
    '--profile',
    opts.profile ?? 'h100-llama3-8b',
    ...(opts.model !== undefined ? ['--model', opts.model] : []),
    ...(opts.adapters !== undefined && opts.adapters.length > 0 ? ['--adapters', opts.adapters.join(',')] : []),
    ...(opts.maxLoras !== undefined ? ['--max-loras', String(opts.maxLoras)] : []),
    ...(opts.speed !== undefined ? ['--speed', String(opts.speed)] : []),
    ...(role !== undefined ? ['--role', role] : []),
    ...(opts.simArgs ?? []),
  ];
}

/** Agent i beside simulator `sim`; it dials nobody (the routers dial it). */
function agentArgs(opts: LaunchOptions, common: readonly string[], sim: Proc, i: number): string[] {
  return [
    'agent',
    '--engine',
    'vllm',
    '--engine-url',
    sim.info.url!,
    '--port',
    '0',
    '--admin-port',
    '0',
    '--replica-id',
    `replica-${i}`,
    ...(opts.zones?.[i] !== undefined ? ['--zone', opts.zones[i]] : []),
    ...common,
    ...(opts.agentArgs ?? []),
  ];
}

/** A router bootstrapping to every agent and to `peers` (routers); no load balancer in front to deregister from, so it stops at once on SIGTERM. */
function routerArgs(
  opts: LaunchOptions,
  common: readonly string[],
  agents: readonly Proc[],
  peers: readonly Proc[],
  policy: string,
  extra: readonly string[],
): string[] {
  return [
    'router',
    '--port',
    '0',
    '--policy',
    policy,
    '--shutdown-delay-ms',
    '0',
    ...common,
    ...agents.flatMap((a) => ['--bootstrap', a.info.peer!]),
    ...peers.flatMap((r) => (r.info.peer !== undefined ? ['--bootstrap', r.info.peer] : [])),
    ...(opts.routerArgs ?? []),
    ...extra,
  ];
}

const running = (p: Proc): boolean => p.child.exitCode === null && p.child.signalCode === null;
/** KV sharing: tells each simulator the others' URLs (its ports are known only once it listens). */
async function sharePeers(urls: readonly string[]): Promise<void> {
  await Promise.all(
    urls.map(async (u) => {
      const res = await fetch(`${u}/sim/v1/kv-peers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ peers: urls.filter((o) => o !== u) }),
      });
      await res.body?.cancel();
      if (res.status !== 200) throw new Error(`${u}: setting its KV peers answered ${res.status}`);
    }),
  );
}

/** Starts the fleet's simulators, agents and routers; on a failure, stops what started and rethrows. */
export async function launchFleet(opts: LaunchOptions): Promise<LocalFleet> {
  const { args: common, swarmKeyFile } = commonArgs(opts);
  const sims: Proc[] = [];
  const agents: Proc[] = [];
  const routers: Proc[] = [];
  const how: StartOptions = {
    ...(opts.script !== undefined ? { script: opts.script } : {}),
    ...(opts.env !== undefined ? { env: opts.env } : {}),
  };
  const stop = async (): Promise<void> => {
    await Promise.all([...routers, ...agents, ...sims].map((p) => p.stop(3_000)));
  };
  const addRouter = async (policy = opts.policy ?? 'warmpath', extra: readonly string[] = []): Promise<Proc> => {
    const p = await startProcess(
      `router-${routers.length}`,
      routerArgs(opts, common, agents, routers.filter(running), policy, extra),
      opts.routerScript !== undefined ? { ...how, script: opts.routerScript } : how,
    );
    routers.push(p);
    return p;
  };
  try {
    const n = Array.from({ length: opts.replicas }, (_, i) => i);
    sims.push(...(await Promise.all(n.map((i) => startProcess(`sim-${i}`, simArgs(opts, i), how)))));
    if (opts.kvSharing === true) await sharePeers(sims.map((p) => p.info.url!));
    agents.push(
      ...(await Promise.all(n.map((i) => startProcess(`agent-${i}`, agentArgs(opts, common, sims[i]!, i), how)))),
    );
    for (let i = 0; i < opts.routers; i++) await addRouter();
  } catch (err) {
    await stop();
    throw err;
  }
  const fleet: LocalFleet = {
    sims,
    agents,
    routers,
    get routerUrls() {
      return routers.filter(running).map((r) => r.info.url!);
    },
    swarmKeyFile,
    bootstrap: agents.map((a) => a.info.peer!),
    addRouter,
    async waitConverged(timeoutMs = 20_000) {
      const want = agents.length;
      await pollUntil(
        async () => (await Promise.all(fleet.routerUrls.map(readyReplicas))).every((n) => n >= want),
        timeoutMs,
        `every router to see ${want} ready replicas`,
      );
    },
    stop,
  };
  return fleet;
}
