import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS, errorBody, sendError, WarmpathError } from '../src/errors.ts';

const doc = readFileSync(new URL('../../../docs/ERRORS.md', import.meta.url), 'utf8');
const rows = new Map(
  [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| ([a-z_]+) \|/gm)].map((m) => [
    m[1]!,
    { status: Number(m[2]), type: m[3]! },
  ]),
);

describe('error registry', () => {
  it('docs/ERRORS.md has exactly one row per code, with the same status and type', () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERRORS).sort());
    for (const [code, e] of Object.entries(ERRORS)) expect(rows.get(code)).toEqual({ status: e.status, type: e.type });
  });

  it('bodies are OpenAI-shaped', () => {
    expect(errorBody('model_not_found', 'no such model: x', 'model')).toEqual({
      error: { message: 'no such model: x', type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
    });
    const e = new WarmpathError('fleet_saturated');
    expect(e.status).toBe(429);
    expect(e.toJSON().error.code).toBe('fleet_saturated');
  });

  it('sendError writes status, headers and body', () => {
    let status = 0;
    let headers: Record<string, string | number> = {};
    let body = '';
    sendError(
      { headersSent: false, writeHead: (s, h) => ((status = s), (headers = h)), end: (b) => (body = b ?? '') },
      'fleet_saturated',
      undefined,
      { headers: { 'retry-after': 1 } },
    );
    expect(status).toBe(429);
    expect(headers['retry-after']).toBe(1);
    expect(JSON.parse(body).error.code).toBe('fleet_saturated');
  });
});
