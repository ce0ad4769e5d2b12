/**
 * `warmpath router`: flags map onto ROUTER_SCHEMA (see --help). Prints one
 * stdout line that scripts parse:
 *   warmpath router ready url=URL peer=MULTIADDR id=ID policy=NAME
 * and logs JSON lines on stderr.
 * SIGTERM/SIGINT drain: /readyz fails at once, requests are still served for
 * shutdownDelayMs, in-flight ones may finish for shutdownTimeoutMs, then the
 * process exits 0; a second signal exits at once.
 */
import { configFromProcess, type CommandHelp } from '@warmpath/shared/runtime';
import { ROUTER_SCHEMA } from './config.ts';
import { startRouter } from './router.ts';

export const ROUTER_HELP: CommandHelp = {
  description:
    "A stateless router: it follows the agents' state over gossip and places each OpenAI-compatible request (/v1/chat/completions, /v1/completions, /v1/responses, /v1/embeddings; /v1/models lists the fleet's) on the replica where its prefix and adapter are warm, within a load bound; x-warmpath-replica and x-warmpath-route say where and why. Run any number behind an L4 balancer. Also on its port: /healthz, /readyz, /metrics, /warmpath/v1/fleet. Prints one ready line on stdout (url=, peer=, id=, policy=); logs JSON lines on stderr.",
  examples: [
    '# in a mesh of routers: every address routers.internal resolves to, 6 of them kept; agents in 10.0.0.0/16',
    'warmpath router --host 0.0.0.0 --port 8080 --fleet prod --swarm-key /etc/warmpath/swarm.key \\',
    '  --gossip-listen /ip4/0.0.0.0/tcp/4001 --bootstrap-dns routers.internal --gossip-peers 6 \\',
    '  --agent-networks 10.0.0.0/16 --identity-file /var/lib/warmpath/identity.key',
    "# without a mesh: dialling two agents' gossip addresses (each agent's ready line prints its peer=)",
    'warmpath router --fleet prod --swarm-key /etc/warmpath/swarm.key \\',
    '  --bootstrap /ip4/10.0.0.17/tcp/4001/p2p/12D3KooW… --bootstrap /ip4/10.0.0.18/tcp/4001/p2p/12D3KooW…',
    '# the same settings from a file, the fleet name from the environment',
    'WARMPATH_FLEET=prod warmpath router --config /etc/warmpath/router.yaml',
  ],
};

export async function run(argv: string[]): Promise<void> {
  const config = configFromProcess('router', ROUTER_SCHEMA, argv, ROUTER_HELP);
  const router = await startRouter({ config });
  const peer = router.peerAddrs[0] ?? '';
  console.log(`warmpath router ready url=${router.url} peer=${peer} id=${router.id} policy=${router.policy.name}`);
  router.logger.info({ url: router.url, peer, policy: router.policy.name }, 'ready');
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (++signals > 1) process.exit(1);
    router.logger.info(
      { signal, shutdownDelayMs: config.shutdownDelayMs, shutdownTimeoutMs: config.shutdownTimeoutMs },
      'draining',
    );
    router.drain().then(
      () => process.exit(0),
      (err: unknown) => {
        router.logger.error({ err }, 'drain failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}
