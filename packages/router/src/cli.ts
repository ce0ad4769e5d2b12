/**
 * `warmpath router`: flags map onto ROUTER_SCHEMA (see --help).
 * SIGTERM/SIGINT drain: /readyz fails at once, requests are still served for
 * shutdownDelayMs, in-flight ones may finish for shutdownTimeoutMs, then the
 * process exits 0; a second signal exits at once.
 */
import { configFromProcess } from '@warmpath/shared/runtime';
import { ROUTER_SCHEMA } from './config.ts';
import { startRouter } from './router.ts';

export async function run(argv: string[]): Promise<void> {
  const config = configFromProcess('router', ROUTER_SCHEMA, argv);
  const router = await startRouter({ config });
  const peer = router.peerAddrs[0] ?? '';
  console.log(`warmpath router ready url=${router.url} peer=${peer} id=${router.id} policy=${router.policy.name}`);
  let signals = 0;
  const onSignal = (sig: string): void => {
    if (++signals > 1) process.exit(1);
    process.stderr.write(`warmpath router ${router.id}: ${sig}, draining (new requests for ${config.shutdownDelayMs} ms, in-flight ones for ${config.shutdownTimeoutMs} ms more)\n`);
    router.drain().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`warmpath router ${router.id}: drain failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}
