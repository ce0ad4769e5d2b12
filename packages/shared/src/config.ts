/**
 * Config: one schema per component (defaults with units beside each value),
 * filled from a file (YAML or JSON), then environment variables, then CLI
 * flags — later sources win — validated once and frozen.
 *
 * Field `fooBarMs` is `--foo-bar-ms` on the command line, `WARMPATH_FOO_BAR_MS`
 * in the environment and `fooBarMs` in a file. Unknown keys are errors that name
 * the key, in every source.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';

export type FieldSpec =
  | { type: 'number'; default: number; min?: number; max?: number; integer?: boolean; doc: string }
  | { type: 'string'; default: string; choices?: readonly string[]; doc: string }
  | { type: 'boolean'; default: boolean; doc: string }
  | { type: 'list'; default: readonly string[]; choices?: readonly string[]; doc: string };

export type Schema = Record<string, FieldSpec>;

type ValueOf<F extends FieldSpec> = F extends { type: 'number' }
  ? number
  : F extends { type: 'string' }
    ? string
    : F extends { type: 'boolean' }
      ? boolean
      : readonly string[];

export type ConfigOf<S extends Schema> = { readonly [K in keyof S]: ValueOf<S[K]> };

export class ConfigError extends Error {
  readonly code = 'config_invalid';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const flagName = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
export const envName = (key: string, prefix = 'WARMPATH_'): string =>
  prefix + key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

/** `where`: the source and the field as that source spells it (`command line: --load-factor`), for errors. */
function coerce(spec: FieldSpec, raw: unknown, where: string): unknown {
  switch (spec.type) {
    case 'number': {
      const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
      if (typeof n !== 'number' || !Number.isFinite(n))
        throw new ConfigError(`${where} must be a number (got ${JSON.stringify(raw)})`);
      if (spec.integer === true && !Number.isInteger(n))
        throw new ConfigError(`${where} must be an integer (got ${n})`);
      if (spec.min !== undefined && n < spec.min) throw new ConfigError(`${where} must be >= ${spec.min} (got ${n})`);
      if (spec.max !== undefined && n > spec.max) throw new ConfigError(`${where} must be <= ${spec.max} (got ${n})`);
      return n;
    }
    case 'string': {
      if (typeof raw !== 'string') throw new ConfigError(`${where} must be a string (got ${JSON.stringify(raw)})`);
      if (spec.choices !== undefined && !spec.choices.includes(raw))
        throw new ConfigError(`${where} must be one of ${spec.choices.join(', ')} (got "${raw}")`);
      return raw;
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === '1' || raw === 'yes') return true;
      if (raw === 'false' || raw === '0' || raw === 'no') return false;
      throw new ConfigError(`${where} must be true or false (got ${JSON.stringify(raw)})`);
    }
    case 'list': {
      const items = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : undefined;
      if (items === undefined || !items.every((s) => typeof s === 'string'))
        throw new ConfigError(`${where} must be a list of strings (got ${JSON.stringify(raw)})`);
      const list = items.map((s: string) => s.trim()).filter((s: string) => s !== '');
      const unknown = spec.choices === undefined ? undefined : list.find((s: string) => !spec.choices!.includes(s));
      if (unknown !== undefined)
        throw new ConfigError(`${where} may list only ${spec.choices!.join(', ')} (got "${unknown}")`);
      return Object.freeze(list);
    }
  }
}

export interface ConfigSources {
  /** Path of a YAML or JSON file (also settable with `--config`). */
  file?: string | undefined;
  /** Environment; defaults to none (pass process.env explicitly). */
  env?: Record<string, string | undefined>;
  /** CLI arguments (flags only; positionals are rejected). */
  argv?: readonly string[];
  /** Programmatic values, applied last (tests, the demo, the bench harness). */
  overrides?: Record<string, unknown>;
}

/** Reads a config file's object; errors name the file. */
function readFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} does not parse: ${(err as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(`config file ${path} must hold a mapping of keys to values`);
  return parsed as Record<string, unknown>;
}

/** Parses flags against the schema. `--config FILE` and `--help` are always accepted. */
export function parseFlags(
  schema: Schema,
  argv: readonly string[],
): { values: Record<string, unknown>; configFile?: string; help: boolean } {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {
    config: { type: 'string' },
    help: { type: 'boolean' },
  };
  const byFlag = new Map<string, string>();
  for (const [key, spec] of Object.entries(schema)) {
    const flag = flagName(key);
    byFlag.set(flag, key);
    options[flag] =
      spec.type === 'boolean'
        ? { type: 'boolean' }
        : spec.type === 'list'
          ? { type: 'string', multiple: true }
          : { type: 'string' };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false, allowNegative: true });
  } catch (err) {
    throw new ConfigError((err as Error).message.replace(/\. To specify.*$/s, ''));
  }
  const values: Record<string, unknown> = {};
  for (const [flag, value] of Object.entries(parsed.values)) {
    const key = byFlag.get(flag);
    if (key === undefined) continue;
    values[key] = Array.isArray(value) ? value.flatMap((v) => String(v).split(',')) : value;
  }
  const configFile = typeof parsed.values.config === 'string' ? parsed.values.config : undefined;
  return { values, ...(configFile !== undefined ? { configFile } : {}), help: parsed.values.help === true };
}

