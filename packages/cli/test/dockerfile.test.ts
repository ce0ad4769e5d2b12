/**
 * The Dockerfile, checked offline (no Docker engine needed): a multi-stage
 * build whose runtime stage is small, unprivileged and runs `warmpath`; every
 * file the build copies exists and is in the build context; the pinned pnpm is
 * the workspace's. The build commands themselves are what the package test
 * runs (install, bundle, pack, install the tarball).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_ROOT } from '../src/build.ts';

const REPO = join(CLI_ROOT, '../..');

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  body: Instruction[];
}

/** Dockerfile → stages of instructions (continuation lines joined, comments dropped). */
function parseDockerfile(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\s*\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') {
      const m = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: m?.[1] ?? args, name: m?.[2], body: [] });
    } else if (stages.length === 0) {
      throw new Error(`${op} before the first FROM`);
    } else {
      stages.at(-1)!.body.push({ op: op.toUpperCase(), args });
    }
  }
  return stages;
}

/** `.dockerignore` patterns as a predicate (Docker's rules: `**` any depth, a matched directory excludes what is under it). */
function dockerignore(text: string): (path: string) => boolean {
  const patterns = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((p) => {
      const glob = p
        .replace(/[.+^${}()|[\]]/g, '\\$&')
        .replace(/\*\*\//g, '\0')
        .replace(/\*/g, '[^/]*')
        .replace(/\0/g, '(?:.*/)?');
      return new RegExp(`^${glob}(?:/.*)?$`);
    });
  return (path) => patterns.some((re) => re.test(path));
}

const stages = parseDockerfile(readFileSync(join(REPO, 'Dockerfile'), 'utf8'));
const ignored = dockerignore(readFileSync(join(REPO, '.dockerignore'), 'utf8'));
const build = stages.slice(0, -1);
const runtime = stages.at(-1)!;
const rootPkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { packageManager: string };
const cliPkg = JSON.parse(readFileSync(join(CLI_ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  bin: Record<string, string>;
};
const sources = (i: Instruction): string[] =>
  i.args
    .split(/\s+/)
    .filter((a) => !a.startsWith('--'))
    .slice(0, -1);

describe('Dockerfile', () => {
  it('parses, and the parser sees through comments and continuation lines', () => {
    const s = parseDockerfile('# c\nFROM a AS b\nRUN x \\\n && y\nFROM c\nUSER 1\n');
    expect(s).toEqual([
      { from: 'a', name: 'b', body: [{ op: 'RUN', args: 'x && y' }] },
      { from: 'c', name: undefined, body: [{ op: 'USER', args: '1' }] },
    ]);
  });

  it('is multi-stage: a named build stage, then a runtime stage on a slim or distroless Node.js that engines allows', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(build.every((s) => s.name !== undefined)).toBe(true);
    const m = /^(?:node:(\d+)(?:\.\d+)*-slim|gcr\.io\/distroless\/nodejs(\d+)-debian\d+(?::\S+)?)$/.exec(runtime.from);
    expect(m, `runtime base ${runtime.from}`).not.toBeNull();
    const nodeMajor = Number(m![1] ?? m![2]);
    expect(nodeMajor).toBeGreaterThanOrEqual(Number(/^>=(\d+)/.exec(cliPkg.engines.node)![1]));
  });

  it('runs as a non-root user, by number', () => {
    const users = runtime.body.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users.length).toBeGreaterThan(0);
    const uid = users.at(-1)!.split(':')[0]!;
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
  });

  it('adds nothing from the network and copies into the runtime stage only from the build stage', () => {
    for (const s of stages) expect(s.body.filter((i) => i.op === 'ADD')).toEqual([]);
    const copies = runtime.body.filter((i) => i.op === 'COPY');
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) expect(c.args).toMatch(new RegExp(`--from=(${build.map((s) => s.name).join('|')})\\b`));
  });

  it('has an exec-form ENTRYPOINT at the warmpath bin that `npm install --global --prefix` creates, and a CMD', () => {
    const entry = runtime.body.filter((i) => i.op === 'ENTRYPOINT').at(-1);
    const argv = JSON.parse(entry!.args) as string[];
    const prefix = /npm install --global --prefix (\S+)/.exec(
      build
        .flatMap((s) => s.body)
        .map((i) => i.args)
        .join('\n'),
    )?.[1];
    expect(prefix).toBeDefined();
    expect(argv).toEqual([`${prefix}/bin/${Object.keys(cliPkg.bin)[0]}`]);
    expect(runtime.body.some((i) => i.op === 'CMD')).toBe(true);
  });

  it('copies sources that exist and are in the build context, including every workspace manifest', () => {
    const copied = build
      .flatMap((s) => s.body)
      .filter((i) => i.op === 'COPY' && !i.args.includes('--from='))
      .flatMap(sources);
    for (const src of copied) {
      expect(existsSync(join(REPO, src)), `${src} exists`).toBe(true);
      expect(ignored(src), `${src} is not in .dockerignore`).toBe(false);
    }
    const manifests = [
      ...readdirSync(join(REPO, 'packages')).map((p) => `packages/${p}/package.json`),
      'test/package.json',
    ].filter((p) => existsSync(join(REPO, p)));
    for (const m of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', ...manifests])
      expect(copied, `${m} is copied before the install`).toContain(m);
    // What the bundle reads must reach the context; what it must not carry stays out.
    expect(ignored('packages/sim/src/cli.ts')).toBe(false);
    expect(ignored('packages/bench/traces/mooncake-synthetic.jsonl')).toBe(false);
    for (const out of ['node_modules/x', 'packages/cli/node_modules/x', 'packages/cli/dist/main.js', '.git/HEAD'])
      expect(ignored(out), out).toBe(true);
  });

  it('pins the pnpm the workspace declares', () => {
    const runs = stages
      .flatMap((s) => s.body)
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join('\n');
    const pinned = [...runs.matchAll(/pnpm@(\S+)/g)].map((m) => m[1]);
    expect(pinned.length).toBeGreaterThan(0);
    for (const v of pinned) expect(`pnpm@${v}`).toBe(rootPkg.packageManager);
  });
});
