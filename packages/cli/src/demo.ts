/**
 * `warmpath demo`: a local fleet on this machine — simulator replicas, each
 * with its agent, and two routers, joined by real gossip under a generated
 * swarm key. Prints the router URLs, a curl and an `openai` SDK snippet, and
 * runs until Ctrl-C.
 *
 * `--smoke` also sends a short mixed workload (the seed scenario, scaled to
 * the fleet) through both routers, once with the warmpath policy and once with
 * round-robin (fresh caches each time), prints TTFT, cache hit rate and
 * spills side by side, and exits: 0 when every request was answered.
 */
import { configFromProcess, type CommandHelp, type Schema } from '@warmpath/shared/runtime';
import {
  CPU_KV_RATIO_SETTING,
  cpuKvTokensOf,
  DEFAULT_MODEL,
  KV_SHARING_SETTING,
  SCENARIOS,
  tierRouterSettings,
} from '@warmpath/bench';
import { launchFleet, type LaunchOptions, type LocalFleet } from '@warmpath/launch';
import { runLoad, percentile, type RequestResult } from '@warmpath/bench';
import { readSims, diffTotals, resetSims } from '@warmpath/bench';

export const demoSchema = {
  replicas: {
    type: 'number',
    default: 4,
    min: 1,
    max: 64,
    integer: true,
    doc: 'simulator replicas (each with its agent)',
  },
  routers: { type: 'number', default: 2, min: 1, max: 16, integer: true, doc: 'routers' },
  profile: {
    type: 'string',
    default: 'h100-llama3-8b',
    doc: 'simulator profile (h100-llama3-8b, a100-llama3-8b, h100x4-llama3-70b, tiny)',
  },
  speed: {
    type: 'number',
    default: 1,
    min: 0.1,
    max: 100,
    doc: 'simulated time runs this many times faster than wall time',
  },
  smoke: {
    type: 'boolean',
    default: false,
    doc: 'send a short workload with warmpath and with round-robin, print a table, exit',
  },
  duration: { type: 'number', default: 20, min: 1, doc: 'smoke workload length, simulated seconds' },
  rate: { type: 'number', default: 0, min: 0, doc: 'smoke requests per simulated second (0 = 1.2 per replica)' },
  pd: {
    type: 'string',
    default: '',
    doc: 'a disaggregated fleet P:D of P prefill and D decode simulators, instead of --replicas',
  },
  ...CPU_KV_RATIO_SETTING,
  ...KV_SHARING_SETTING,
} as const satisfies Schema;

/** `--pd P:D` → the replicas' roles; undefined for an aggregated fleet. */
export function pdRoles(spec: string): ('prefill' | 'decode')[] | undefined {
  if (spec === '') return undefined;
  const m = /^(\d+):(\d+)$/.exec(spec);
  const p = Number(m?.[1]);
  const d = Number(m?.[2]);
  if (m === null || p < 1 || d < 1 || p + d > 64)
    throw new Error(`--pd takes P:D, at least one of each and at most 64 in all (got "${spec}")`);
  return [...Array<'prefill'>(p).fill('prefill'), ...Array<'decode'>(d).fill('decode')];
}

export const DEMO_HELP: CommandHelp = {
  description:
    'A local fleet on this machine: simulator replicas, each with its agent, and routers, joined by real gossip under a generated swarm key. Prints the router URLs, a curl and an openai SDK snippet, and runs until Ctrl-C. --smoke sends a short workload through it with warmpath and with round-robin, prints the comparison and exits.',
  examples: [
    'warmpath demo',
    '# 8 replicas behind 3 routers',
    'warmpath demo --replicas 8 --routers 3',
    '# a disaggregated fleet: 2 prefill and 2 decode simulators',
    'warmpath demo --pd 2:2',
    '# the comparison table, then exit (0 when every request was answered)',
    'warmpath demo --smoke --duration 30',
  ],
};

interface Row {
  policy: string;
  results: RequestResult[];
  hitRate: number;
  preemptions: number;
}

async function runSmoke(
  fleet: LocalFleet,
  cfg: { replicas: number; routers: number; duration: number; rate: number; speed: number },
): Promise<Row[]> {
  const rate = cfg.rate > 0 ? cfg.rate : 1.2 * cfg.replicas;
  const plan = SCENARIOS.seed!.build({ seed: 7, rate, duration: cfg.duration, model: DEFAULT_MODEL }).map((p) => ({
    ...p,
    at: p.at / cfg.speed,
  }));
  const simUrls = fleet.sims.map((s) => s.info.url!);
  const rows: Row[] = [];
  for (const policy of ['warmpath', 'round-robin']) {
    if (policy !== 'warmpath') {
      for (const r of [...fleet.routers]) await r.stop();
      fleet.routers.length = 0;
      await resetSims(simUrls);
      for (let i = 0; i < cfg.routers; i++) await fleet.addRouter(policy);
      await fleet.waitConverged();
    }
    const before = await readSims(simUrls);
    process.stdout.write(`  ${policy}: ${plan.length} requests through ${fleet.routerUrls.length} routers… `);
    const results = await runLoad(plan, fleet.routerUrls);
    const t = diffTotals((await readSims(simUrls)).totals, before.totals);
    for (const r of results) {
      r.ttftMs *= cfg.speed;
      r.e2eMs *= cfg.speed;
    }
    console.log(`${results.filter((r) => r.ok).length} ok`);
    rows.push({
      policy,
      results,
      hitRate: t.promptTokens > 0 ? t.cachedTokens / t.promptTokens : 0,
      preemptions: t.preemptions,
    });
  }
  return rows;
}

