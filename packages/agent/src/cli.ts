/**
 * `warmpath agent`: start an agent and print one stdout line that others parse:
 *   warmpath agent ready proxy=URL admin=URL peer=MULTIADDR
 * Logs are JSON lines on stderr. SIGTERM/SIGINT drain (announce draining,
 * finish in-flight, announce down, exit 0); a second signal exits at once.
 */
import { configFromProcess } from '@warmpath/shared/runtime';
import { startAgent } from './agent.ts';
import { AGENT_SCHEMA } from './config.ts';

export async function run(argv: string[]): Promise<void> {
  const config = configFromProcess('agent', AGENT_SCHEMA, argv);
  const agent = await startAgent(config);
  const peer = agent.peerAddrs[0] ?? 'none';
  const status = agent.state().status;
  process.stdout.write(`warmpath agent ready proxy=${agent.url} admin=${agent.adminUrl} peer=${peer} replica=${agent.replica} engine=${config.engine} status=${status}\n`);
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
