/**
 * `warmpath --help` and each command's `--help` and `--help-all`, from real
 * processes: `--help` lists the essential settings, `--help-all` every one, no
 * line is longer than DOC_MAX_CHARS and no doc string carries a measurement;
 * every example parses against its command's schema (so an example cannot
 * name a flag that does not exist or a value out of range); and
 * docs/CONFIGURATION.md is what the schemas generate.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DOC_MAX_CHARS, essentialKeys, flagName, loadConfig, type Schema } from '@warmpath/shared/runtime';
import { describe, expect, it } from 'vitest';
import { CLI_ROOT } from '../src/build.ts';
import { COMMANDS, CONFIGURATION_MD, configurationReference } from '../src/config-docs.ts';

const CLI = join(CLI_ROOT, 'src/main.ts');
const help = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 20_000 });

/** The command lines of a help text's examples: continuation lines joined, comments dropped. */
function exampleLines(text: string): string[] {
  const block = text.slice(text.indexOf('\nexamples:\n') + '\nexamples:\n'.length).split('\n\n')[0]!;
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.includes('warmpath '));
}

/** Parses one example (`[ENV=…] warmpath <command> flags…`) against its command's schema; throws what the CLI would. */
function parseExample(line: string): void {
  const words = line.split(/\s+/);
  const at = words.indexOf('warmpath');
  const command = COMMANDS.find((c) => c.name === words[at + 1]);
  if (command === undefined) throw new Error(`"${line}" runs no known command`);
  const argv = words.slice(at + 2);
  // The example's --config file is not here: check its flags without it.
  const i = argv.indexOf('--config');
  if (i >= 0) argv.splice(i, 2);
  const env = Object.fromEntries(words.slice(0, at).map((w) => w.split('=') as [string, string]));
  loadConfig(command.schema as Schema, { argv, env });
}

