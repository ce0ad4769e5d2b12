/**
 * `warmpath agent`: start an agent and print one stdout line that others parse:
 *   warmpath agent ready proxy=URL admin=URL peer=MULTIADDR
 * Logs are JSON lines on stderr. SIGTERM/SIGINT drain (announce draining,
 * finish in-flight, announce down, exit 0); a second signal exits at once.
 */
import { configFromProcess, type CommandHelp } from '@warmpath/shared/runtime';
import { startAgent } from './agent.ts';
import { AGENT_SCHEMA } from './config.ts';

export const AGENT_HELP: CommandHelp = {
  description:
    "The sidecar beside one inference engine (vLLM, SGLang, llama.cpp, TGI): it proxies the engine's OpenAI API on --port, refuses work the engine cannot take (429 + x-warmpath-reject-reason), models its prefix cache, and publishes its state over gossip 4 times a second. The admin port serves /metrics, /healthz, /readyz, /warmpath/v1/state and the digest. Prints one ready line on stdout (proxy=, admin=, peer=, replica=); logs JSON lines on stderr. SIGTERM drains: no new requests, in-flight ones finish, then exit 0.",
  examples: [
    '# beside vLLM (run it with --enable-prompt-tokens-details), reached by routers as gpu-17.internal',
    'warmpath agent --engine vllm --engine-url http://127.0.0.1:8000 --host 0.0.0.0 --advertise-host gpu-17.internal \\',
    '  --port 9000 --admin-port 9001 --fleet prod --replica-id gpu-17 --gossip-listen /ip4/0.0.0.0/tcp/4001 \\',
    '  --swarm-key /etc/warmpath/swarm.key --bootstrap-dns routers.internal --identity-file /var/lib/warmpath/identity.key',
    '# beside SGLang (run it with --enable-metrics), admission a little stricter',
    'warmpath agent --engine sglang --engine-url http://127.0.0.1:30000 --kv-high-watermark 0.9 --max-waiting 32',
    '# in front of the built-in simulator, without gossip (its admin API only)',
    'warmpath agent --engine-url http://127.0.0.1:8000 --no-gossip',
  ],
};

export async function run(argv: string[]): Promise<void> {
  const config = configFromProcess('agent', AGENT_SCHEMA, argv, AGENT_HELP);
  const agent = await startAgent(config);
  const peer = agent.peerAddrs[0] ?? 'none';
  const status = agent.state().status;
  process.stdout.write(
    `warmpath agent ready proxy=${agent.url} admin=${agent.adminUrl} peer=${peer} replica=${agent.replica} engine=${config.engine} status=${status}\n`,
  );
  agent.logger.info({ proxy: agent.url, admin: agent.adminUrl, peer, engine: config.engine, status }, 'ready');
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) process.exit(1);
    agent.logger.info({ signal, inflight: agent.core.ledger.inflight.size }, 'draining');
    agent.drain().then(
      () => process.exit(0),
      (err: unknown) => {
        agent.logger.error({ err }, 'drain failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}
