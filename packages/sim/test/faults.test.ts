import { describe, expect, it } from 'vitest';
import { applyFaultJson, applyFaultSpec, noFaults, parseDuration, startSimServer } from '../src/index.ts';

describe('fault syntax', () => {
  it('parses the CLI spelling', () => {
    expect(
      applyFaultSpec(noFaults(), [
        'crash-after=30s',
        'slow=2,error-rate=0.1',
        'die-after-tokens=5',
        'hang-after=500ms',
        'kv-fail=0.25,kv-timeout=0.5',
        'kv-overstate',
      ]),
    ).toEqual({
      crashAfterMs: 30_000,
      hang: false,
      hangAfterMs: 500,
      slow: 2,
      errorRate: 0.1,
      dieAfterTokens: 5,
      kvFail: 0.25,
      kvTimeout: 0.5,
      kvOverstate: 2,
    });
    expect(applyFaultSpec(noFaults(), ['kv-overstate=3']).kvOverstate).toBe(3);
    expect(applyFaultSpec(noFaults(), ['crash', 'hang'])).toMatchObject({ crashAfterMs: 0, hang: true });
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1.5')).toBe(1500);
  });

  it('names what is wrong', () => {
    expect(() => applyFaultSpec(noFaults(), ['explode'])).toThrow(/unknown fault "explode"/);
    expect(() => applyFaultSpec(noFaults(), ['error-rate=2'])).toThrow(/\[0, 1\]/);
    expect(() => applyFaultSpec(noFaults(), ['crash-after=soon'])).toThrow(/500ms, 30s or 2m/);
    expect(() => applyFaultJson(noFaults(), { slow: -1 })).toThrow(/"slow"/);
    expect(() => applyFaultJson(noFaults(), { nope: 1 })).toThrow(/unknown fault field "nope"/);
    expect(() => applyFaultSpec(noFaults(), ['kv-overstate=0.5'])).toThrow(/\[1, 64\]/);
    expect(() => applyFaultJson(noFaults(), { kvOverstate: 0 })).toThrow(/"kvOverstate"/);
  });

  it('applies runtime JSON on top of the current state', () => {
    const s = applyFaultJson(applyFaultSpec(noFaults(), ['slow=3']), { dieAfterTokens: 4, errorRate: 0.5 });
    expect(s).toMatchObject({ slow: 3, dieAfterTokens: 4, errorRate: 0.5 });
    expect(applyFaultJson(s, { clear: true, hang: true })).toEqual({ ...noFaults(), hang: true });
    expect(applyFaultJson(s, { dieAfterTokens: null }).dieAfterTokens).toBeNull();
  });
});

describe('kv-overstate', () => {
  it('announces twice the real KV blocks on /metrics by default, and the truth again when cleared', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', faults: ['kv-overstate'] });
    const read = async () => {
      const text = await (await fetch(`${sim.url}/metrics`)).text();
      return Number(/num_gpu_blocks="(\d+)"/.exec(text)![1]);
    };
    try {
      expect(await read()).toBe(512);
      await fetch(`${sim.url}/sim/v1/fault`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ clear: true }),
      });
      expect(await read()).toBe(256);
    } finally {
      await sim.close();
    }
  });
});
