import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, helpText, loadConfig, type Schema } from '../src/config.ts';

const schema = {
  port: { type: 'number', default: 8080, min: 0, max: 65535, integer: true, doc: 'listen port' },
  fleet: { type: 'string', default: 'default', doc: 'fleet name' },
  policy: { type: 'string', default: 'warmpath', choices: ['warmpath', 'round-robin'], doc: 'placement policy' },
  stateTtlMs: { type: 'number', default: 3000, min: 1, doc: 'state TTL, ms' },
  bootstrap: { type: 'list', default: [], doc: 'peers' },
  off: { type: 'list', default: [], choices: ['balance', 'overlay'], doc: 'steps switched off' },
  verbose: { type: 'boolean', default: false, doc: 'log more' },
} as const satisfies Schema;

const dir = mkdtempSync(join(tmpdir(), 'wp-config-'));

describe('config', () => {
  it('defaults are frozen', () => {
    const c = loadConfig(schema);
    expect(c.port).toBe(8080);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('flags override env, which overrides the file', () => {
    const file = join(dir, 'a.yaml');
    writeFileSync(file, 'port: 1000\nfleet: from-file\nstateTtlMs: 10\n');
    const c = loadConfig(schema, {
      file,
      env: { WARMPATH_PORT: '2000', WARMPATH_FLEET: 'from-env', UNRELATED: 'x' },
      argv: ['--port', '3000', '--bootstrap', '/ip4/1/tcp/1', '--bootstrap', '/ip4/2/tcp/2,/ip4/3/tcp/3', '--verbose'],
    });
    expect(c.port).toBe(3000);
    expect(c.fleet).toBe('from-env');
    expect(c.stateTtlMs).toBe(10);
    expect(c.bootstrap).toEqual(['/ip4/1/tcp/1', '/ip4/2/tcp/2', '/ip4/3/tcp/3']);
    expect(c.verbose).toBe(true);
  });

  it('reads JSON files and --config', () => {
    const file = join(dir, 'b.json');
    writeFileSync(file, JSON.stringify({ policy: 'round-robin' }));
    expect(loadConfig(schema, { argv: ['--config', file] }).policy).toBe('round-robin');
  });

  it('rejects unknown keys, naming them, in every source', () => {
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'prot: 1\n');
    expect(() => loadConfig(schema, { file })).toThrow(/unknown key "prot"/);
    expect(() => loadConfig(schema, { argv: ['--prot', '1'] })).toThrow(ConfigError);
    expect(() => loadConfig(schema, { overrides: { nope: 1 } })).toThrow(/unknown key "nope"/);
  });

  it('validates values and says what is acceptable', () => {
    expect(() => loadConfig(schema, { argv: ['--port', 'abc'] })).toThrow(
      'command line: --port must be a number (got "abc")',
    );
    expect(() => loadConfig(schema, { env: { WARMPATH_STATE_TTL_MS: '-1' } })).toThrow(
      /^environment: WARMPATH_STATE_TTL_MS must be >= /,
    );
    expect(() => loadConfig(schema, { overrides: { port: 'x' } })).toThrow('overrides: "port" must be a number');
    expect(() => loadConfig(schema, { argv: ['--port', '70000'] })).toThrow(/<= 65535/);
    expect(() => loadConfig(schema, { env: { WARMPATH_POLICY: 'random' } })).toThrow(/one of warmpath, round-robin/);
    expect(() => loadConfig(schema, { env: { WARMPATH_VERBOSE: 'maybe' } })).toThrow(/true or false/);
    expect(() => loadConfig(schema, { file: join(dir, 'missing.yaml') })).toThrow(/cannot read config file/);
  });

  it('checks every item of a list with choices, from flags, env, files and overrides alike', () => {
    expect(loadConfig(schema, { argv: ['--off', 'balance,overlay'] }).off).toEqual(['balance', 'overlay']);
    expect(loadConfig(schema, { env: { WARMPATH_OFF: ' overlay ' } }).off).toEqual(['overlay']);
    expect(loadConfig(schema, { overrides: { off: 'balance' } }).off).toEqual(['balance']);
    expect(loadConfig(schema, { overrides: { off: [] } }).off).toEqual([]);
    expect(() => loadConfig(schema, { argv: ['--off', 'balance,warp'] })).toThrow(
      /--off may list only balance, overlay \(got "warp"\)/,
    );
    expect(() => loadConfig(schema, { overrides: { off: ['nope'] } })).toThrow(ConfigError);
  });

  it('generates help from the schema: every field when none is essential', () => {
    const h = helpText('router', schema);
    expect(h).toContain('--state-ttl-ms N  (default 3000)');
    expect(h).toContain('WARMPATH_PORT');
  });

  it('--help lists the essential fields, --help-all every one', () => {
    const marked = { ...schema, fleet: { ...schema.fleet, essential: true } } as const satisfies Schema;
    const short = helpText('router', marked);
    expect(short).toContain('--fleet TEXT');
    expect(short).not.toContain('--state-ttl-ms');
    expect(short).toContain('the 1 most changed; --help-all lists all 7');
    expect(helpText('router', marked, {}, true)).toContain('--state-ttl-ms');
    expect(() => loadConfig(marked, { argv: ['--help-all'] })).not.toThrow();
  });
});

describe('validated once', () => {
  it('marks what loadConfig produced, and nothing else', async () => {
    const { isLoadedConfig, loadConfig } = await import('../src/config.ts');
    const c = loadConfig({ port: { type: 'number', default: 1, doc: 'p' } }, { overrides: {} });
    expect(isLoadedConfig(c)).toBe(true);
    expect(isLoadedConfig({ ...c })).toBe(false);
    expect(isLoadedConfig(undefined)).toBe(false);
  });
});
