/**
 * Benchmark results: the JSON schema other tools read, a Markdown table for
 * stdout, and a self-contained HTML report with Chart.js plots (the library is
 * inlined, so the file opens offline).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { mean, percentiles, type RequestResult } from './loadgen.ts';
import type { References } from './references.ts';
import type { ReceiptCounts } from '@warmpath/router';

/** DES, gossip feed: what gossip cost and what the routers held at the end of the run. */
export interface DesGossipDetail {
  /** State messages and bytes each agent published per simulated second (the price of fresh state). */
  messagesPerReplicaS: number;
  bytesPerReplicaS: number;
  /** Digest hashes (added + removed) per message, and the share of messages carrying the static fields. */
  hashesPerMessage?: number;
  fullShare?: number;
  /** Digest snapshots the routers pulled (a gap in the deltas: a lost or reordered message, a boot), all routers. */
  pulls: number;
  /** One router's fleet view at the end: digest hashes held over all replicas, and the bytes of its digest tables and holder index. */
  viewHashes: number;
  viewBytes: number;
  /** With model groups (des/run.ts DesGroups): the groups each router serves (`*`: every one), and the state bytes each received per simulated second. */
  routerGroups?: string[][];
  receivedBytesPerRouterS?: number[];
}

export interface PolicyResult {
  policy: string;
  routers: number;
  replicas: number;
  requests: number;
  completed: number;
  errors: number;
  ttft_ms: { p50: number; p90: number; p99: number; mean: number };
  itl_ms: { p50: number; p99: number };
  e2e_ms: { p50: number; p99: number };
  output_tokens_per_s: number;
  /** Cached prompt tokens / prompt tokens, as the engines count them. */
  cache_hit_rate: number;
  preemptions: number;
  spills: number;
  adapter_loads: number;
  /** The routers' receipts, summed over routers and replicas (absent in reports saved before them). */
  receipts?: ReceiptsRow;
  /** Extra detail for the report (not part of the stable schema). */
  detail?: {
    errorsByCode: Record<string, number>;
    branches: Record<string, number>;
    ttftSamples: number[];
    perReplicaLoad?: Array<{ t: number; running: number[] }>;
    byTag?: Record<string, { n: number; ttft_p50: number; ttft_p99: number }>;
    /** TTFT p50 over every request sent, an unanswered one counting as the slowest (null in JSON = more than half unanswered). */
    ttftP50AllRequests?: number | null;
    ttftP99AllRequests?: number | null;
    /** DES, gossip feed (see DesGossipDetail). */
    gossip?: DesGossipDetail;
    /** Each router's estimate, at the end, of how many routers share the clients (the `share` step's N; warmpath_router_traffic_routers). */
    routersEstimate?: number[];
    /**
     * DES: how long a cached KV block had sat unused when the engines evicted
     * it, seconds, averaged over every block evicted (absent when none was):
     * a prompt repeated later than this misses. Placement moves it by how
     * much it writes (misses) and where.
     */
    kvEvictionAgeS?: number;
    /** A disaggregated fleet: requests whose KV was transferred, and those their decode replica prefilled (absent for an aggregated fleet). */
    pd?: { transfer: number; local: number };
  };
}

/**
 * Predicted against reported cached tokens (packages/router/src/core/receipts.ts):
 * answers judged, predicted hits (≥ half the prompt), misroutes among them,
 * their share, and the mean |expected − cached| in tokens.
 */
export interface ReceiptsRow {
  judged: number;
  expected_hits: number;
  misroutes: number;
  /** misroutes / expected_hits (0 when none was predicted). */
  misroute_rate: number;
  mean_abs_error_tokens: number;
}

/** A receipts row from the routers' summed counts. */
export function receiptsRow(c: ReceiptCounts): ReceiptsRow {
  return {
    judged: c.judged,
    expected_hits: c.expectedHits,
    misroutes: c.misroutes,
    misroute_rate: round(c.expectedHits > 0 ? c.misroutes / c.expectedHits : 0, 4)!,
    mean_abs_error_tokens: round(c.judged > 0 ? c.errorTokens / c.judged : 0)!,
  };
}

export interface BenchReport {
  scenario: string;
  mode: 'live' | 'des';
  config: Record<string, unknown>;
  /** What no router can beat on this plan and fleet (references.ts). */
  references?: References;
  results: PolicyResult[];
  /** Policies whose run failed (out of memory, an exception): reported, never fatal to the others. */
  failures?: Array<{ policy: string; error: string }>;
}

