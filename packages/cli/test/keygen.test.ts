/**
 * `warmpath keygen` from a real process: a swarm key on stdout or in a new
 * file (0600, never overwritten), and a node identity file whose printed peer
 * id is the one a gossip node started with that file gets, start after start.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGossipNode, loadIdentity, parseSwarmKey } from '@warmpath/shared/gossip';
import { describe, expect, it } from 'vitest';
import { CLI_ROOT } from '../src/build.ts';

const CLI = join(CLI_ROOT, 'src/main.ts');
const cli = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 20_000 });
const dir = mkdtempSync(join(tmpdir(), 'warmpath-keygen-'));

describe('warmpath keygen', () => {
  it('prints a swarm key or writes one to a new file, never over an existing one', () => {
    expect(() => parseSwarmKey(cli(['keygen']).stdout)).not.toThrow();
    const file = join(dir, 'swarm.key');
    expect(cli(['keygen', '--out', file]).status).toBe(0);
    const key = readFileSync(file, 'utf8');
    expect(() => parseSwarmKey(key)).not.toThrow();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = cli(['keygen', '--out', file]);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/EEXIST/);
    expect(readFileSync(file, 'utf8')).toBe(key);
  });

  it('--identity creates an identity file once and prints the peer id a node started with it gets, every time', async () => {
    const file = join(dir, 'node.key');
    const first = cli(['keygen', '--identity', file]).stdout.trim();
    expect(first).toMatch(/^12D3KooW\w+$/);
    expect(cli(['keygen', '--identity', file]).stdout.trim()).toBe(first);
    for (let start = 0; start < 2; start++) {
      const node = await createGossipNode({
        fleet: 'keygen',
        insecureNoSwarmKey: true,
        onWarning: null,
        privateKey: await loadIdentity(file),
      });
      expect(node.peerId).toBe(first);
    }
  });
});
