/**
 * `node soak-child.ts <sim|agent|router> [flags…]`: the warmpath command,
 * plus one stderr line every WARMPATH_SOAK_SAMPLE_MS (default 1000) with the
 * process's resident memory, heap, open file descriptors and active libuv
 * resources: `soak-sample {"rss":…,"heap":…,"fds":…,"handles":…}`. Handles
 * can only be read from inside the process, hence this wrapper; the soak
 * (soak.ts) starts its fleet through it. Run with --expose-gc, a full
 * collection precedes each sample, so `heap` is the live heap: a leak shows
 * as a rising line, not hidden in the collector's sawtooth.
 */
import { readdirSync } from 'node:fs';

const COMMANDS: Record<string, () => Promise<{ run(argv: string[]): Promise<void> }>> = {
  sim: () => import('@warmpath/sim/cli'),
  agent: () => import('@warmpath/agent/cli'),
  // The benchmark's router, as router-entry.ts runs it: the peers' emulations registered.
  router: async () => {
    (await import('./peers/index.ts')).registerPeers();
    return import('@warmpath/router/cli');
  },
};

const [name, ...argv] = process.argv.slice(2);
const load = name === undefined ? undefined : COMMANDS[name];
if (load === undefined) {
  process.stderr.write(`usage: soak-child.ts <${Object.keys(COMMANDS).join('|')}> [flags…]\n`);
  process.exit(2);
}

/** Open file descriptors (Linux /proc; -1 elsewhere). */
function openFds(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return -1;
  }
}

const every = Number(process.env.WARMPATH_SOAK_SAMPLE_MS ?? 1_000);
const gc = (globalThis as { gc?: () => void }).gc;
setInterval(() => {
  gc?.();
  const sample = {
    rss: process.memoryUsage.rss(),
    heap: process.memoryUsage().heapUsed,
    fds: openFds(),
    handles: process.getActiveResourcesInfo().length,
  };
  process.stderr.write(`soak-sample ${JSON.stringify(sample)}\n`);
}, every).unref();
await (await load()).run(argv);
