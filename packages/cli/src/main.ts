#!/usr/bin/env node
/**
 * `warmpath`: the project's one command. Each subcommand lives in its own
 * package as `run(argv)`; this file only dispatches, loading the package lazily
 * so `warmpath sim` does not pay for libp2p.
 *
 * The same file runs as TypeScript in the workspace and, bundled by
 * src/build.ts, as dist/main.js of the npm package. It loads nothing before
 * checking the Node.js version against package.json's `engines`, so an old
 * Node prints what it needs instead of failing inside a dependency.
 */
import pkg from '../package.json' with { type: 'json' };

if (process.argv[2] === '--version' || process.argv[2] === '-v') {
  console.log(pkg.version);
  process.exit(0);
}
const tooOld = nodeTooOld(pkg.engines.node, process.versions.node);
if (tooOld !== undefined) {
  console.error(`warmpath ${pkg.version} needs Node.js ${tooOld} (this is ${process.version}); install a current Node.js LTS or use the container image.`);
  process.exit(1);
}

/** The required range when `version` is below engines' `>=X.Y.Z`, else undefined. */
function nodeTooOld(range: string, version: string): string | undefined {
  const need = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(range)?.slice(1).map(Number);
  if (need === undefined) throw new Error(`package.json engines.node must be ">=X.Y.Z" (is "${range}")`);
  const have = version.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    if ((have[i] ?? 0) !== need[i]) return (have[i] ?? 0) < need[i]! ? range : undefined;
  }
  return undefined;
}

const commands: Record<string, { summary: string; load: () => Promise<{ run(argv: string[]): Promise<void> }> }> = {
  sim: { summary: 'run an inference-engine simulator (vLLM dialect)', load: () => import('@warmpath/sim/cli') },
  agent: { summary: 'run the sidecar agent beside an inference engine', load: () => import('@warmpath/agent/cli') },
  router: { summary: 'run a stateless router (OpenAI-compatible gateway)', load: () => import('@warmpath/router/cli') },
  demo: { summary: 'start a local fleet: simulators, agents and two routers', load: () => import('./demo.ts') },
  bench: { summary: 'run a benchmark scenario across routing policies', load: () => import('@warmpath/bench/cli') },
  goals: { summary: "check the benchmark's goals on every scenario (discrete-event mode)", load: () => import('@warmpath/bench/goals') },
  'swarm-key': { summary: "print a new swarm key (the fleet's gossip network key) to stdout", load: () => import('./swarm-key.ts') },
};

function usage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(8)} ${c.summary}`);
  return `usage: warmpath <command> [options]\n\ncommands:\n${rows.join('\n')}\n\nRun "warmpath <command> --help" for a command's options, "warmpath --version" for the version.`;
}

const [name, ...rest] = process.argv.slice(2);
const command = name === undefined ? undefined : commands[name];
if (command === undefined) {
  const helpAsked = name === undefined || name === '--help' || name === '-h' || name === 'help';
  (helpAsked ? console.log : console.error)(name === undefined || helpAsked ? usage() : `warmpath: unknown command "${name}"\n\n${usage()}`);
  process.exit(helpAsked ? 0 : 2);
}
try {
  const mod = await command.load();
  await mod.run(rest);
} catch (err) {
  const e = err as { code?: string; message?: string };
  console.error(`warmpath ${name}: ${e.message ?? String(err)}`);
  process.exit(e.code === 'config_invalid' ? 2 : 1);
}
