/**
 * `warmpath agent`: start an agent and print one line that others parse:
 *   warmpath agent ready proxy=URL admin=URL peer=MULTIADDR
 * SIGTERM/SIGINT drain (announce draining, finish in-flight, announce down,
 * exit 0); a second signal exits at once.
 */
import { configFromProcess } from '@warmpath/shared/runtime';
import { startAgent } from './agent.ts';
import { AGENT_SCHEMA } from './config.ts';

export async function run(argv: string[]): Promise<void> {
  const config = configFromProcess('agent', AGENT_SCHEMA, argv);
  const agent = await startAgent(config);
  const peer = agent.peerAddrs[0] ?? 'none';
  process.stdout.write(`warmpath agent ready proxy=${agent.url} admin=${agent.adminUrl} peer=${peer} replica=${agent.replica} engine=${config.engine} status=${agent.state().status}\n`);
  let signals = 0;
  const onSignal = (sig: string): void => {
    signals++;
    if (signals > 1) process.exit(1);
    process.stderr.write(`warmpath agent: ${sig}, draining (${agent.core.ledger.inflight.size} in flight)\n`);
    agent.drain().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`warmpath agent: drain failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}
