/**
 * deploy/observability against Prometheus' own tool and a live fleet:
 * `promtool check rules`, `promtool test rules` (each alert fires on what it
 * is for), `promtool check config` for the example scrape configuration and
 * `promtool check metrics` (the exposition lint) on a live router's and
 * agent's /metrics. Every metric name and label value the alerts and the
 * Grafana dashboard query must exist: in the live expositions (a router, an
 * agent and the simulator, which speaks vLLM's metrics), or for error codes
 * and refusal reasons that appear only once they happen, in their registries.
 * The same live processes show the logs: JSON lines on stderr, one
 * access-log line per request at the router and at the agent under the same
 * request id.
 *
 * promtool comes from Debian's `prometheus` package (.ci/run installs it);
 * without it on PATH the promtool checks skip, saying so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REJECT_REASONS } from '@warmpath/agent';
import { ROUTE_LABELS } from '@warmpath/router';
import { generateSwarmKey } from '@warmpath/shared/gossip';
import { DROP_REASONS, ERRORS } from '@warmpath/shared/wire';
import { findProgram, missingProgram, waitFor } from '@warmpath/testkit';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ROOT } from '../src/build.ts';
import { REPO } from './manifests.ts';

const DIR = join(REPO, 'deploy/observability');
const CLI = join(CLI_ROOT, 'src/main.ts');
const PROMTOOL = findProgram('promtool');
const NO_PROMTOOL = missingProgram('promtool', 'prometheus');
/** vLLM's name for KV-cache use before V1; the dashboard falls back to it and the agent reads both (the simulator speaks the new one). */
const OLDER_ENGINE_NAMES = new Set(['vllm:gpu_cache_usage_perc']);

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  if (PROMTOOL === undefined) throw new Error(NO_PROMTOOL);
  const res = spawnSync(PROMTOOL, args, { cwd: DIR, encoding: 'utf8', ...(input !== undefined ? { input } : {}) });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

const children: ChildProcess[] = [];
/** Each command's stderr so far (its JSON log lines). */
const stderr: Record<string, string> = {};
function start(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    stderr[args[0]!] = err;
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`warmpath ${args[0]} exited ${code}: ${err}`)));
  });
}
const field = (line: string, key: string): string => new RegExp(`${key}=(\\S+)`).exec(line)?.[1] ?? '';

