/**
 * `warmpath router`: flags map onto ROUTER_SCHEMA (see --help). Prints one
 * stdout line that scripts parse:
 *   warmpath router ready url=URL peer=MULTIADDR id=ID policy=NAME
 * and logs JSON lines on stderr.
 */
import { configFromProcess } from '@warmpath/shared/runtime';
import { ROUTER_SCHEMA } from './config.ts';
import { startRouter } from './router.ts';

export async function run(argv: string[]): Promise<void> {
  const config = configFromProcess('router', ROUTER_SCHEMA, argv);
  const router = await startRouter({ config });
  const peer = router.peerAddrs[0] ?? '';
  console.log(`warmpath router ready url=${router.url} peer=${peer} id=${router.id} policy=${router.policy.name}`);
  router.logger.info({ url: router.url, peer, policy: router.policy.name }, 'ready');
  const stop = (signal: NodeJS.Signals): void => {
    router.logger.info({ signal }, 'stopping');
    router.close().then(
      () => process.exit(0),
      (err: unknown) => {
        router.logger.error({ err }, 'close failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