/** Builds, validates and freezes a config. Throws ConfigError naming the offending key. */
/** Every config loadConfig produced: components take one of these as is instead of validating again. */
const loaded = new WeakSet<object>();

/** Was `value` produced (validated and frozen) by loadConfig? */
export function isLoadedConfig(value: unknown): boolean {
  return typeof value === 'object' && value !== null && loaded.has(value);
}

export function loadConfig<S extends Schema>(schema: S, sources: ConfigSources = {}): ConfigOf<S> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) out[key] = spec.default;

  const flags = sources.argv !== undefined ? parseFlags(schema, sources.argv) : undefined;
  const file = flags?.configFile ?? sources.file;
  // Errors name a field as its source spells it: --load-factor, WARMPATH_LOAD_FACTOR, "loadFactor".
  const apply = (
    values: Record<string, unknown>,
    source: string,
    spelled: (key: string) => string = (k) => `"${k}"`,
  ): void => {
    for (const [key, raw] of Object.entries(values)) {
      const spec = schema[key];
      if (spec === undefined) throw new ConfigError(`${source}: unknown key "${key}"`);
      out[key] = coerce(spec, raw, `${source}: ${spelled(key)}`);
    }
  };
  if (file !== undefined) apply(readFile(file), `config file ${file}`);
  if (sources.env !== undefined) {
    const fromEnv: Record<string, unknown> = {};
    for (const key of Object.keys(schema)) {
      const v = sources.env[envName(key)];
      if (v !== undefined) fromEnv[key] = v;
    }
    apply(fromEnv, 'environment', (k) => envName(k));
  }
  if (flags !== undefined) apply(flags.values, 'command line', (k) => `--${flagName(k)}`);
  if (sources.overrides !== undefined) apply(sources.overrides, 'overrides');
  const config = Object.freeze(out) as ConfigOf<S>;
  loaded.add(config);
  return config;
}

/** What a command's `--help` says besides its options. */
export interface CommandHelp {
  /** What the command does: a paragraph. */
  description?: string;
  /** Example command lines; a line starting with `#` comments the next one. */
  examples?: readonly string[];
  /** Text after the options and before the examples (the simulator's faults). */
  more?: string;
}

/** A field's default as written on a command line: lists comma-separated, "" for empty. */
export function defaultText(spec: FieldSpec): string {
  const def = spec.type === 'list' ? spec.default.join(',') : String(spec.default);
  return def === '' ? '""' : def;
}

const choicesOf = (spec: FieldSpec): readonly string[] | undefined =>
  spec.type === 'string' || spec.type === 'list' ? spec.choices : undefined;
/** Choices short enough to stand as a flag's value placeholder. */
const SHORT_CHOICES_CHARS = 40;

/** The value placeholder of a field's flag: its choices when short, else its type. */
function placeholder(spec: FieldSpec): string {
  const choices = choicesOf(spec);
  if (choices !== undefined && choices.join('|').length <= SHORT_CHOICES_CHARS)
    return choices.join('|') + (spec.type === 'list' ? ',…' : '');
  return spec.type === 'number' ? 'N' : spec.type === 'string' ? 'TEXT' : 'A,B,…';
}

/** Words of `text` in lines of at most `width` characters, each after `indent`. */
function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) (lines.push(line), (line = ''));
    line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.map((l) => indent + l).join('\n');
}

/** `--help` text generated from the schema: each flag with its value, doc, default, choices and environment name; then the examples. */
export function helpText(command: string, schema: Schema, help: CommandHelp = {}): string {
  const indent = ' '.repeat(6);
  const rows = Object.entries(schema).map(([key, spec]) => {
    const long = choicesOf(spec);
    const choices =
      long !== undefined && long.join('|').length > SHORT_CHOICES_CHARS ? ` One of: ${long.join(', ')}.` : '';
    const flag =
      spec.type === 'boolean'
        ? `--${flagName(key)} | --no-${flagName(key)}`
        : `--${flagName(key)} ${placeholder(spec)}`;
    return `  ${flag}\n${wrap(`${spec.doc.charAt(0).toUpperCase()}${spec.doc.slice(1)}.${choices} Default ${defaultText(spec)}; env ${envName(key)}.`, 74, indent)}`;
  });
  const parts = [`usage: warmpath ${command} [options]`];
  if (help.description !== undefined) parts.push(wrap(help.description, 78, ''));
  parts.push(
    `options (flags win over WARMPATH_* environment variables, which win over the --config file):\n${rows.join('\n')}\n  --config FILE\n${indent}YAML or JSON file with any of the keys above, as camelCase (e.g. ${Object.keys(schema)[0] ?? 'port'}: …).\n  --help\n${indent}This text.`,
  );
  if (help.more !== undefined) parts.push(help.more);
  if (help.examples !== undefined && help.examples.length > 0)
    parts.push(`examples:\n${help.examples.map((l) => `  ${l}`).join('\n')}`);
  return parts.join('\n\n');
}

/** A subcommand's config from process argv/env; prints help and exits on --help. */
export function configFromProcess<S extends Schema>(
  command: string,
  schema: S,
  argv: readonly string[],
  help: CommandHelp = {},
): ConfigOf<S> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(helpText(command, schema, help));
    process.exit(0);
  }
  return loadConfig(schema, { argv, env: process.env });
}