export interface EngineTotals {
  promptTokens: number;
  cachedTokens: number;
  preemptions: number;
  adapterLoads: number;
  /** DES: cached blocks the engines evicted, and the sum of how long each had sat unused, ms. */
  evictedBlocks?: number;
  evictedAgeMs?: number;
}

/**
 * A TTFT percentile over every request sent: a request that never got a first
 * token (refused, timed out) counts as slower than any that did (Infinity
 * when the percentile falls among those). `ttft_ms` covers answered requests
 * only, which flatters a policy that sheds load.
 */
export function percentileOverAllRequests(answeredTtfts: readonly number[], requests: number, p: number): number {
  const sorted = [...answeredTtfts].sort((a, b) => a - b);
  const idx = Math.max(0, Math.ceil((p / 100) * requests) - 1);
  return idx < sorted.length ? sorted[idx]! : Number.POSITIVE_INFINITY;
}

export function p50OverAllRequests(answeredTtfts: readonly number[], requests: number): number {
  return percentileOverAllRequests(answeredTtfts, requests, 50);
}

const round = (x: number, d = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null);

/** Placements sent on purpose past a warmer or home replica: the `spills` column. */
export const SPILL_BRANCHES = ['spill', 'spill-two-choices', 'spill-least-queued', 'adapter-spill', 'balance'] as const;

/** Folds request results (times already in simulated ms) and engine counters into one policy row. */
export function summarize(
  policy: string,
  shape: { routers: number; replicas: number },
  results: readonly RequestResult[],
  engine: EngineTotals,
  durationS: number,
  extra: {
    perReplicaLoad?: Array<{ t: number; running: number[] }>;
    gossip?: DesGossipDetail;
    routersEstimate?: number[];
    receipts?: ReceiptCounts;
  } = {},
): PolicyResult {
  const ok = results.filter((r) => r.ok);
  const branches: Record<string, number> = {};
  for (const r of results) if (r.route !== undefined) branches[r.route] = (branches[r.route] ?? 0) + 1;
  const spills = SPILL_BRANCHES.reduce((n, b) => n + (branches[b] ?? 0), 0);
  const pd = results.some((r) => r.pd !== undefined)
    ? {
        transfer: results.filter((r) => r.pd === 'transfer').length,
        local: results.filter((r) => r.pd === 'local').length,
      }
    : undefined;
  const ttft = ok.map((r) => r.ttftMs);
  // Every inter-token gap of the run (tens of millions in an hour-long replay): one typed array, sorted once.
  let gaps = 0;
  for (const r of ok) gaps += r.itlMs.length;
  const itl = new Float64Array(gaps);
  gaps = 0;
  for (const r of ok) for (const x of r.itlMs) itl[gaps++] = x;
  const [itl50, itl99] = percentiles(itl, [50, 99]);
  const [ttft50, ttft90, ttft99] = percentiles(ttft, [50, 90, 99]);
  const e2e = ok.map((r) => r.e2eMs);
  const [e2e50, e2e99] = percentiles(e2e, [50, 99]);
  const errorsByCode: Record<string, number> = {};
  for (const r of results)
    if (!r.ok) errorsByCode[r.error ?? 'unknown'] = (errorsByCode[r.error ?? 'unknown'] ?? 0) + 1;
  const byTag: Record<string, { n: number; ttft_p50: number; ttft_p99: number }> = {};
  const tags = new Set(ok.map((r) => r.tag ?? ''));
  for (const tag of tags) {
    const t = ok.filter((r) => (r.tag ?? '') === tag).map((r) => r.ttftMs);
    const [p50, p99] = percentiles(t, [50, 99]);
    byTag[tag] = { n: t.length, ttft_p50: round(p50!) ?? 0, ttft_p99: round(p99!) ?? 0 };
  }
  const outTokens = ok.reduce((s, r) => s + r.outputTokens, 0);
  return {
    policy,
    routers: shape.routers,
    replicas: shape.replicas,
    requests: results.length,
    completed: ok.length,
    errors: results.length - ok.length,
    ttft_ms: { p50: round(ttft50!)!, p90: round(ttft90!)!, p99: round(ttft99!)!, mean: round(mean(ttft))! },
    itl_ms: { p50: round(itl50!, 2)!, p99: round(itl99!, 2)! },
    e2e_ms: { p50: round(e2e50!)!, p99: round(e2e99!)! },
    output_tokens_per_s: round(outTokens / Math.max(1e-9, durationS))!,
    cache_hit_rate: round(engine.promptTokens > 0 ? engine.cachedTokens / engine.promptTokens : 0, 4)!,
    preemptions: engine.preemptions,
    spills,
    adapter_loads: engine.adapterLoads,
    ...(extra.receipts !== undefined ? { receipts: receiptsRow(extra.receipts) } : {}),
    detail: {
      errorsByCode,
      branches,
      ttftSamples: ttft.map((x) => round(x)!),
      ttftP50AllRequests: round(p50OverAllRequests(ttft, results.length)),
      ttftP99AllRequests: round(percentileOverAllRequests(ttft, results.length, 99)),
      ...(extra.perReplicaLoad !== undefined ? { perReplicaLoad: extra.perReplicaLoad } : {}),
      ...(extra.gossip !== undefined ? { gossip: extra.gossip } : {}),
      ...(extra.routersEstimate !== undefined
        ? { routersEstimate: extra.routersEstimate.map((x) => round(x, 2)!) }
        : {}),
      ...(engine.evictedBlocks !== undefined && engine.evictedBlocks > 0
        ? { kvEvictionAgeS: round((engine.evictedAgeMs ?? 0) / engine.evictedBlocks / 1000, 1)! }
        : {}),
      byTag,
      ...(pd !== undefined ? { pd } : {}),
    },
  };
}

