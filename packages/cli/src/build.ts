/**
 * Bundles the `warmpath` CLI for npm and the container image: TypeScript
 * sources stay the one source of truth, and Node does not strip types under
 * node_modules, so the package ships JavaScript.
 *
 * Steps:
 *  1. Bundle src/main.ts with rolldown (types stripped, ESM, target Node 22).
 *     Every subcommand stays a lazily loaded chunk, so `warmpath sim` loads no
 *     libp2p; the workspace packages and their third-party dependencies are
 *     inlined, Node's built-ins stay imports.
 *  2. Relocate files that sources find next to themselves with
 *     `new URL('<relative path>', import.meta.url)`: the CLI's own entry point
 *     (the benchmark spawns it) becomes ./main.js, any other file is copied to
 *     dist/assets/ and the URL rewritten. Every chunk lives directly in dist/,
 *     so one relative URL is right wherever the bundler put the code.
 *  3. Write dist/THIRD-PARTY-LICENSES.md from the packages that went into
 *     the bundle.
 *
 * chart.js stays a dependency: the HTML report inlines its UMD build, read
 * from node_modules at run time, rather than importing it.
 *
 * Complexity: one bundler pass, O(modules); about a second on 2 cores.
 * Trade-off: one self-contained bundle (fast install, one dependency, quick
 * start) against a larger tarball than per-package JavaScript with
 * registry dependencies, and library versions fixed at build time.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type OutputChunk, type Plugin } from 'rolldown';

/** packages/cli */
export const CLI_ROOT = fileURLToPath(new URL('..', import.meta.url));
const REPO_ROOT = resolve(CLI_ROOT, '../..');
const ENTRY = join(CLI_ROOT, 'src/main.ts');
/** Entry points other code starts by file (worker threads, the live benchmark's router process): bundled as entries of their own, found by the URL the source uses. */
const WORKERS: Record<string, string> = {
  'des-worker': join(REPO_ROOT, 'packages/bench/src/pool-worker.ts'),
  'bench-router': join(REPO_ROOT, 'packages/bench/src/router-entry.ts'),
};
/** Node's own version floor for the bundle's syntax; package.json's engines is the floor users see. */
const TARGET = 'node22';
/** `msgpackr-extract` is msgpackr's optional native speed-up; msgpackr falls back to JavaScript without it. */
const EXTERNAL = [/^node:/, 'msgpackr-extract'];
const ASSET_URL = /new URL\((['"])([^'"]+)\1,\s*import\.meta\.url\)/g;

export interface BuiltCli {
  /** The bundle's directory (packages/cli/dist unless told otherwise). */
  outDir: string;
  chunks: OutputChunk[];
}

/** Rewrites `new URL(relative, import.meta.url)` in workspace sources; see step 2. */
function relocateAssets(outDir: string): Plugin {
  return {
    name: 'warmpath-relocate-assets',
    transform(code, id) {
      if (id.includes('/node_modules/') || !id.startsWith(REPO_ROOT) || !code.includes('import.meta.url')) return null;
      const rewritten = code.replace(ASSET_URL, (_match, _quote: string, rel: string) => {
        const target = resolve(dirname(id), rel);
        if (target === ENTRY) return `new URL('./main.js', import.meta.url)`;
        const worker = Object.keys(WORKERS).find((name) => WORKERS[name] === target);
        if (worker !== undefined) return `new URL('./${worker}.js', import.meta.url)`;
        if (!existsSync(target)) throw new Error(`${relative(REPO_ROOT, id)} refers to ${rel}, which does not exist`);
        const asset = join('assets', relative(REPO_ROOT, target));
        mkdirSync(dirname(join(outDir, asset)), { recursive: true });
        copyFileSync(target, join(outDir, asset));
        return `new URL('./${asset}', import.meta.url)`;
      });
      return rewritten === code ? null : { code: rewritten };
    },
  };
}

/** The package directory that holds a bundled module (pnpm layout: …/node_modules/<name>/…). */
function packageDirOf(moduleId: string): string | undefined {
  const at = moduleId.lastIndexOf('/node_modules/');
  if (at < 0) return undefined;
  const parts = moduleId.slice(at + '/node_modules/'.length).split('/');
  const name = parts[0]?.startsWith('@') === true ? parts.slice(0, 2).join('/') : parts[0];
  return name === undefined ? undefined : moduleId.slice(0, at) + '/node_modules/' + name;
}

function thirdPartyLicenses(chunks: OutputChunk[]): string {
  const dirs = new Set<string>();
  for (const chunk of chunks)
    for (const id of chunk.moduleIds) {
      const dir = packageDirOf(id);
      if (dir !== undefined) dirs.add(dir);
    }
  const sections = [...dirs].map((dir) => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      license?: string;
    };
    const file = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
    const text =
      file === undefined
        ? `(the package ships no licence file; its package.json says ${pkg.license ?? 'nothing'})`
        : readFileSync(join(dir, file), 'utf8').trim();
    return `## ${pkg.name} ${pkg.version} (${pkg.license ?? 'unknown'})\n\n\`\`\`\n${text}\n\`\`\``;
  });
  sections.sort();
  return `# Third-party software bundled in warmpath\n\n${sections.join('\n\n')}\n`;
}

/** Builds the bundle into `outDir` (replacing it) and returns the emitted chunks. */
export async function buildCli(outDir = join(CLI_ROOT, 'dist')): Promise<BuiltCli> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const result = await build({
    input: { main: ENTRY, ...WORKERS },
    cwd: CLI_ROOT,
    platform: 'node',
    external: EXTERNAL,
    transform: { target: TARGET },
    plugins: [relocateAssets(outDir)],
    logLevel: 'warn',
    output: {
      dir: outDir,
      format: 'esm',
      entryFileNames: '[name].js',
      chunkFileNames: '[name]-[hash].js',
      sourcemap: false,
    },
  });
  const chunks = result.output.filter((o): o is OutputChunk => o.type === 'chunk');
  writeFileSync(join(outDir, 'THIRD-PARTY-LICENSES.md'), thirdPartyLicenses(chunks));
  return { outDir, chunks };
}

if (import.meta.main) {
  const t0 = performance.now();
  const { outDir, chunks } = await buildCli();
  console.log(
    `warmpath: bundled ${chunks.length} chunks into ${relative(process.cwd(), outDir) || '.'} in ${Math.round(performance.now() - t0)} ms`,
  );
}
