/**
 * Every benchmark script under packages/<pkg>/bench/ runs, so none can rot:
 * each with the tiny arguments of its header's `Smoke:` line (seconds, not
 * minutes), which must exit 0 and print figures (a line with a number on
 * stdout). A new script needs a `Smoke:` line to pass; a `Needs:` line
 * names programs it cannot run without (skipped, saying so, where one is
 * missing). Scripts run SMOKE_PARALLEL at a time: most of their time is
 * child processes starting. They typecheck with the rest (tsconfig
 * includes packages/*\/bench).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
/** Scripts running at once: 2, beside the other end-to-end files (two at a time themselves) on 2 cores. */
const SMOKE_PARALLEL = 2;
/**
 * One script's limit, ms: a generous sanity bound (a smoke run takes 3–25 s
 * on an idle machine, several times that beside the rest of the suite on 2
 * shared cores); a hung script is killed and fails.
 */
const SCRIPT_TIMEOUT_MS = 300_000;

const scripts = readdirSync(join(REPO, 'packages'))
  .flatMap((pkg) => {
    try {
      return readdirSync(join(REPO, 'packages', pkg, 'bench'))
        .filter((f) => f.endsWith('.ts'))
        .map((f) => `packages/${pkg}/bench/${f}`);
    } catch {
      return [];
    }
  })
  .sort();

/** The `Smoke:` line's arguments: words, or 'single-quoted' ones; undefined without the line. */
export function smokeArgs(source: string): string[] | undefined {
  const m = /^\s*\*\s*Smoke:(.*)$/m.exec(source);
  if (m === null) return undefined;
  return [...m[1]!.matchAll(/'([^']*)'|(\S+)/g)].map((w) => w[1] ?? w[2]!);
}

/**
 * The `Needs:` line's programs (absolute paths), which the script cannot run
 * without: Debian packages that .ci/run installs (plot.ts draws in
 * Chromium). A machine without one skips the script, saying which, as the
 * status-page test does.
 */
export function missingNeeds(source: string): string[] {
  const m = /^\s*\*\s*Needs:(.*)$/m.exec(source);
  return m === null
    ? []
    : m[1]!
        .trim()
        .split(/\s+/)
        .filter((path) => !existsSync(path));
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(script: string, args: string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), SCRIPT_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// A small pool: each test awaits its own script's run, at most SMOKE_PARALLEL at once.
let running = 0;
const waiting: Array<() => void> = [];
async function pooled<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= SMOKE_PARALLEL) await new Promise<void>((r) => waiting.push(r));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

describe('benchmark scripts (smoke)', () => {
  it('finds the scripts', () => {
    expect(scripts.length).toBeGreaterThan(5);
    expect(scripts).toContain('packages/router/bench/overhead.ts');
  });

  // Every script is started (through the pool) before the tests; each test awaits its own run.
  const runs = new Map<string, { args: string[] | undefined; missing: string[]; out: Promise<Outcome> | undefined }>();
  beforeAll(() => {
    for (const script of scripts) {
      const source = readFileSync(join(REPO, script), 'utf8');
      const args = smokeArgs(source);
      const missing = missingNeeds(source);
      runs.set(script, {
        args,
        missing,
        out: args === undefined || missing.length > 0 ? undefined : pooled(() => run(script, args)),
      });
    }
  });

  it.for(scripts)(
    '%s runs with its Smoke: arguments and prints figures',
    { timeout: SCRIPT_TIMEOUT_MS * Math.ceil(scripts.length / SMOKE_PARALLEL) },
    async (script, ctx) => {
      const { args, missing, out: pending } = runs.get(script)!;
      if (missing.length > 0)
        ctx.skip(`${script} needs ${missing.join(', ')}, not installed here (.ci/run installs it)`);
      expect(args, `${script} has no "Smoke:" line in its header comment (tiny arguments for this test)`).toBeDefined();
      const out = (await pending)!;
      expect(out.code, `${script} ${args!.join(' ')} exited ${out.code}:\n${out.stderr}`).toBe(0);
      expect(out.stdout, `${script} printed no figures`).toMatch(/\d/);
    },
  );
});

describe('benchmark scripts: --help and a wrong option', () => {
  const withOptions = scripts.filter((s) => readFileSync(join(REPO, s), 'utf8').includes('scriptArgs(import.meta.url'));

  it('most scripts read their options with scriptArgs', () => {
    expect(withOptions.length).toBeGreaterThanOrEqual(27);
  });

  it.for(withOptions)(
    '%s: --help prints its header and exits 0; an unknown option says so and exits 2',
    { timeout: SCRIPT_TIMEOUT_MS },
    async (script) => {
      const [help, wrong] = await Promise.all([
        pooled(() => run(script, ['--help'])),
        pooled(() => run(script, ['--no-such-option'])),
      ]);
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toMatch(/Smoke:/);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(/^error: .*--no-such-option/);
      expect(wrong.stderr).toMatch(/more: --help/);
    },
  );
});
