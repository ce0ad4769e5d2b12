/**
 * The npm package as a user gets it: bundle (src/build.ts), `npm pack`, install
 * the tarball with npm into an empty directory — offline, its one third-party
 * dependency (chart.js) packed from the workspace's copy — and run the
 * installed `warmpath`: --version, the simulator, a short discrete-event
 * benchmark (the same JSON as the sources give: bundling changes nothing,
 * and the relocated trace is found), the demo (which spawns the CLI's own
 * entry point), and one request through a router +
 * agent + simulator started from the installed copy.
 */
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { spawnUntilLine, waitFor } from '@warmpath/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, CLI_ROOT, type BuiltCli } from '../src/build.ts';

const pkg = JSON.parse(readFileSync(join(CLI_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  engines: { node: string };
  bin: Record<string, string>;
  files: string[];
  dependencies: Record<string, string>;
};
/** The installed `warmpath` finds Node through `#!/usr/bin/env node`: put the Node running the tests first. */
const ENV = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
/** A Node.js older than 22 (Debian 12's is 20), to see the version check; none on the machine skips that test. */
const OLD_NODE = ['/usr/bin/node', '/usr/local/bin/node']
  .map((path) => ({ path, version: spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '' }))
  .find((n) => /^v\d+\./.test(n.version) && Number(n.version.slice(1).split('.')[0]) < 22);
const children: ChildProcess[] = [];
let dir: string;
let bin: string;
let built: BuiltCli;

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, env: ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Packs `name` as installed for `fromDir` (pnpm layout) and, recursively, its dependencies; returns the tarballs. */
function packDependencies(
  deps: Record<string, string>,
  fromDir: string,
  out: string,
  seen = new Set<string>(),
): string[] {
  const tarballs: string[] = [];
  for (const name of Object.keys(deps)) {
    const depDir = realpathSync(join(fromDir, 'node_modules', name));
    if (seen.has(depDir)) continue;
    seen.add(depDir);
    tarballs.push(
      join(out, npm(['pack', depDir, '--ignore-scripts', '--pack-destination', out], out).trim().split('\n').at(-1)!),
    );
    const own =
      (JSON.parse(readFileSync(join(depDir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> })
        .dependencies ?? {};
    // pnpm puts a package's dependencies beside it: <store>/node_modules/<name> and <store>/node_modules/<dep>.
    const storeDir = join(depDir, ...name.split('/').map(() => '..'), '..');
    tarballs.push(...packDependencies(own, storeDir, out, seen));
  }
  return tarballs;
}

/** Starts the installed `warmpath <args>` and resolves with its first stdout line. */
async function start(args: string[]): Promise<{ child: ChildProcess; line: string }> {
  const { child, line } = spawnUntilLine(bin, args, { env: ENV });
  children.push(child);
  return { child, line: await line };
}
const field = (line: string, key: string): string => new RegExp(`${key}=(\\S+)`).exec(line)?.[1] ?? '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'warmpath-pack-'));
  built = await buildCli();
  const packed = join(
    dir,
    npm(['pack', '--ignore-scripts', '--pack-destination', dir], CLI_ROOT).trim().split('\n').at(-1)!,
  );
  const deps = packDependencies(pkg.dependencies, CLI_ROOT, dir);
  const install = join(dir, 'install');
  mkdirSync(install);
  writeFileSync(join(install, 'package.json'), '{"name":"install-test","private":true}\n');
  npm(['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', packed, ...deps], install);
  bin = join(install, 'node_modules/.bin/warmpath');
}, 120_000);

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('the warmpath npm package', () => {
  it('is named warmpath, ships only dist/, and depends on nothing from the workspace', () => {
    expect(pkg.name).toBe('warmpath');
    expect(pkg.bin).toEqual({ warmpath: './dist/main.js' });
    expect(pkg.files).toEqual(['dist']);
    for (const spec of Object.values(pkg.dependencies)) expect(spec).toMatch(/^\d+\.\d+\.\d+$/);
    const bench = JSON.parse(readFileSync(join(CLI_ROOT, '../bench/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    // The report reads chart.js from node_modules at run time (not bundled): the same version as the benchmark's.
    expect(pkg.dependencies['chart.js']).toBe(bench.dependencies['chart.js']);
  });

  it('keeps libp2p out of `warmpath sim`: the simulator chunk and what it imports hold no libp2p module', () => {
    const byFile = new Map(built.chunks.map((c) => [c.fileName, c]));
    /** Modules loaded with a command's chunk: its own and those of every chunk it imports statically. */
    const loadedBy = (entry: string): string[] => {
      const first = built.chunks.find((c) => c.facadeModuleId?.endsWith(entry) === true);
      if (first === undefined) throw new Error(`no chunk for ${entry}`);
      const seen = new Set([first.fileName]);
      const queue = [first];
      for (let chunk = queue.pop(); chunk !== undefined; chunk = queue.pop()) {
        for (const f of chunk.imports) if (!seen.has(f) && byFile.has(f)) (queue.push(byFile.get(f)!), seen.add(f));
      }
      return [...seen].flatMap((f) => byFile.get(f)!.moduleIds);
    };
    expect(loadedBy('packages/sim/src/cli.ts').filter((id) => /libp2p/.test(id))).toEqual([]);
    // …while the router's does (the check can fail).
    expect(loadedBy('packages/router/src/cli.ts').some((id) => /libp2p/.test(id))).toBe(true);
  });

  it('`warmpath --version` prints the version from package.json', () => {
    expect(execFileSync(bin, ['--version'], { env: ENV, encoding: 'utf8' }).trim()).toBe(pkg.version);
  });

  it.skipIf(OLD_NODE === undefined)(
    'on a Node.js older than engines.node it says what it needs instead of failing to load',
    () => {
      const res = spawnSync(OLD_NODE!.path, [bin, 'sim', '--port', '0'], { encoding: 'utf8', timeout: 10_000 });
      expect(res.status).toBe(1);
      expect(res.stderr).toContain(
        `warmpath ${pkg.version} needs Node.js ${pkg.engines.node} (this is ${OLD_NODE!.version})`,
      );
    },
  );

  it('`warmpath sim --port 0` prints its listening line and stops on SIGTERM', async () => {
    const { child, line } = await start(['sim', '--port', '0', '--profile', 'tiny']);
    expect(line).toMatch(/^warmpath sim listening on http:\/\/127\.0\.0\.1:\d+ /);
    // An answered request also means the signal handlers, installed right after the line, are in place.
    expect((await fetch(`${/(http:\/\/\S+)/.exec(line)![1]!}/health`)).status).toBe(200);
    child.kill('SIGTERM');
    expect((await once(child, 'exit'))[0]).toBe(0);
  });

  it('computes the same benchmark as the sources: a short DES run of the shipped trace gives byte-identical JSON', () => {
    const args = [
      'bench',
      '--scenario',
      'trace',
      '--mode',
      'des',
      '--duration',
      '5',
      '--policies',
      'warmpath,round-robin',
      '--no-progress',
      '--json',
    ];
    const [installed, source] = [join(dir, 'bench-installed.json'), join(dir, 'bench-source.json')];
    execFileSync(bin, [...args, installed], { env: ENV, stdio: 'ignore' });
    execFileSync(process.execPath, [join(CLI_ROOT, 'src/main.ts'), ...args, source], { stdio: 'ignore' });
    const json = readFileSync(installed, 'utf8');
    expect(json).toContain('"warmpath"');
    expect(json).toBe(readFileSync(source, 'utf8'));
  });

  it('`warmpath demo --smoke` starts its fleet from the installed copy (the bundle finds its own entry point) and exits 0', () => {
    const res = spawnSync(
      bin,
      ['demo', '--smoke', '--replicas', '1', '--routers', '1', '--duration', '1', '--profile', 'tiny'],
      { env: ENV, encoding: 'utf8', timeout: 60_000 },
    );
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/\| warmpath \| 1 \| 0 \|/);
  });

  it('serves one request through router → agent → simulator, all from the installed copy', async () => {
    const fleet = `pack-smoke-${process.pid}`;
    const sim = await start(['sim', '--port', '0', '--profile', 'tiny']);
    const simUrl = /(http:\/\/\S+)/.exec(sim.line)![1]!;
    const key = join(dir, 'swarm.key');
    writeFileSync(key, execFileSync(bin, ['keygen'], { env: ENV }));
    const agent = await start([
      'agent',
      '--engine',
      'vllm',
      '--engine-url',
      simUrl,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--fleet',
      fleet,
      '--swarm-key',
      key,
      '--replica-id',
      'smoke-0',
    ]);
    const router = await start([
      'router',
      '--port',
      '0',
      '--fleet',
      fleet,
      '--swarm-key',
      key,
      '--bootstrap',
      field(agent.line, 'peer'),
    ]);
    const url = field(router.line, 'url');
    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, {
      timeoutMs: 20_000,
      message: 'the router to see the replica',
    });
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> };
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: models.data[0]!.id,
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 4,
      }),
    });
    const body = (await res.json()) as { choices?: unknown[] };
    expect(res.status).toBe(200);
    expect(res.headers.get('x-warmpath-replica')).toBe('smoke-0');
    expect(body.choices?.length).toBe(1);
  });
});
