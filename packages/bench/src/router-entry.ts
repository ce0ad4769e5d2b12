#!/usr/bin/env node
/**
 * The benchmark's router process: `warmpath router` with the peers'
 * emulations registered (peers/index.ts), so `--policy sglang-cache-aware`
 * and the others run live. The live benchmark spawns it for its routers
 * (fleet.ts, through processes.ts's `script`): `node router-entry.ts router
 * <router options>`, the same arguments as `warmpath router`. The product's
 * `warmpath router` offers only its own policies.
 */
import { run } from '@warmpath/router/cli';
import { registerPeers } from './peers/index.ts';

registerPeers();
const [command, ...argv] = process.argv.slice(2);
if (command !== 'router') {
  console.error(`router-entry: runs only "router" (got "${command ?? ''}")`);
  process.exit(2);
}
try {
  await run(argv);
} catch (err) {
  // As the warmpath command reports a failed start: a config error exits 2.
  const e = err as { code?: string; message?: string };
  console.error(`warmpath router: ${e.message ?? String(err)}`);
  process.exit(e.code === 'config_invalid' ? 2 : 1);
}
