/**
 * Tolerant Prometheus text-format parser: the agent's engine scrapes, and the
 * simulator's and benchmark's checks of /metrics. The only one in the repo.
 *
 * Steps: split lines → `# TYPE` comments recorded, other comments and blank
 * lines skipped → read name (letters, digits, `_`,
 * `:`) → optional `{labels}` with quoted values (escapes \\ \" \n; commas and
 * spaces inside values are fine) → value (`NaN`, `±Inf`, exponents) → ignore
 * an optional timestamp. A malformed line is skipped and counted, never thrown.
 * Histograms and summaries need nothing special: `x_bucket{le="+Inf"}`,
 * `x_sum` and `x_count` are series of their own, in input order.
 * Complexity: O(text length), one pass per line.
 * Trade-off: hand-written (the npm parsers are unmaintained) and deliberately
 * lax: engines drift (`X` vs `X_total`, stray spaces), and a scrape that
 * yields most series beats one that fails on a single odd line.
 */

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface Metrics {
  /** Series by exact metric name as emitted. */
  series: Map<string, Sample[]>;
  /** `# TYPE` declarations: family name → counter, gauge, histogram, summary, untyped… */
  types: Map<string, string>;
  /** Lines that did not parse. */
  skipped: number;
}

const MAX_LINES = 200_000;
const TYPE_LINE = /^#\s+TYPE\s+(\S+)\s+(\S+)/;

function parseValue(s: string): number {
  switch (s) {
    case 'NaN':
    case 'nan':
      return Number.NaN;
    case '+Inf':
    case 'Inf':
    case '+inf':
    case 'inf':
      return Number.POSITIVE_INFINITY;
    case '-Inf':
    case '-inf':
      return Number.NEGATIVE_INFINITY;
  }
  if (s === '') return Number.NaN;
  const n = Number(s);
  return n;
}

const isNameChar = (c: number): boolean =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 58;

/** Parses one sample line; undefined when malformed. */
export function parseLine(line: string): { name: string; sample: Sample } | undefined {
  let i = 0;
  const n = line.length;
  while (i < n && (line[i] === ' ' || line[i] === '\t')) i++;
  const start = i;
  while (i < n && isNameChar(line.charCodeAt(i))) i++;
  if (i === start) return undefined;
  const name = line.slice(start, i);
  const labels: Record<string, string> = {};
  while (i < n && line[i] === ' ') i++;
  if (line[i] === '{') {
    i++;
    for (;;) {
      while (i < n && (line[i] === ' ' || line[i] === ',')) i++;
      if (i >= n) return undefined;
      if (line[i] === '}') {
        i++;
        break;
      }
      const ks = i;
      while (i < n && isNameChar(line.charCodeAt(i))) i++;
      if (i === ks) return undefined;
      const key = line.slice(ks, i);
      while (i < n && line[i] === ' ') i++;
      if (line[i] !== '=') return undefined;
      i++;
      while (i < n && line[i] === ' ') i++;
      if (line[i] !== '"') return undefined;
      i++;
      let value = '';
      let closed = false;
      while (i < n) {
        const c = line[i]!;
        if (c === '\\' && i + 1 < n) {
          const e = line[i + 1]!;
          value += e === 'n' ? '\n' : e;
          i += 2;
          continue;
        }
        if (c === '"') {
          closed = true;
          i++;
          break;
        }
        value += c;
        i++;
      }
      if (!closed) return undefined;
      labels[key] = value;
    }
  }
  while (i < n && (line[i] === ' ' || line[i] === '\t')) i++;
  const vs = i;
  while (i < n && line[i] !== ' ' && line[i] !== '\t') i++;
  const raw = line.slice(vs, i);
  if (raw === '') return undefined;
  const value = parseValue(raw);
  if (Number.isNaN(value) && raw !== 'NaN' && raw !== 'nan') return undefined;
  return { name, sample: { labels, value } };
}