function printTable(rows: Row[]): void {
  const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
  console.log('\n| policy | requests | errors | TTFT p50 ms | TTFT p99 ms | cache hit rate | spills | preemptions |');
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of rows) {
    const ok = r.results.filter((x) => x.ok);
    const ttft = ok.map((x) => x.ttftMs);
    const spills = r.results.filter((x) => x.route === 'spill').length;
    console.log(
      `| ${r.policy} | ${r.results.length} | ${r.results.length - ok.length} | ${fmt(percentile(ttft, 50))} | ${fmt(percentile(ttft, 99))} | ${(r.hitRate * 100).toFixed(1)}% | ${spills} | ${r.preemptions} |`,
    );
  }
}

/** The demo fleet: with host memory and KV sharing as asked, and the routers' tier costs set from the profile (as the benchmark sets them). */
function launchOptions(
  cfg: { replicas: number; routers: number; profile: string; speed: number; cpuKvRatio: number; kvSharing: string },
  roles: ('prefill' | 'decode')[] | undefined,
): LaunchOptions {
  const shape = {
    replicas: cfg.replicas,
    profile: cfg.profile,
    cpuKvRatio: cfg.cpuKvRatio,
    ...(cfg.kvSharing === 'peer' ? { kvSharing: 'peer' as const } : {}),
  };
  const costs = Object.entries(tierRouterSettings(shape));
  return {
    ...(roles !== undefined ? { roles } : {}),
    replicas: cfg.replicas,
    routers: cfg.routers,
    profile: cfg.profile,
    speed: cfg.speed,
    policy: 'warmpath',
    simArgs: ['--cpu-kv-tokens', String(cpuKvTokensOf(shape))],
    ...(cfg.kvSharing === 'peer' ? { kvSharing: true } : {}),
    routerArgs: costs.flatMap(([k, v]) => [`--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, String(v)]),
  };
}

export async function run(argv: string[]): Promise<void> {
  const parsed = configFromProcess('demo', demoSchema, argv, DEMO_HELP);
  const roles = pdRoles(parsed.pd);
  const cfg = { ...parsed, replicas: roles?.length ?? parsed.replicas };
  const kinds = roles === undefined ? '' : ` (${parsed.pd.replace(':', ' prefill, ')} decode)`;
  console.log(
    `warmpath demo: starting ${cfg.replicas} simulator replicas${kinds} (${cfg.profile}, speed ${cfg.speed}×), ${cfg.replicas} agents and ${cfg.routers} routers…`,
  );
  const fleet = await launchFleet(launchOptions(cfg, roles));
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await fleet.stop();
    process.exit(code);
  };
  // Ctrl-C reaches every process of the terminal's group at once, the fleet's too: each stops on its own, and stop() waits for them.
  const onSignal = (): void => {
    if (!stopping) console.log('\nstopping the fleet…');
    void stop(0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await fleet.waitConverged();
  } catch (err) {
    console.error(String(err));
    for (const p of [...fleet.routers, ...fleet.agents]) console.error(`--- ${p.name} ---\n${p.logs()}`);
    await stop(1);
    return;
  }
  const [url] = fleet.routerUrls;
  console.log(`\nfleet ready (gossip under a private swarm key: ${fleet.swarmKeyFile})`);
  fleet.routerUrls.forEach((u, i) => console.log(`  router ${i}: ${u}`));
  fleet.agents.forEach((a, i) =>
    console.log(
      `  replica-${i}${roles !== undefined ? ` (${roles[i]})` : ''}: agent ${a.info.proxy} (admin ${a.info.admin}) → sim ${fleet.sims[i]!.info.url}`,
    ),
  );
  console.log(`
try it:
  curl -sN ${url}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"${DEFAULT_MODEL}","stream":true,"messages":[{"role":"user","content":"Hello!"}]}' -D - 

or with the openai SDK (npm install openai):
  import OpenAI from 'openai';
  const client = new OpenAI({ baseURL: '${url}/v1', apiKey: 'unused' });
  const r = await client.chat.completions.create({ model: '${DEFAULT_MODEL}', messages: [{ role: 'user', content: 'Hello!' }] });
  console.log(r.choices[0].message.content);

response headers x-warmpath-replica and x-warmpath-route say where and why; ${url}/metrics has the counters.`);
  if (!cfg.smoke) {
    console.log('\nCtrl-C stops the fleet.');
    return;
  }
  console.log('\nsmoke workload (seed scenario scaled to the fleet):');
  try {
    const rows = await runSmoke(fleet, cfg);
    printTable(rows);
    const failed = rows.reduce((s, r) => s + r.results.filter((x) => !x.ok).length, 0);
    if (failed > 0) console.error(`\n${failed} requests failed`);
    await stop(failed > 0 ? 1 : 0);
  } catch (err) {
    console.error(err);
    await stop(1);
  }
}
