/** The tenants file: YAML or JSON, defaults, every problem named; the band rule. */
import { describe, expect, it } from 'vitest';
import { parseTenants, TenantFileError } from '../src/tenants/file.ts';
import { bandFor, Tenancy } from '../src/tenants/tenancy.ts';

const YAML = `
tenants:
  - name: search
    keys: [sk-search-1]
    weight: 2
    priorities: [interactive, standard]
    limits: { requestsPerMinute: 1200, tokensPerMinute: 2000000, concurrent: 64 }
  - name: nightly-evals
    keys: [sk-evals]
    priorities: [batch]
    limits: { tokensPerMinute: 500000 }
    slo: { batch: { ttftMs: 60000 } }
  - name: plain
    keys: [sk-plain]
`;

function problems(text: string): readonly string[] {
  try {
    parseTenants(text, 'f');
  } catch (err) {
    if (err instanceof TenantFileError) return err.problems;
    throw err;
  }
  return [];
}

describe('tenants file', () => {
  it("reads the issue's example in YAML and the same in JSON, with defaults", () => {
    const set = parseTenants(YAML, 'f');
    expect([...set.tenants.keys()]).toEqual(['search', 'nightly-evals', 'plain']);
    expect(set.tenants.get('plain')).toEqual({
      name: 'plain',
      keys: ['sk-plain'],
      weight: 1,
      priorities: ['standard'],
      limits: {},
    });
    expect(set.tenants.get('nightly-evals')?.slo).toEqual({ batch: { ttftMs: 60_000 } });
    const json = JSON.stringify({ tenants: [...set.tenants.values()] });
    expect([...parseTenants(json, 'f').tenants.values()]).toEqual([...set.tenants.values()]);
    const tenancy = new Tenancy(set);
    expect(tenancy.byKey('sk-evals')?.name).toBe('nightly-evals');
    expect(tenancy.byKey('sk-evals ')).toBeUndefined();
    expect(tenancy.byKey(undefined)).toBeUndefined();
  });

  it('names every problem with its path', () => {
    expect(problems('tenants: 3')).toEqual(['expected an object with a `tenants` list']);
    expect(problems('tenants: [\n')[0]).toMatch(/^not YAML or JSON/);
    const p = problems(`
tenants:
  - name: "bad name!"
    keys: []
    weight: 0
    priorities: [urgent]
    limits: { requestsPerMinute: 1.5, perDay: 3 }
    colour: blue
  - name: a
    keys: [k]
  - name: a
    keys: [k2]
  - name: b
    keys: [k]
`);
    expect(p).toEqual([
      'tenants[0].colour: unknown field',
      'tenants[0].name: expected 1–64 letters, digits, ".", "_" or "-"',
      'tenants[0].keys: expected a non-empty list of API keys (strings, no surrounding spaces)',
      'tenants[0].weight: expected a number > 0 and ≤ 1e6',
      'tenants[0].priorities: expected a non-empty list of distinct bands (interactive, standard, batch)',
      'tenants[0].limits.perDay: unknown limit (requestsPerMinute, tokensPerMinute, concurrent, burstSeconds)',
      'tenants[0].limits.requestsPerMinute: expected an integer ≥ 1',
      'tenants[2].name: "a" is declared twice',
      'tenants[3].keys: a key of "b" is also a key of "a"',
    ]);
  });

  it('caps a band to the tenant: the highest of its bands not above the one asked for, else its lowest', () => {
    const t = (priorities: string[]) =>
      parseTenants(JSON.stringify({ tenants: [{ name: 'x', keys: ['k'], priorities }] }), 'f').tenants.get('x')!;
    const ib = t(['interactive', 'batch']);
    expect(bandFor(ib, undefined)).toBe('interactive');
    expect(bandFor(ib, 'nonsense')).toBe('interactive');
    expect(bandFor(ib, 'standard')).toBe('batch');
    expect(bandFor(ib, 'batch')).toBe('batch');
    const s = t(['standard']);
    expect(bandFor(s, 'interactive')).toBe('standard');
    expect(bandFor(s, 'batch')).toBe('standard');
    const bs = t(['batch', 'standard']);
    expect(bandFor(bs, undefined)).toBe('batch');
    expect(bandFor(bs, 'interactive')).toBe('standard');
  });
});