export function parsePrometheus(text: string): Metrics {
  const series = new Map<string, Sample[]>();
  const types = new Map<string, string>();
  let skipped = 0;
  let lines = 0;
  let pos = 0;
  while (pos < text.length && lines < MAX_LINES) {
    let end = text.indexOf('\n', pos);
    if (end === -1) end = text.length;
    const line = text.charCodeAt(end - 1) === 13 ? text.slice(pos, end - 1) : text.slice(pos, end);
    pos = end + 1;
    lines++;
    const t = line.trimStart();
    if (t === '') continue;
    if (t[0] === '#') {
      const m = TYPE_LINE.exec(t);
      if (m !== null) types.set(m[1]!, m[2]!);
      continue;
    }
    const parsed = parseLine(t);
    if (parsed === undefined) {
      skipped++;
      continue;
    }
    let list = series.get(parsed.name);
    if (list === undefined) series.set(parsed.name, (list = []));
    list.push(parsed.sample);
  }
  return { series, types, skipped };
}

/** Series of the first name (in `names`) present; each name also tried with `_total`. */
export function pick(m: Metrics, names: readonly string[]): Sample[] | undefined {
  for (const name of names) {
    const s = m.series.get(name) ?? m.series.get(`${name}_total`);
    if (s !== undefined && s.length > 0) return s;
  }
  return undefined;
}

/** Sum over all series of the first present name (engines, ranks, models); NaN samples ignored. undefined when absent. */
export function sum(m: Metrics, names: readonly string[]): number | undefined {
  const s = pick(m, names);
  if (s === undefined) return undefined;
  let total = 0;
  let any = false;
  for (const x of s) {
    if (Number.isFinite(x.value)) {
      total += x.value;
      any = true;
    }
  }
  return any ? total : undefined;
}

/** Mean over series (fractions such as KV usage across data-parallel engines). */
export function mean(m: Metrics, names: readonly string[]): number | undefined {
  const s = pick(m, names);
  if (s === undefined) return undefined;
  let total = 0;
  let k = 0;
  for (const x of s) {
    if (Number.isFinite(x.value)) {
      total += x.value;
      k++;
    }
  }
  return k > 0 ? total / k : undefined;
}

/** A histogram's cumulative bucket counts, upper bounds ascending (the last +Inf). */
export interface Buckets {
  readonly bounds: readonly number[];
  readonly cumulative: readonly number[];
}

/**
 * The buckets of the first histogram present among `names` (each read as
 * `NAME_bucket`), summed over series by `le` (engines, ranks, models);
 * undefined when absent, without a +Inf bucket, or not cumulative.
 */
export function buckets(m: Metrics, names: readonly string[]): Buckets | undefined {
  for (const name of names) {
    const s = m.series.get(`${name}_bucket`);
    if (s === undefined || s.length === 0) continue;
    const byLe = new Map<number, number>();
    for (const x of s) {
      const le = parseValue(x.labels.le ?? '');
      if (Number.isNaN(le) || !Number.isFinite(x.value)) continue;
      byLe.set(le, (byLe.get(le) ?? 0) + x.value);
    }
    const bounds = [...byLe.keys()].sort((a, b) => a - b);
    const cumulative = bounds.map((b) => byLe.get(b)!);
    if (bounds.at(-1) !== Number.POSITIVE_INFINITY) return undefined;
    for (let i = 1; i < cumulative.length; i++) if (cumulative[i]! < cumulative[i - 1]!) return undefined;
    return { bounds, cumulative };
  }
  return undefined;
}

/**
 * prom-client's default process metrics that Prometheus' own lint (`promtool
 * check metrics`) refuses: gauges named `_total`. The router and the agent
 * drop them after collectDefaultMetrics; the same counts are exposed by type
 * in `nodejs_active_handles`, `nodejs_active_requests` and
 * `nodejs_active_resources`.
 */
export const LINT_FAILING_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
] as const;
