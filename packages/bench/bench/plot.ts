/**
 * The figures of docs/SCALE.md and docs/PERFORMANCE.md, drawn from the rows the benchmarks save
 * (each input optional; one PNG per input given, into --out):
 *  - `--gossip rows.json` (quality.ts --save over --gossip-delays and
 *    --gossip-losses) with `--instant rows.json` (the same seeds with
 *    --policy warmpath-instant): TTFT p50 and p99 as ratios to
 *    warmpath-instant's, and the hit rate, against the gossip delay's
 *    median, one line per loss, means over the seeds, with the goal (within
 *    5% of warmpath-instant) → gossip-delay.png;
 *  - `--routers rows.json` (quality.ts --save over --routers): TTFT p50,
 *    p99 and hit rate per router count, with the goal (within 10% of one
 *    router's, hit rate within 2 points) → routers.png;
 *  - `--mesh rows.json` (packages/router/bench/mesh.ts --save): the state
 *    delivery latency's distribution per fleet size, and each new replica's
 *    time until every router holds it, with the goals (500 ms p99, 2 s)
 *    → gossip-mesh.png;
 *  - `--overhead rows.json` (packages/router/bench/overhead.ts --save):
 *    requests per core-second and added latency per proxy, with the goals
 *    (half of HAProxy's, 2 ms) → hot-path.png.
 * Drawn with Chart.js in headless Chromium (src/figures.ts); `--html` also
 * writes each figure's page beside it.
 *
 *   node packages/bench/bench/plot.ts --out docs/plots [--gossip …] [--instant …] [--routers …] [--mesh …] [--overhead …] [--html]
 *
 * Needs: /usr/bin/chromium
 * Smoke: --out /tmp/warmpath-plot-smoke --gossip docs/plots/gossip-delay.json --instant docs/plots/gossip-instant.json --routers docs/plots/routers.json --mesh docs/plots/gossip-mesh.json --overhead docs/plots/hot-path.json
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { delayMedianMs } from '../src/des/gossip.ts';
import { COLORS, type ChartSpec, type Figure, goalLine, hline, renderFigures } from '../src/figures.ts';
import type { QualityRow } from '../src/quality-row.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    out: { type: 'string' },
    gossip: { type: 'string' },
    instant: { type: 'string' },
    routers: { type: 'string' },
    mesh: { type: 'string' },
    overhead: { type: 'string' },
    html: { type: 'boolean', default: false },
  },
});
if (values.out === undefined) throw new Error('--out DIR is required: where the PNGs go');
const out = values.out;
mkdirSync(out, { recursive: true });
const read = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const title = (text: string): Record<string, unknown> => ({ display: true, text, font: { size: 13 } });
const axis = (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  title: { display: true, text },
  ...extra,
});

/** The three measures of a quality row, and how each is drawn. */
const MEASURES = [
  { key: 'p50', label: 'TTFT p50, ms', of: (r: QualityRow): number => r.p50 },
  { key: 'p99', label: 'TTFT p99, ms', of: (r: QualityRow): number => r.p99 },
  { key: 'hit', label: 'hit rate, %', of: (r: QualityRow): number => r.hit * 100 },
] as const;

