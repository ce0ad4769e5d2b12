/**
 * The repository's layout rules, checked against the tree: no import cycle
 * among the packages' sources (packages/*\/src, type imports included: a
 * cycle of types is still two modules that cannot be read apart), and
 * docs/ARCHITECTURE.md's module map names every source file and folder and
 * nothing that does not exist.
 *
 * Steps: read every packages/*\/src/**\/*.ts file's import specifiers
 * (static, `import type`, `export … from`, dynamic `import('…')`), resolve
 * relative ones and workspace package ones (through each package.json's
 * `exports`), then a depth-first search reports the first cycle found.
 * Complexity: O(files + imports).
 */
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = join(REPO, 'packages');

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules') continue;
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** Every package's source files (repository-relative paths), tests excluded; `all`: not only TypeScript. */
function sourceFiles(all = false): string[] {
  return readdirSync(PACKAGES)
    .filter((p) => existsSync(join(PACKAGES, p, 'src')))
    .flatMap((p) => walk(join(PACKAGES, p, 'src')))
    .filter((f) => (all || f.endsWith('.ts')) && !f.endsWith('.test.ts'))
    .map((f) => relative(REPO, f));
}

/** Workspace package specifier → absolute file, from each package.json's exports. */
function packageExports(): Map<string, string> {
  const out = new Map<string, string>();
  for (const dir of readdirSync(PACKAGES)) {
    const file = join(PACKAGES, dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name: string; exports?: Record<string, string> };
    for (const [sub, target] of Object.entries(pkg.exports ?? {}))
      out.set(sub === '.' ? pkg.name : `${pkg.name}/${sub.slice(2)}`, resolve(PACKAGES, dir, target));
  }
  return out;
}

const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s(?:[^'";]*?\sfrom\s)?\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Each source file's imports of other source files (repository-relative). */
export function importGraph(): Map<string, string[]> {
  const files = sourceFiles();
  const known = new Set(files);
  const exportsOf = packageExports();
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const text = readFileSync(join(REPO, f), 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(SPECIFIER)) {
      const spec = m[1] ?? m[2]!;
      const abs = spec.startsWith('.') ? resolve(REPO, dirname(f), spec) : exportsOf.get(spec);
      if (abs === undefined) continue;
      const rel = relative(REPO, abs);
      if (known.has(rel)) deps.push(rel);
    }
    graph.set(f, deps);
  }
  return graph;
}

/** The first import cycle found, as the files around it, or undefined. */
export function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (f: string): string[] | undefined => {
    state.set(f, 'open');
    path.push(f);
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === 'open') return [...path.slice(path.indexOf(d)), d];
      if (state.get(d) === undefined) {
        const c = visit(d);
        if (c !== undefined) return c;
      }
    }
    path.pop();
    state.set(f, 'done');
    return undefined;
  };
  for (const f of graph.keys()) {
    if (state.get(f) !== undefined) continue;
    const c = visit(f);
    if (c !== undefined) return c;
  }
  return undefined;
}

/** A module-map row: its package, its folder (repository-relative, with a trailing slash), the file names it gives. */
interface MapRow {
  readonly pkg: string;
  readonly folder: string;
  readonly files: readonly string[];
}

const FILE_NAME = /^[\w.-]+\.(?:ts|js|html)$/;

/** docs/ARCHITECTURE.md's module map: the table under "## Module map" (a blank package cell repeats the row above's). */
export function moduleMap(markdown: string): MapRow[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Module map'));
  if (section === undefined) throw new Error('docs/ARCHITECTURE.md has no "## Module map" section');
  const rows: MapRow[] = [];
  let pkg = '';
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5 || !cells[2]!.startsWith('`')) continue;
    pkg = cells[1] !== '' ? cells[1]! : pkg;
    const folder = `packages/${pkg}/${cells[2]!.replaceAll('`', '')}`;
    const files = [...cells[3]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((t) => FILE_NAME.test(t));
    rows.push({ pkg, folder, files });
  }
  return rows;
}

/** What the map gets wrong against the tree: named files that do not exist, source files and folders it misses. */
export function mapErrors(rows: readonly MapRow[], files: readonly string[]): string[] {
  const errors: string[] = [];
  const byFolder = new Map(rows.map((r) => [r.folder, r]));
  for (const r of rows)
    for (const f of r.files) if (!files.includes(r.folder + f)) errors.push(`named but missing: ${r.folder}${f}`);
  for (const f of files) {
    const folder = f.slice(0, f.lastIndexOf('/') + 1);
    const row = byFolder.get(folder);
    if (row === undefined) errors.push(`folder not in the map: ${folder}`);
    else if (row.files.length > 0 && !row.files.includes(f.slice(folder.length)))
      errors.push(`file not in the map: ${f}`);
  }
  return [...new Set(errors)];
}

describe('the source layout', () => {
  it('finds a cycle where there is one (the check itself)', () => {
    const g = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(findCycle(g)).toEqual(['a.ts', 'b.ts', 'c.ts', 'a.ts']);
    expect(
      findCycle(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toBeUndefined();
  });

  it('has no import cycle among packages/*/src', () => {
    const graph = importGraph();
    // The graph is real: the router's entry reaches its core and the shared runtime.
    expect(graph.get('packages/router/src/router.ts')).toContain('packages/router/src/core/router-core.ts');
    expect(graph.get('packages/router/src/router.ts')).toContain('packages/shared/src/runtime.ts');
    expect(findCycle(graph)?.join(' → ')).toBeUndefined();
  });

  it('checks the module map against the tree (the check itself)', () => {
    const rows = moduleMap(
      [
        '## Module map',
        '| package | folder | what |',
        '|---|---|---|',
        '| a | `src/` | `x.ts` (the x), `select` |',
        '| | `src/whole/` | a folder as a whole |',
        '## Next',
        '| b | `src/` | `y.ts` |',
      ].join('\n'),
    );
    expect(rows).toEqual([
      { pkg: 'a', folder: 'packages/a/src/', files: ['x.ts'] },
      { pkg: 'a', folder: 'packages/a/src/whole/', files: [] },
    ]);
    expect(mapErrors(rows, ['packages/a/src/x.ts', 'packages/a/src/whole/any.ts'])).toEqual([]);
    expect(mapErrors(rows, ['packages/a/src/y.ts', 'packages/a/src/other/z.ts'])).toEqual([
      'named but missing: packages/a/src/x.ts',
      'file not in the map: packages/a/src/y.ts',
      'folder not in the map: packages/a/src/other/',
    ]);
  });

  it("docs/ARCHITECTURE.md's module map names every source file and folder, and only those that exist", () => {
    const rows = moduleMap(readFileSync(join(REPO, 'docs/ARCHITECTURE.md'), 'utf8'));
    expect(rows.length).toBeGreaterThan(10);
    expect(mapErrors(rows, sourceFiles(true))).toEqual([]);
  });
});
