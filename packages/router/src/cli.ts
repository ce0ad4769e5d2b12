/** `warmpath router`: flags map onto ROUTER_SCHEMA (see --help). */
import { configFromProcess } from '@warmpath/shared/runtime';
import { ROUTER_SCHEMA } from './config.ts';
import { startRouter } from './router.ts';

export async function run(argv: string[]): Promise<void> {
  const config = configFromProcess('router', ROUTER_SCHEMA, argv);
  const router = await startRouter({ config });
  const peer = router.peerAddrs[0] ?? '';
  console.log(`warmpath router ready url=${router.url} peer=${peer} id=${router.id} policy=${router.policy.name}`);
  const stop = (): void => {
    router.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