function gossipFigure(rows: QualityRow[], instant: QualityRow[]): Figure {
  if (instant.length === 0) throw new Error('--gossip needs --instant: the delay is drawn against warmpath-instant');
  const delays = [...new Set(rows.map((r) => r.delay))].sort((a, b) => delayMedianMs(a) - delayMedianMs(b));
  const losses = [...new Set(rows.map((r) => r.loss))].sort((a, b) => a - b);
  const xs = delays.map(delayMedianMs);
  const seeds = [...new Set(rows.map((r) => r.seed))];
  const charts = MEASURES.map((m): ChartSpec => {
    // p50 and p99 as ratios to warmpath-instant's (the goal's terms), the hit rate as it is.
    const ratio = m.key !== 'hit';
    const ref = mean(instant.map(m.of));
    const y = (d: string, loss: number): number =>
      mean(rows.filter((r) => r.delay === d && r.loss === loss).map(m.of)) / (ratio ? ref : 1);
    const lines = losses.map((loss, i) => ({
      type: 'line',
      label: `${loss * 100}% loss`,
      data: delays.map((d, k) => ({ x: xs[k], y: y(d, loss) })),
      borderColor: COLORS[i],
      backgroundColor: COLORS[i],
      pointRadius: 3,
    }));
    const refs = ratio
      ? [
          hline('warmpath-instant', 1, xs[0]!, xs.at(-1)!),
          { ...hline('goal: 1.05', 1.05, xs[0]!, xs.at(-1)!), borderDash: [2, 3] },
        ]
      : [hline('warmpath-instant', ref, xs[0]!, xs.at(-1)!)];
    const label = ratio ? `${m.label.replace(', ms', '')} ÷ warmpath-instant's` : m.label;
    return {
      type: 'line',
      data: { datasets: [...lines, ...refs] },
      options: {
        plugins: { title: title(`${label} (mean of seeds ${seeds.join(', ')})`) },
        scales: { x: axis('gossip delay, median ms (log)', { type: 'logarithmic' }), y: axis(label) },
      },
    };
  });
  return { file: join(out, 'gossip-delay.png'), charts };
}

function routersFigure(rows: QualityRow[]): Figure {
  const counts = [...new Set(rows.map((r) => r.routers))].sort((a, b) => a - b);
  const at = (n: number, m: (typeof MEASURES)[number]): number => mean(rows.filter((r) => r.routers === n).map(m.of));
  const scenario = [...new Set(rows.map((r) => `${r.scenario} scenario, seed ${r.seed}`))].join(', ');
  const charts = MEASURES.map((m): ChartSpec => {
    const one = at(counts[0]!, m);
    const goal = m.key === 'hit' ? one - 2 : one * 1.1;
    return {
      type: 'bar',
      data: {
        labels: counts.map((n) => `${n} router${n === 1 ? '' : 's'}`),
        datasets: [
          { type: 'bar', label: m.label, data: counts.map((n) => at(n, m)), backgroundColor: COLORS[1], order: 1 },
          goalLine(
            m.key === 'hit' ? 'goal: one router − 2 points' : 'goal: 1.1 × one router',
            counts.map(() => goal),
          ),
        ],
      },
      options: {
        plugins: { title: title(`${m.label}, ${scenario}`) },
        // The hit rate's axis starts just under the goal: bars from 0 would hide a 2-point difference.
        scales: { y: axis(m.label, m.key === 'hit' ? { min: Math.floor(goal - 2) } : { beginAtZero: true }) },
      },
    };
  });
  return { file: join(out, 'routers.png'), charts };
}

/** What meshFigure reads of packages/router/bench/mesh.ts's saved rows. */
interface MeshRow {
  agents: number;
  routers: number;
  newReplicaMs: number[];
  latency: { p99: number };
  latencyQuantiles: number[];
}

