#!/usr/bin/env node
/**
 * `warmpath`: the project's one command. Each subcommand lives in its own
 * package as `run(argv)`; this file only dispatches, loading the package lazily
 * so `warmpath sim` does not pay for libp2p.
 *
 * The same file runs as TypeScript in the workspace and, bundled by
 * src/build.ts, as dist/main.js of the npm package. Its first import checks
 * the Node.js version against package.json's `engines`, so an old Node prints
 * what it needs instead of failing inside a dependency.
 */
import './require-node.js';
import pkg from '../package.json' with { type: 'json' };

if (process.argv[2] === '--version' || process.argv[2] === '-v') {
  console.log(pkg.version);
  process.exit(0);
}

const commands: Record<string, { summary: string; load: () => Promise<{ run(argv: string[]): Promise<void> }> }> = {
  sim: { summary: 'run an inference-engine simulator (vLLM dialect)', load: () => import('@warmpath/sim/cli') },
  agent: { summary: 'run the sidecar agent beside an inference engine', load: () => import('@warmpath/agent/cli') },
  router: { summary: 'run a stateless router (OpenAI-compatible gateway)', load: () => import('@warmpath/router/cli') },
  demo: { summary: 'start a local fleet: simulators, agents and two routers', load: () => import('./demo.ts') },
  bench: { summary: 'run a benchmark scenario across routing policies', load: () => import('@warmpath/bench/cli') },
  goals: {
    summary: "check the benchmark's goals on every scenario (discrete-event mode)",
    load: () => import('@warmpath/bench/goals'),
  },
  keygen: {
    summary: "print a new swarm key (the fleet's gossip network key), or make a node identity file (--identity)",
    load: () => import('./keygen.ts'),
  },
};

/** Lines of `warmpath --help` after the command list. */
const EXAMPLES = [
  '# a local fleet: 4 simulated GPUs with agents, 2 routers (Ctrl-C stops it)',
  'warmpath demo',
  '# beside each engine: an agent; then any number of routers',
  'warmpath agent --engine vllm --engine-url http://127.0.0.1:8000 --host 0.0.0.0 --fleet prod --swarm-key swarm.key',
  'warmpath router --host 0.0.0.0 --fleet prod --swarm-key swarm.key \\',
  '  --bootstrap /ip4/10.0.0.17/tcp/4001/p2p/12D3KooW…',
  '# compare routing policies on a workload, in virtual time',
  'warmpath bench --scenario chat --mode des',
];

function usage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(9)} ${c.summary}`);
  return [
    'usage: warmpath <command> [options]',
    'Warmpath places each LLM request where its prompt prefix and LoRA adapter are already warm:\nan agent beside each inference engine, stateless routers in front, joined by gossip.',
    `commands:\n${rows.join('\n')}`,
    `examples:\n${EXAMPLES.map((l) => `  ${l}`).join('\n')}`,
    [
      'Every option is also a WARMPATH_* environment variable and a key of a --config YAML/JSON file.',
      '"warmpath <command> --help" lists the settings most changed, with examples; "--help-all" lists every one.',
      '"warmpath --version" prints the version.',
    ].join('\n'),
  ].join('\n\n');
}

const [name, ...rest] = process.argv.slice(2);
const command = name === undefined ? undefined : commands[name];
if (command === undefined) {
  const helpAsked =
    name === undefined || name === '--help' || name === '--help-all' || name === '-h' || name === 'help';
  (helpAsked ? console.log : console.error)(
    name === undefined || helpAsked ? usage() : `warmpath: unknown command "${name}"\n\n${usage()}`,
  );
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
