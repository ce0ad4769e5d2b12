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

/**
 * Every field: `doc` is one rule of at most DOC_MAX_CHARS characters (units and
 * defaults, no measurements; evidence lives in docs/); `essential` puts it in
 * `--help`, the rest appear under `--help-all`.
 */
interface FieldBase {
  doc: string;
  essential?: boolean;
}

export type FieldSpec = FieldBase &
  (
    | { type: 'number'; default: number; min?: number; max?: number; integer?: boolean }
    | { type: 'string'; default: string; choices?: readonly string[] }
    | { type: 'boolean'; default: boolean }
    | { type: 'list'; default: readonly string[]; choices?: readonly string[] }
  );

/** Longest doc string, and longest line of any help text. */
export const DOC_MAX_CHARS = 120;

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

/** Parses flags against the schema. `--config FILE`, `--help` and `--help-all` are always accepted. */
export function parseFlags(
  schema: Schema,
  argv: readonly string[],
): { values: Record<string, unknown>; configFile?: string; help: boolean } {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {
    config: { type: 'string' },
    help: { type: 'boolean' },
    'help-all': { type: 'boolean' },
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
  const help = parsed.values.help === true || parsed.values['help-all'] === true;
  return { values, ...(configFile !== undefined ? { configFile } : {}), help };
}

/** Every config loadConfig produced: components take one of these as is instead of validating again. */
const loaded = new WeakSet<object>();

/** Was `value` produced (validated and frozen) by loadConfig? */
export function isLoadedConfig(value: unknown): boolean {
  return typeof value === 'object' && value !== null && loaded.has(value);
}

/** Builds, validates and freezes a config. Throws ConfigError naming the offending key. */
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
  /** Example command lines (2–4 commands); a line starting with `#` comments the next one. */
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

const INDENT = ' '.repeat(6);
/** Width of wrapped prose (descriptions), below DOC_MAX_CHARS so paragraphs read easily. */
const PROSE_CHARS = 100;

/** One setting: its flag, value and default on one line; its doc (and long choices) wrapped below. */
function settingRows(key: string, spec: FieldSpec): string {
  const long = choicesOf(spec);
  const choices =
    long !== undefined && long.join('|').length > SHORT_CHOICES_CHARS ? ` One of: ${long.join(', ')}.` : '';
  const flag =
    spec.type === 'boolean' ? `--${flagName(key)} | --no-${flagName(key)}` : `--${flagName(key)} ${placeholder(spec)}`;
  const doc = `${spec.doc.charAt(0).toUpperCase()}${spec.doc.slice(1)}.${choices}`;
  const head = `  ${flag}  (default ${defaultText(spec)})`;
  // A default too long for the flag's line (a list) goes after the doc, where it wraps.
  if (head.length <= DOC_MAX_CHARS) return `${head}\n${wrap(doc, DOC_MAX_CHARS - INDENT.length, INDENT)}`;
  const def = ` Default: ${defaultText(spec).replaceAll(',', ', ')}.`;
  return `  ${flag}\n${wrap(doc + def, DOC_MAX_CHARS - INDENT.length, INDENT)}`;
}

/** The keys `--help` lists: the essential ones (all of them when none is marked). */
export function essentialKeys(schema: Schema): string[] {
  const marked = Object.keys(schema).filter((k) => schema[k]!.essential === true);
  return marked.length > 0 ? marked : Object.keys(schema);
}

/**
 * Help text generated from the schema: usage, description, the settings (the
 * essential ones, or every one when `all`: `--help-all`), then the examples.
 * Invariant: no line is longer than DOC_MAX_CHARS.
 */
export function helpText(command: string, schema: Schema, help: CommandHelp = {}, all = false): string {
  const keys = all ? Object.keys(schema) : essentialKeys(schema);
  const first = Object.keys(schema)[0] ?? 'port';
  const heading = all
    ? 'settings (every one):'
    : keys.length < Object.keys(schema).length
      ? `settings (the ${keys.length} most changed; --help-all lists all ${Object.keys(schema).length}):`
      : 'settings:';
  const rows = keys.map((key) => settingRows(key, schema[key]!));
  const parts = [`usage: warmpath ${command} [options]`];
  if (help.description !== undefined) parts.push(wrap(help.description, PROSE_CHARS, ''));
  parts.push(
    `${heading}\n${rows.join('\n')}\n  --config FILE\n${INDENT}YAML or JSON file of settings, keys in camelCase (e.g. ${first}).\n  --help | --help-all\n${INDENT}The most changed settings | every setting.`,
  );
  parts.push(
    wrap(
      `Each setting is also an environment variable and a --config key: --${flagName(first)} is ${envName(first)} and ${first}. Flags win over the environment, which wins over the file.`,
      PROSE_CHARS,
      '',
    ),
  );
  if (help.more !== undefined) parts.push(help.more);
  if (help.examples !== undefined && help.examples.length > 0)
    parts.push(`examples:\n${help.examples.map((l) => `  ${l}`).join('\n')}`);
  return parts.join('\n\n');
}

/** A subcommand's config from process argv/env; prints help and exits on --help or --help-all. */
export function configFromProcess<S extends Schema>(
  command: string,
  schema: S,
  argv: readonly string[],
  help: CommandHelp = {},
): ConfigOf<S> {
  const all = argv.includes('--help-all');
  if (all || argv.includes('--help') || argv.includes('-h')) {
    console.log(helpText(command, schema, help, all));
    process.exit(0);
  }
  return loadConfig(schema, { argv, env: process.env });
}
