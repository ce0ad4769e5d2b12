/**
 * Every benchmark script under packages/<pkg>/bench/ runs, so none can rot:
 * each with the tiny arguments of its header's `Smoke:` line (seconds, not
 * minutes), which must exit 0 and print figures (a line with a number on
 * stdout). A new script needs a `Smoke:` line to pass. Scripts run
 * SMOKE_PARALLEL at a time: most of their time is child processes starting.
 * They typecheck with the rest (tsconfig includes packages/*\/bench).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
/** Scripts running at once: 3 keeps the whole file within a minute or two on 2 shared cores. */
const SMOKE_PARALLEL = 3;
/** One script's limit, ms: a smoke run that takes longer has lost its short mode. */
const SCRIPT_TIMEOUT_MS = 90_000;

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

  it.concurrent.each(scripts)('%s runs with its Smoke: arguments and prints figures', async (script) => {
    const args = smokeArgs(readFileSync(join(REPO, script), 'utf8'));
    expect(args, `${script} has no "Smoke:" line in its header comment (tiny arguments for this test)`).toBeDefined();
    const out = await pooled(() => run(script, args!));
    expect(out.code, `${script} ${args!.join(' ')} exited ${out.code}:\n${out.stderr}`).toBe(0);
    expect(out.stdout, `${script} printed no figures`).toMatch(/\d/);
  }, SCRIPT_TIMEOUT_MS * 2);
});