function meshFigure(rows: MeshRow[]): Figure {
  const cdf: ChartSpec = {
    type: 'line',
    data: {
      datasets: [
        ...rows.map((r, i) => ({
          label: `${r.agents} agents × ${r.routers} routers (p99 ${r.latency.p99.toFixed(0)} ms)`,
          data: r.latencyQuantiles.map((ms, k) => ({ x: Math.max(ms, 0.1), y: k })),
          borderColor: COLORS[i],
          backgroundColor: COLORS[i],
          pointRadius: 0,
        })),
        goalLine('goal: p99 ≤ 500 ms', [
          { x: 500, y: 0 },
          { x: 500, y: 100 },
        ]),
      ],
    },
    options: {
      plugins: { title: title('State change → every router: delivery latency') },
      scales: { x: axis('ms (log)', { type: 'logarithmic' }), y: axis('% of deliveries within', { min: 0, max: 100 }) },
    },
  };
  const labels = rows.map((r) => `${r.agents} × ${r.routers}`);
  const most = Math.max(...rows.map((r) => r.newReplicaMs.length));
  const fresh: ChartSpec = {
    type: 'bar',
    data: {
      labels,
      datasets: [
        ...Array.from({ length: most }, (_, k) => ({
          type: 'bar',
          label: `new replica ${k + 1}`,
          data: rows.map((r) => r.newReplicaMs[k] ?? null),
          backgroundColor: COLORS[1],
          borderColor: '#fff',
          borderWidth: 1,
          order: 1,
        })),
        goalLine(
          'goal: 2 s',
          rows.map(() => 2000),
        ),
      ],
    },
    options: {
      plugins: { title: title('A new replica on every router'), legend: { display: false } },
      scales: { x: axis('agents × routers'), y: axis('ms from the agent\u2019s start', { beginAtZero: true }) },
    },
  };
  return { file: join(out, 'gossip-mesh.png'), charts: [cdf, fresh] };
}

/** What overheadFigure reads of packages/router/bench/overhead.ts's saved medians. */
interface OverheadRun {
  concurrency: number;
  longTokens: number;
  targets: Array<{ target: string; perCore: number | null; p50: number; p99: number; longP50: number | null }>;
}

function overheadFigure(run: OverheadRun): Figure {
  const proxies = run.targets.filter((t) => t.perCore !== null);
  const haproxy = proxies.find((t) => t.target === 'haproxy')?.perCore ?? undefined;
  const labels = proxies.map((t) => t.target);
  const perCore: ChartSpec = {
    type: 'bar',
    data: {
      labels,
      datasets: [
        {
          type: 'bar',
          label: 'requests per core-second',
          data: proxies.map((t) => t.perCore),
          backgroundColor: proxies.map((t) => (t.target.startsWith('warmpath') ? COLORS[0] : COLORS[1])),
          order: 1,
        },
        ...(haproxy === undefined
          ? []
          : [
              goalLine(
                'goal: half of HAProxy',
                proxies.map(() => haproxy / 2),
              ),
            ]),
      ],
    },
    options: {
      plugins: {
        title: title(`Requests per core-second (small chat, concurrency ${run.concurrency})`),
        legend: { display: false },
      },
      scales: { y: axis('requests per CPU-second of the proxy', { beginAtZero: true }) },
    },
  };
  const added: ChartSpec = {
    type: 'bar',
    data: {
      labels,
      datasets: [
        { type: 'bar', label: 'added p50', data: proxies.map((t) => t.p50), backgroundColor: COLORS[2], order: 1 },
        { type: 'bar', label: 'added p99', data: proxies.map((t) => t.p99), backgroundColor: COLORS[3], order: 1 },
        {
          type: 'bar',
          label: `added p50, ${run.longTokens}-token prompt`,
          data: proxies.map((t) => t.longP50),
          backgroundColor: COLORS[4],
          order: 1,
        },
        goalLine(
          'goal: 2 ms',
          proxies.map(() => 2),
        ),
      ],
    },
    options: {
      plugins: { title: title('Latency a proxy adds, ms') },
      scales: { y: axis('ms over the direct request') },
    },
  };
  return { file: join(out, 'hot-path.png'), charts: [perCore, added] };
}

const figures: Figure[] = [];
if (values.gossip !== undefined)
  figures.push(gossipFigure(read(values.gossip), values.instant === undefined ? [] : read(values.instant)));
if (values.routers !== undefined) figures.push(routersFigure(read(values.routers)));
if (values.mesh !== undefined) figures.push(meshFigure(read(values.mesh)));
if (values.overhead !== undefined) figures.push(overheadFigure(read(values.overhead)));
if (figures.length === 0) throw new Error('nothing to draw: give --gossip, --routers, --mesh or --overhead');
await renderFigures(figures, values.html);
for (const f of figures) console.log(`${f.file}: ${f.charts.length} chart(s)`);
