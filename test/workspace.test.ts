/**
 * The repository's own commands as the README gives them, run through npm as
 * a user runs them: `npm run warmpath -- …`, the Node.js version check on an
 * old Node, and Ctrl-C on `npm run demo` (SIGINT to the whole foreground
 * process group, as a terminal sends it), which must stop the fleet and exit
 * 0 without npm or pnpm reporting a failed command.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const cliPkg = JSON.parse(readFileSync(new URL('../packages/cli/package.json', import.meta.url), 'utf8')) as {
  version: string;
  engines: { node: string };
};
/** A Node.js older than the CLI's floor (Debian 12's is 20); none on the machine skips that test. */
const OLD_NODE = ['/usr/bin/node', '/usr/local/bin/node']
  .map((path) => ({ path, version: spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '' }))
  .find((n) => /^v\d+\./.test(n.version) && Number(n.version.slice(1).split('.')[0]) < 22);

describe('the workspace commands', () => {
  it.skipIf(OLD_NODE === undefined)(
    'on an old Node.js, the version check says what it needs instead of failing to load',
    () => {
      const res = spawnSync(OLD_NODE!.path, ['packages/cli/src/require-node.js'], { cwd: REPO, encoding: 'utf8' });
      expect(res.status).toBe(1);
      expect(res.stderr).toContain(
        `warmpath ${cliPkg.version} needs Node.js ${cliPkg.engines.node} (this is ${OLD_NODE!.version}); run \`npm run setup\``,
      );
    },
  );

  it('`npm run warmpath -- --version` runs the CLI from the sources', () => {
    const res = spawnSync('npm', ['run', '--silent', 'warmpath', '--', '--version'], { cwd: REPO, encoding: 'utf8' });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout.trim()).toBe(cliPkg.version);
  });

  it('Ctrl-C on `npm run demo` stops the fleet and exits 0', async () => {
    // detached: the demo gets its own process group, which the SIGINT below reaches whole, as a terminal's Ctrl-C does.
    const child = spawn('npm', ['run', 'demo', '--', '--replicas', '1', '--routers', '1', '--profile', 'tiny'], {
      cwd: REPO,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      await new Promise<void>((resolve, reject) => {
        const onData = (): void => {
          if (out.includes('Ctrl-C stops the fleet.')) resolve();
        };
        child.stdout!.on('data', onData);
        void exited.then(([code]) => reject(new Error(`npm run demo exited ${code} before the fleet was up:\n${out}`)));
      });
      const router = /router 0: (http:\/\/\S+)/.exec(out)![1]!;
      expect((await fetch(`${router}/healthz`)).status).toBe(200);
      process.kill(-child.pid!, 'SIGINT');
      const [code, signal] = await exited;
      expect({ code, signal }, out).toEqual({ code: 0, signal: null });
      expect(out).not.toMatch(/ELIFECYCLE|Command failed|npm error/);
      // The fleet is gone: the router no longer answers.
      await expect(fetch(`${router}/healthz`)).rejects.toThrow();
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 120_000);
});
