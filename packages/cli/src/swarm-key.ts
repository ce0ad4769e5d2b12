/**
 * `warmpath swarm-key`: prints a new swarm key file — the pre-shared key every
 * agent and router of a fleet must hold to join its gossip (libp2p private
 * network). Save it once and give the same file to every node:
 *   warmpath swarm-key > swarm.key && chmod 600 swarm.key
 */
import { generateSwarmKey } from '@warmpath/shared/gossip';

export async function run(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log('usage: warmpath swarm-key > swarm.key\n\nPrints a new swarm key; pass the file to every agent and router of the fleet with --swarm-key.');
    return;
  }
  process.stdout.write(generateSwarmKey());
}