const live = { router: '', agent: '', engine: '' };
const REQUEST_ID = `obs-request-${process.pid}`;
beforeAll(async () => {
  const fleet = `obs-${process.pid}`;
  const simUrl = /(http:\/\/\S+)/.exec(await start(['sim', '--port', '0', '--profile', 'tiny']))![1]!;
  const key = join(mkdtempSync(join(tmpdir(), 'wp-obs-')), 'swarm.key');
  writeFileSync(key, generateSwarmKey());
  // A one-chunk cache model, so that two requests evict and the eviction-age gauge exists.
  const agent = await start([
    'agent',
    '--engine',
    'vllm',
    '--engine-url',
    simUrl,
    '--port',
    '0',
    '--admin-port',
    '0',
    '--fleet',
    fleet,
    '--swarm-key',
    key,
    '--replica-id',
    'obs-0',
    '--cache-capacity-chunks',
    '1',
  ]);
  const routerUrl = field(
    await start(['router', '--port', '0', '--fleet', fleet, '--swarm-key', key, '--bootstrap', field(agent, 'peer')]),
    'url',
  );
  await waitFor(async () => (await fetch(`${routerUrl}/readyz`)).status === 200, {
    timeoutMs: 20_000,
    message: 'the router to see the replica',
  });
  // Two requests, so that labelled series (placements by branch…) and the cache's eviction age exist.
  const models = (await (await fetch(`${routerUrl}/v1/models`)).json()) as { data: Array<{ id: string }> };
  const first = await fetch(`${routerUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: models.data[0]!.id,
      messages: [{ role: 'user', content: 'x'.repeat(1_000) }],
      max_tokens: 2,
    }),
  });
  expect(first.status).toBe(200);
  await first.arrayBuffer();
  const res = await fetch(`${routerUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': REQUEST_ID },
    body: JSON.stringify({ model: models.data[0]!.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('x-request-id')).toBe(REQUEST_ID);
  await res.arrayBuffer();
  live.router = await (await fetch(`${routerUrl}/metrics`)).text();
  // The agent sets its cache gauges when it next publishes its state (within a quarter second).
  live.agent = await waitFor(
    async () => {
      const text = await (await fetch(`${field(agent, 'admin')}/metrics`)).text();
      return text.includes('warmpath_agent_cache_eviction_age_seconds ') && text;
    },
    { timeoutMs: 5_000, message: "the agent's eviction-age gauge" },
  );
  live.engine = await (await fetch(`${simUrl}/metrics`)).text();
}, 60_000);

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Metric family → label → values seen, from an exposition's samples (and the family names from # TYPE). */
function families(text: string): Map<string, Map<string, Set<string>>> {
  const out = new Map<string, Map<string, Set<string>>>();
  const family = (name: string) => out.get(name) ?? out.set(name, new Map()).get(name)!;
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)/.exec(line);
    if (type !== null) {
      family(type[1]!);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
    if (sample === null) continue;
    const labels = family(sample[1]!.replace(/_(bucket|sum|count)$/, '')).set('', new Set());
    for (const [, k, v] of (sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      (labels.get(k!) ?? labels.set(k!, new Set()).get(k!)!).add(v!);
  }
  return out;
}

/** Every PromQL expression of the rules and the dashboard. */
function expressions(): string[] {
  const rules = parseYaml(readFileSync(join(DIR, 'alerts.yaml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ expr: string }> }>;
  };
  const dashboard = JSON.parse(readFileSync(join(DIR, 'grafana-dashboard.json'), 'utf8')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
  };
  return [
    ...rules.groups.flatMap((g) => g.rules.map((r) => r.expr)),
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
  ];
}

// Listed only when promtool is missing: the skip says what to install.
if (PROMTOOL === undefined) describe('deploy/observability with promtool', () => it.skip(NO_PROMTOOL, () => {}));

describe.runIf(PROMTOOL)('deploy/observability with promtool', () => {
  it('the alert rules pass `promtool check rules`, and their unit tests pass `promtool test rules`', () => {
    const check = promtool(['check', 'rules', 'alerts.yaml']);
    expect(check.status, check.output).toBe(0);
    const test = promtool(['test', 'rules', 'alerts.test.yaml']);
    expect(test.status, test.output).toBe(0);
  });

  it('the example scrape configuration passes `promtool check config` and scrapes the ports the manifests use', () => {
    const check = promtool(['check', 'config', 'prometheus.yml']);
    expect(check.status, check.output).toBe(0);
    const config = parseYaml(readFileSync(join(DIR, 'prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{ job_name: string; dns_sd_configs: Array<{ port: number }> }>;
    };
    const port = (job: string) => config.scrape_configs.find((s) => s.job_name === job)?.dns_sd_configs[0]?.port;
    const manifests = ['router.yaml', 'model-server.yaml']
      .map((f) => readFileSync(join(REPO, 'deploy/kubernetes', f), 'utf8'))
      .join('\n');
    for (const [job, name] of [
      ['warmpath-router', 'http'],
      ['warmpath-agent', 'admin'],
      ['vllm', 'engine'],
    ] as const) {
      expect(manifests).toMatch(new RegExp(`- name: ${name}\\n\\s+containerPort: ${port(job)}\\n`));
    }
  });

  it("a live router's and agent's /metrics pass `promtool check metrics`", () => {
    for (const [who, text] of [
      ['router', live.router],
      ['agent', live.agent],
    ] as const) {
      const lint = promtool(['check', 'metrics'], text);
      expect(lint.status, `${who}: ${lint.output}`).toBe(0);
    }
  });
});

describe('the live metrics and logs', () => {
  it('count requests by route and status, TTFT, duration and attempts, with the process metrics', () => {
    const router = families(live.router);
    for (const name of [
      'warmpath_router_requests_total',
      'warmpath_router_ttft_seconds',
      'warmpath_router_request_duration_seconds',
      'warmpath_router_upstream_attempts_total',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(router.has(name), name).toBe(true);
    }
    expect(router.get('warmpath_router_requests_total')!.get('status')).toContain('200');
    expect(families(live.agent).has('process_resident_memory_bytes')).toBe(true);
  });

  it('name every counter `_total` and nothing else so', () => {
    for (const text of [live.router, live.agent]) {
      for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\w+)$/gm))
        expect(`${name} ${type}`).toBe(
          `${name} ${name!.endsWith('_total') ? 'counter' : type === 'counter' ? '(a counter named _total)' : type}`,
        );
    }
  });

  it('log JSON lines on stderr: one access-log line at the router and one at the agent, under the same request id', async () => {
    const access = (who: string) =>
      (stderr[who] ?? '')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === 'request' && l.requestId === REQUEST_ID);
    await waitFor(() => access('router').length === 1 && access('agent').length === 1, {
      timeoutMs: 5_000,
      message: 'both access-log lines',
    });
    expect(access('router')[0]).toMatchObject({
      level: 'info',
      name: 'router',
      status: 200,
      replica: 'obs-0',
      attempts: 1,
    });
    expect(access('agent')[0]).toMatchObject({
      level: 'info',
      name: 'agent',
      replica: 'obs-0',
      status: 200,
      attempt: 1,
      completionTokens: 2,
    });
  });
});

describe('deploy/observability queries what the components expose', () => {
  it('every metric the alerts and the dashboard query exists', () => {
    const exposed = new Set([live.router, live.agent, live.engine].flatMap((t) => [...families(t).keys()]));
    const queried = new Set(
      expressions().flatMap((e) =>
        [...e.matchAll(/\b(warmpath_[a-z_]+|vllm:[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, '')),
      ),
    );
    expect(queried.size).toBeGreaterThan(10);
    expect([...queried].filter((name) => !exposed.has(name) && !OLDER_ENGINE_NAMES.has(name))).toEqual([]);
  });

  it('every label value they select exists', () => {
    const seen = new Map([...families(live.router), ...families(live.agent), ...families(live.engine)]);
    // Values that appear only once they happen: from the registries that define them.
    const registries: Record<string, readonly string[]> = {
      'warmpath_router_errors_total/code': Object.keys(ERRORS),
      'warmpath_agent_rejected_total/reason': REJECT_REASONS,
      // The decoder's reasons, plus the two the router's fleet view adds.
      'warmpath_router_gossip_drops_total/reason': [...DROP_REASONS, 'fleet', 'superseded'],
      'warmpath_router_requests_total/route': [...ROUTE_LABELS, 'other'],
    };
    const unknown: string[] = [];
    for (const expr of expressions()) {
      for (const [, metric, matchers] of expr.matchAll(/\b([a-z_:][\w:]*)\{([^}]*)\}/g)) {
        for (const [, label, , values] of matchers!.matchAll(/(\w+)\s*(=~|!=|=)\s*"([^"]*)"/g)) {
          if (label === 'job') continue; // the dashboard's job variables
          const known = new Set([
            ...(seen.get(metric!)?.get(label!) ?? []),
            ...(registries[`${metric}/${label}`] ?? []),
          ]);
          for (const v of values!.split('|')) if (!known.has(v)) unknown.push(`${metric}{${label}="${v}"}`);
        }
      }
    }
    expect(unknown).toEqual([]);
  });

  it('the dashboard is well-formed: unique panel ids, a datasource variable, panels inside the 24-column grid without overlap', () => {
    const d = JSON.parse(readFileSync(join(DIR, 'grafana-dashboard.json'), 'utf8')) as {
      uid: string;
      templating: { list: Array<{ name: string; type: string }> };
      panels: Array<{
        id: number;
        type: string;
        gridPos: { x: number; y: number; w: number; h: number };
        targets?: Array<{ expr: string; datasource: { uid: string } }>;
      }>;
    };
    expect(d.uid).toMatch(/^[\w-]{1,40}$/);
    expect(d.templating.list.find((v) => v.name === 'datasource')?.type).toBe('datasource');
    expect(new Set(d.panels.map((p) => p.id)).size).toBe(d.panels.length);
    const cells = new Set<string>();
    for (const p of d.panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x >= 0 && w > 0 && x + w <= 24, `panel ${p.id} fits the grid`).toBe(true);
      for (let i = x; i < x + w; i++)
        for (let j = y; j < y + h; j++) {
          expect(cells.has(`${i},${j}`), `panel ${p.id} overlaps another at ${i},${j}`).toBe(false);
          cells.add(`${i},${j}`);
        }
      if (p.type !== 'row') for (const t of p.targets ?? []) expect(t.datasource.uid).toBe('${datasource}');
    }
  });
});
