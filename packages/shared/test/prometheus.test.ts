import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buckets, mean, parseLine, parsePrometheus, pick, sum } from '../src/prometheus.ts';

describe('prometheus parser', () => {
  it('reads names with colons, labels with commas, spaces and escaped quotes', () => {
    const p = parseLine('vllm:x{a="1, 2",b="say \\"hi\\"",c="back\\\\slash"} 6.49e+07 1700000000000');
    expect(p?.name).toBe('vllm:x');
    expect(p?.sample.labels).toEqual({ a: '1, 2', b: 'say "hi"', c: 'back\\slash' });
    expect(p?.sample.value).toBe(6.49e7);
  });
  it('reads NaN, +Inf, -Inf and skips garbage lines', () => {
    const m = parsePrometheus('a NaN\nb +Inf\nc -Inf\n{oops} 1\nd{x="unterminated} 1\ne 1e-3\nf notanumber\n');
    expect(Number.isNaN(m.series.get('a')![0]!.value)).toBe(true);
    expect(m.series.get('b')![0]!.value).toBe(Infinity);
    expect(m.series.get('c')![0]!.value).toBe(-Infinity);
    expect(m.series.get('e')![0]!.value).toBe(0.001);
    expect(m.skipped).toBe(3);
  });
  it('matches counters with and without _total', () => {
    expect(sum(parsePrometheus('x_total 3\n'), ['x'])).toBe(3);
    expect(sum(parsePrometheus('x 4\n'), ['x'])).toBe(4);
  });
  it('reads # TYPE lines, escaped newlines in label values and CRLF line ends', () => {
    const m = parsePrometheus(
      '# HELP x_total Things.\r\n# TYPE x_total counter\r\nx_total{msg="a\\nb"} 2\r\n#  TYPE  y gauge\ny 1\n',
    );
    expect(m.types.get('x_total')).toBe('counter');
    expect(m.types.get('y')).toBe('gauge');
    expect(m.types.size).toBe(2);
    expect(m.series.get('x_total')![0]).toEqual({ labels: { msg: 'a\nb' }, value: 2 });
    expect(m.skipped).toBe(0);
  });
  it('keeps histogram buckets, _sum and _count as series in input order', () => {
    const m = parsePrometheus(
      [
        '# TYPE ttft_seconds histogram',
        'ttft_seconds_bucket{le="0.1",engine="0"} 1',
        'ttft_seconds_bucket{le="1.0",engine="0"} 3',
        'ttft_seconds_bucket{le="+Inf",engine="0"} 4',
        'ttft_seconds_sum{engine="0"} 2.5e+00',
        'ttft_seconds_count{engine="0"} 4',
      ].join('\n'),
    );
    expect(m.types.get('ttft_seconds')).toBe('histogram');
    expect(m.series.get('ttft_seconds_bucket')!.map((s) => [s.labels.le, s.value])).toEqual([
      ['0.1', 1],
      ['1.0', 3],
      ['+Inf', 4],
    ]);
    expect(sum(m, ['ttft_seconds_sum'])).toBe(2.5);
    expect(sum(m, ['ttft_seconds_count'])).toBe(4);
  });
  it('buckets sums a histogram over engines by le, bounds ascending, and refuses one without +Inf or not cumulative', () => {
    const text = [
      'h_bucket{engine="0",le="+Inf"} 10',
      'h_bucket{engine="0",le="0.05"} 9',
      'h_bucket{engine="0",le="0.025"} 2',
      'h_bucket{engine="1",le="0.025"} 1',
      'h_bucket{engine="1",le="0.05"} 3',
      'h_bucket{engine="1",le="+Inf"} 4',
      'h_sum 1.5',
      'old_bucket{le="0.1"} 2',
      'old_bucket{le="+Inf"} 1',
      'cut_bucket{le="0.1"} 2',
    ].join('\n');
    const m = parsePrometheus(text);
    expect(buckets(m, ['missing', 'h'])).toEqual({ bounds: [0.025, 0.05, Infinity], cumulative: [3, 12, 14] });
    expect(buckets(m, ['old'])).toBeUndefined();
    expect(buckets(m, ['cut'])).toBeUndefined();
  });
  it('pick takes the first present name; sum and mean skip NaN and ±Inf', () => {
    const m = parsePrometheus('b{e="0"} 1\nb{e="1"} NaN\nb{e="2"} 3\nc +Inf\n');
    expect(pick(m, ['a', 'b'])?.length).toBe(3);
    expect(pick(m, ['a'])).toBeUndefined();
    expect(sum(m, ['b'])).toBe(4);
    expect(mean(m, ['b'])).toBe(2);
    expect(sum(m, ['c'])).toBeUndefined();
    expect(mean(m, ['missing'])).toBeUndefined();
  });
  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (s) => {
        const m = parsePrometheus(s);
        expect(m.skipped).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 2000 },
    );
  });
});