export function markdownTable(report: BenchReport): string {
  const head =
    '| policy | routers | done/req | errors | TTFT p50 | TTFT p90 | TTFT p99 | ITL p50 | e2e p99 | out tok/s | hit rate | misroutes | preempt | spills | adapter loads |';
  const sep = '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|';
  const rows = report.results.map(
    (r) =>
      `| ${r.policy} | ${r.routers} | ${r.completed}/${r.requests} | ${r.errors} | ${r.ttft_ms.p50} | ${r.ttft_ms.p90} | ${r.ttft_ms.p99} | ${r.itl_ms.p50} | ${r.e2e_ms.p99} | ${r.output_tokens_per_s} | ${(r.cache_hit_rate * 100).toFixed(1)}% | ${misrouteCell(r)} | ${r.preemptions} | ${r.spills} | ${r.adapter_loads} |`,
  );
  const failed = (report.failures ?? []).map((f) => `| ${f.policy} | failed: ${f.error.split('\n')[0]} |`);
  const refs = report.references;
  const ref =
    refs === undefined
      ? []
      : [
          '',
          `References (no router can do better on this plan and fleet): hit-rate ceiling ${(refs.hitRateCeiling.belady * 100).toFixed(1)}% (the fleet's KV as one cache, optimal eviction; ${(refs.hitRateCeiling.unlimited * 100).toFixed(1)}% unlimited); TTFT floor p50 ${refs.ttftFloorMs.p50} ms, p99 ${refs.ttftFloorMs.p99} ms (each request alone on an idle replica holding its ceiling hit)${bound(refs)}.${tiered(refs)}`,
        ];
  return [
    `### ${report.scenario} (${report.mode}; times in simulated ms)`,
    '',
    head,
    sep,
    ...rows,
    ...failed,
    ...ref,
  ].join('\n');
}

/** The misroute rate and its denominator, or a dash before receipts. */
function misrouteCell(r: PolicyResult): string {
  const x = r.receipts;
  return x === undefined ? '–' : `${(x.misroute_rate * 100).toFixed(2)}% of ${x.expected_hits}`;
}

/** The TTFT bound, when the references carry it (reports saved before it was added do not). */
function bound(refs: References): string {
  const b = refs.ttftBoundMs as References['ttftBoundMs'] | undefined;
  return b === undefined
    ? ''
    : `; TTFT bound p50 ${b.p50} ms, p99 ${b.p99} ms, which no policy goes under (each request alone on an idle replica holding every earlier block, and each adapter's first load waited for once)`;
}

/** The tiered references, when the fleet has a host-memory tier. */
function tiered(refs: References): string {
  const c = refs.hitRateCeiling.tiered;
  const t = refs.ttftTieredMs;
  return c === undefined || t === undefined
    ? ''
    : ` With host memory: hit-rate ceiling ${(c.belady * 100).toFixed(1)}% (GPU and host KV pooled as one cache); tiered TTFT reference p50 ${t.p50} ms, p99 ${t.p99} ms (that hit, the part past the GPU's reloaded over PCIe).`;
}

export function writeJson(path: string, report: BenchReport): void {
  const slim = {
    ...report,
    results: report.results.map(({ detail, ...r }) => ({
      ...r,
      detail: detail ? { ...detail, ttftSamples: undefined } : undefined,
    })),
  };
  writeFileSync(path, `${JSON.stringify(slim, null, 2)}\n`);
}

