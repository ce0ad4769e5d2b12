/**
 * Command-line options of the repository's scripts (benchmarks and tools):
 * node:util's strict parseArgs, plus what a user reaching for a script
 * expects of it.
 *  - `--help` (or `-h`) prints the script's header comment — what it
 *    measures, its usage lines and options — and exits 0.
 *  - An unknown or malformed option prints what was wrong and the header's
 *    usage lines (those that start with `node`), and exits 2, instead of a
 *    stack trace.
 * The header is the first block comment of the script's file, so the usage
 * lives in one place: the comment every script opens with.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from './config.ts';

/** The text of the first block comment of `source`, without its leading asterisks. */
export function scriptHeader(source: string): string {
  const body = /\/\*\*?([\s\S]*?)\*\//.exec(source)?.[1] ?? '';
  return body
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

/** The header's usage lines: those that run the script with node. */
export function usageLines(header: string): string[] {
  return header
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^(node|node_modules\/\.bin\/node) /.test(line));
}

/** parseArgs for the script at `url` (its `import.meta.url`), with `--help` and clear option errors (module header). */
export function scriptArgs<T extends ParseArgsConfig>(url: string, config: T): ReturnType<typeof parseArgs<T>> {
  const header = (): string => scriptHeader(readFileSync(fileURLToPath(url), 'utf8'));
  const argv = config.args ?? process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${header()}\n`);
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (e) {
    const usage = usageLines(header()).map((line) => `  ${line}`);
    const lines = [`error: ${(e as Error).message}`, ...(usage.length > 0 ? ['usage:', ...usage] : []), 'more: --help'];
    process.stderr.write(`${lines.join('\n')}\n`);
    process.exit(2);
  }
}

/**
 * `key=value` settings given to a flag (`--router-set`, `--agent-set`), as a
 * record: a list of items, or one string of them separated by commas. An
 * item without a key before its `=` is a ConfigError naming the flag.
 */
export function keyValues(flag: string, items: string | readonly string[]): Record<string, string> {
  const list = typeof items === 'string' ? items.split(',').filter((x) => x !== '') : items;
  const out: Record<string, string> = {};
  for (const kv of list) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new ConfigError(`command line: ${flag} expects key=value (got "${kv}")`);
    out[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return out;
}
