/**
 * Minimal Prometheus text-format reader, enough to check /metrics in tests and
 * the benchmark (the agent has its own, fuller parser in shared). Handles
 * names with `:`, quoted label values with escapes, commas and spaces, NaN,
 * ±Inf and exponents. Comment lines are returned as `types`.
 */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export function parsePrometheus(text: string): { samples: PromSample[]; types: Map<string, string> } {
  const samples: PromSample[] = [];
  const types = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s+TYPE\s+(\S+)\s+(\S+)/.exec(line);
      if (m !== null) types.set(m[1]!, m[2]!);
      continue;
    }
    let i = 0;
    while (i < line.length && line[i] !== '{' && line[i] !== ' ') i++;
    const name = line.slice(0, i);
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`bad metric name in line: ${line}`);
    const labels: Record<string, string> = {};
    if (line[i] === '{') {
      i++;
      while (line[i] !== '}') {
        const eq = line.indexOf('=', i);
        if (eq < 0) throw new Error(`bad labels in line: ${line}`);
        const key = line.slice(i, eq).trim();
        if (line[eq + 1] !== '"') throw new Error(`unquoted label value in line: ${line}`);
        let j = eq + 2;
        let v = '';
        while (line[j] !== '"') {
          if (j >= line.length) throw new Error(`unterminated label value in line: ${line}`);
          if (line[j] === '\\') {
            const n = line[j + 1];
            v += n === 'n' ? '\n' : (n ?? '');
            j += 2;
          } else v += line[j++];
        }
        labels[key] = v;
        i = j + 1;
        if (line[i] === ',') i++;
      }
      i++;
    }
    const rest = line.slice(i).trim().split(/\s+/);
    const vs = rest[0] ?? '';
    const value = vs === '+Inf' ? Infinity : vs === '-Inf' ? -Infinity : vs === 'NaN' ? NaN : Number(vs);
    if (vs === '' || (Number.isNaN(value) && vs !== 'NaN')) throw new Error(`bad value in line: ${line}`);
    samples.push({ name, labels, value });
  }
  return { samples, types };
}