const require = createRequire(import.meta.url);

/** Chart.js's UMD build, to inline in a page. It is not in chart.js's "exports"; it sits beside the CommonJS entry in dist/. */
export function chartJsSource(): string {
  return readFileSync(join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'), 'utf8');
}

export function writeHtml(path: string, reports: readonly BenchReport[]): void {
  const chartJs = chartJsSource();
  const data = JSON.stringify(reports).replace(/</g, '\\u003c');
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Warmpath benchmark</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;max-width:1200px}table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th:first-child,td:first-child{text-align:left}.charts{display:grid;grid-template-columns:1fr 1fr;gap:16px}canvas{max-height:320px}</style>
<script>${chartJs}</script></head><body>
<h1>Warmpath benchmark</h1><div id="root"></div>
<script>
const reports = ${data};
const root = document.getElementById('root');
const colors = ['#d62728','#1f77b4','#2ca02c','#ff7f0e','#9467bd','#8c564b','#e377c2','#7f7f7f','#bcbd22','#17becf','#393b79','#637939'];
for (const rep of reports) {
  const sec = document.createElement('section');
  sec.innerHTML = '<h2>' + rep.scenario + ' (' + rep.mode + ')</h2><pre>' + JSON.stringify(rep.config) + '</pre>';
  const t = document.createElement('table');
  t.innerHTML = '<tr><th>policy</th><th>done/req</th><th>TTFT p50</th><th>p90</th><th>p99</th><th>ITL p50</th><th>hit rate</th><th>misroutes</th><th>preempt</th><th>spills</th><th>adapter loads</th></tr>' +
    rep.results.map(r => '<tr><td>' + r.policy + '</td><td>' + r.completed + '/' + r.requests + '</td><td>' + r.ttft_ms.p50 + '</td><td>' + r.ttft_ms.p90 + '</td><td>' + r.ttft_ms.p99 + '</td><td>' + r.itl_ms.p50 + '</td><td>' + (r.cache_hit_rate*100).toFixed(1) + '%</td><td>' + (r.receipts ? (r.receipts.misroute_rate*100).toFixed(2) + '% of ' + r.receipts.expected_hits : '–') + '</td><td>' + r.preemptions + '</td><td>' + r.spills + '</td><td>' + r.adapter_loads + '</td></tr>').join('');
  sec.appendChild(t);
  const grid = document.createElement('div'); grid.className = 'charts'; sec.appendChild(grid);
  const canvas = () => { const c = document.createElement('canvas'); const d = document.createElement('div'); d.appendChild(c); grid.appendChild(d); return c; };
  // TTFT distribution: empirical CDF per policy.
  new Chart(canvas(), { type: 'line', data: { datasets: rep.results.map((r, i) => {
      const s = (r.detail && r.detail.ttftSamples || []).slice().sort((a,b)=>a-b);
      const step = Math.max(1, Math.floor(s.length / 200));
      return { label: r.policy, borderColor: colors[i % colors.length], pointRadius: 0, borderWidth: 1.5,
        data: s.filter((_, k) => k % step === 0).map((v, k) => ({ x: v, y: (k * step + 1) / s.length })) };
    }) },
    options: { plugins: { title: { display: true, text: 'TTFT CDF (simulated ms, log scale)' } }, scales: { x: { type: 'logarithmic', title: { display: true, text: 'TTFT ms' } }, y: { min: 0, max: 1 } } } });
  new Chart(canvas(), { type: 'bar', data: { labels: rep.results.map(r => r.policy), datasets: [{ label: 'cache hit rate', data: rep.results.map(r => r.cache_hit_rate * 100), backgroundColor: rep.results.map((_, i) => colors[i % colors.length]) }] },
    options: { plugins: { title: { display: true, text: 'Prefix-cache hit rate (%), from the engines' }, legend: { display: false } } } });
  for (const [i, r] of rep.results.entries()) {
    const load = r.detail && r.detail.perReplicaLoad;
    if (!load || load.length === 0) continue;
    const n = load[0].running.length;
    new Chart(canvas(), { type: 'line', data: { labels: load.map(p => (p.t / 1000).toFixed(0)), datasets: Array.from({ length: n }, (_, k) => ({ label: 'replica ' + k, data: load.map(p => p.running[k]), pointRadius: 0, borderWidth: 1, borderColor: colors[k % colors.length] })) },
      options: { plugins: { title: { display: true, text: r.policy + ': running requests per replica over time (s)' }, legend: { display: false } } } });
  }
  root.appendChild(sec);
}
</script></body></html>`;
  writeFileSync(path, html);
}
