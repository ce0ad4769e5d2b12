/**
 * `warmpath keygen`: the fleet's keys.
 *  - no option: prints a new swarm key file — the pre-shared key every agent
 *    and router of a fleet must hold to join its gossip (libp2p private
 *    network). Save it once and give the same file to every node:
 *      warmpath keygen > swarm.key && chmod 600 swarm.key
 *  - `--out FILE`: writes it to FILE instead (mode 0600; an existing file is
 *    never overwritten).
 *  - `--identity FILE`: creates a node's identity file (what --identity-file
 *    reads; kept if it exists) and prints its peer id, so routers can list an
 *    agent in --agent-peers before it first starts.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { generateSwarmKey, loadIdentity, peerIdOfIdentity } from '@warmpath/shared/gossip';

const USAGE = `usage: warmpath keygen [--out FILE] | --identity FILE

Prints a new swarm key, the fleet's gossip network key; give the file to every agent and router
of the fleet with --swarm-key.
  --out FILE       write the swarm key to FILE (mode 0600; refuses to overwrite)
  --identity FILE  create a node identity file (--identity-file reads it; an existing one is kept)
                   and print its peer id (for --agent-peers)
  --help | --help-all
                   this text`;

export async function run(argv: string[]): Promise<void> {
  let values: { help?: boolean; 'help-all'?: boolean; out?: string; identity?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        help: { type: 'boolean', short: 'h' },
        'help-all': { type: 'boolean' },
        out: { type: 'string' },
        identity: { type: 'string' },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (values.help === true || values['help-all'] === true) {
    console.log(USAGE);
    return;
  }
  if (values.identity !== undefined) {
    console.log(peerIdOfIdentity(await loadIdentity(values.identity)));
    return;
  }
  if (values.out !== undefined) {
    try {
      writeFileSync(values.out, generateSwarmKey(), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      console.error(`cannot write ${values.out}: ${(err as Error).message}`);
      process.exitCode = 1;
    }
    return;
  }
  process.stdout.write(generateSwarmKey());
}