describe('warmpath --help', () => {
  it('lists every command with examples that parse', () => {
    const res = help(['--help']);
    expect(res.status).toBe(0);
    for (const { name } of COMMANDS) expect(res.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    const examples = exampleLines(res.stdout);
    expect(examples.length).toBeGreaterThanOrEqual(3);
    for (const line of examples) expect(() => parseExample(line), line).not.toThrow();
  });

  it('an unknown command prints the usage on stderr and exits 2', () => {
    const res = help(['frobnicate']);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('unknown command "frobnicate"');
  });
});

/** Lines of a help text that name a setting's flag (`  --load-factor N  (default 1.75)`). */
const settingLines = (text: string): string[] => text.split('\n').filter((l) => /^ {2}--[a-z]/.test(l));
/** Most settings `--help` may list: the essential ones, --config and --help. */
const MAX_HELP_SETTINGS = 40;
/** What a measurement looks like in a doc string: its figures belong in docs/, the doc states the rule. */
const MEASUREMENT = /\bpoints\b|DES seeds?|[+−]\d[\d.]*\s*%|→ \d|\b(p50|p99) (\+|−|-|\d)/;

describe.each(COMMANDS.map((c) => [c.name, c] as const))('warmpath %s --help', (name, command) => {
  const res = help([name, '--help']);
  const all = help([name, '--help-all']);
  const keys = Object.keys(command.schema);
  const essential = essentialKeys(command.schema);

  it('describes the command and lists only the essential settings', () => {
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toContain(`usage: warmpath ${name} [options]`);
    expect(res.stdout).toContain(command.help.description!.slice(0, 40));
    expect(settingLines(res.stdout).length).toBeLessThanOrEqual(MAX_HELP_SETTINGS);
    for (const key of keys) {
      const listed = new RegExp(`^  --${flagName(key)}(?=\\s)`, 'm');
      if (essential.includes(key)) expect(res.stdout, key).toMatch(listed);
      else expect(res.stdout, key).not.toMatch(listed);
    }
    expect(res.stdout).toContain('--help-all');
  });

  it('--help-all lists every setting', () => {
    expect(all.status, all.stderr).toBe(0);
    for (const key of keys) expect(all.stdout, key).toMatch(new RegExp(`^  --${flagName(key)}(?=\\s)`, 'm'));
  });

  it(`has no line over ${DOC_MAX_CHARS} characters, and each doc is one rule without measurements`, () => {
    for (const line of [...res.stdout.split('\n'), ...all.stdout.split('\n')])
      expect(line.length, line).toBeLessThanOrEqual(DOC_MAX_CHARS);
    for (const [key, spec] of Object.entries(command.schema)) {
      expect(spec.doc.length, key).toBeLessThanOrEqual(DOC_MAX_CHARS);
      expect(spec.doc, key).not.toMatch(MEASUREMENT);
    }
  });

  it('has 2 to 4 examples, and each parses against the schema', () => {
    const examples = exampleLines(res.stdout);
    expect(examples.length).toBeGreaterThanOrEqual(2);
    expect(examples.length).toBeLessThanOrEqual(4);
    for (const line of examples) {
      expect(line).toContain(`warmpath ${name}`);
      expect(() => parseExample(line), line).not.toThrow();
    }
  });
});

describe.each([[[]], [['--help']], [['--help-all']], [['keygen', '--help']], [['keygen', '--help-all']]])(
  'warmpath %j',
  (args) => {
    it(`prints help with no line over ${DOC_MAX_CHARS} characters`, () => {
      const res = help(args);
      expect(res.status, res.stderr).toBe(0);
      expect(res.stdout).toContain('usage: warmpath');
      for (const line of res.stdout.split('\n')) expect(line.length, line).toBeLessThanOrEqual(DOC_MAX_CHARS);
    });
  },
);

describe("the README's commands", () => {
  const readme = readFileSync(join(CLI_ROOT, '../../README.md'), 'utf8');
  const scripts = Object.keys(
    (JSON.parse(readFileSync(join(CLI_ROOT, '../../package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts,
  );

  it('name npm scripts that exist', () => {
    const named = [...readme.matchAll(/\bnpm run ([\w:-]+)/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(3);
    for (const name of named) expect(scripts, name).toContain(name);
  });

  it('give each warmpath command flags and values its schema accepts', () => {
    // Code blocks (continuation lines joined) and inline code; `npm run warmpath -- x` is `warmpath x`.
    const blocks = [...readme.matchAll(/```\w*\n([\s\S]*?)```/g)].flatMap((m) =>
      m[1]!.replace(/\\\n\s*/g, '').split('\n'),
    );
    const inline = [...readme.matchAll(/`([^`\n]*warmpath [^`\n]*)`/g)].map((m) => m[1]!);
    const lines = [...blocks, ...inline]
      .map((l) => l.replace(/#.*$/, '').replace('npm run warmpath -- ', 'warmpath ').trim())
      // Command lines, not the list of commands (`warmpath sim | agent | …`).
      .filter((l) => /^warmpath (sim|agent|router|demo|bench|goals)\b/.test(l) && !l.includes(' | '))
      // A placeholder value (`--scenario <name>`) stands for any of the choices.
      .map((l) => l.replace(/ --[\w-]+ <[^>]+>/g, ''));
    expect(lines.length).toBeGreaterThanOrEqual(5);
    for (const line of lines) expect(() => parseExample(line), line).not.toThrow();
  });
});

describe('docs/CONFIGURATION.md', () => {
  it('is what the schemas generate (run `npm run docs:config` after changing a schema)', () => {
    expect(readFileSync(CONFIGURATION_MD, 'utf8')).toBe(configurationReference());
  });

  it('has a row for every key of every command', () => {
    const doc = readFileSync(CONFIGURATION_MD, 'utf8');
    for (const { name, schema } of COMMANDS) {
      const section = doc.slice(doc.indexOf(`## warmpath ${name}\n`));
      for (const key of Object.keys(schema))
        expect(section, `${name} ${key}`).toContain(`| \`${key}\` | \`--${flagName(key)}\` |`);
    }
  });
});
