/**
 * Goodput: the highest arrival rate at which TTFT p99 (over every request
 * sent, an unanswered one counting as the slowest) and inter-token latency
 * p99 both stay within a stated SLO, per fleet and policy (DES, random L4,
 * 2 routers unless told). Fleets of the same GPUs aggregated (`N`) and disaggregated
 * (`P:D`, des/pd.ts) side by side: where disaggregation pays and where not
 * (docs/DISAGGREGATION.md, "Goodput").
 *
 *   node packages/bench/bench/goodput.ts [--seed N] [--duration S] [--slo-ttft-ms MS] [--slo-itl-ms MS]
 *     [--fleets 10,5:5,3:7] [--policies warmpath,round-robin] [--routers N] [--router-set k=v,…]
 *     [longctx:6,10,14 …]
 *
 * Prints one row per (scenario, fleet, policy): each rate's TTFT p99 / ITL p99
 * (✓ within the SLO), then the goodput: the highest rate within it such that
 * every lower rate swept was within it too (0 when the lowest is not).
 * Smoke: --duration 2 --fleets 2,1:1 longctx:2
 */
import { p99AllRequests } from '../src/goals.ts';
import { DesPool, type DesJob, type JobOutcome } from '../src/pool.ts';
import { SCENARIOS } from '../src/scenarios.ts';

const args = process.argv.slice(2);
const take = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1]! : fallback;
};
const seed = Number(take('--seed', '101'));
const duration = Number(take('--duration', '0'));
const sloTtft = Number(take('--slo-ttft-ms', '5000'));
const sloItl = Number(take('--slo-itl-ms', '60'));
const fleets = take('--fleets', '10,5:5,3:7').split(',');
const policies = take('--policies', 'warmpath,round-robin').split(',');
const routers = Number(take('--routers', '2'));
const routerSet = take('--router-set', '');
const routerOverrides = Object.fromEntries(
  routerSet === '' ? [] : routerSet.split(',').map((kv) => kv.split('=') as [string, string]),
);
const specs = args.length > 0 ? args : ['longctx:6,10,14,18', 'chat:10,15,20,25'];

const pool = new DesPool();
const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(0) : '∞');

/** One (scenario, fleet, policy) row over the rates. */
async function row(name: string, rates: number[], fleet: string, policy: string): Promise<string> {
  const job = (rate: number): DesJob => ({
    scenario: name,
    seed,
    rate,
    duration,
    replicas: fleet.includes(':') ? 0 : Number(fleet),
    ...(fleet.includes(':') ? { pd: fleet } : {}),
    routers,
    l4: 'random',
    policy,
    ...(routerSet !== '' ? { routerOverrides } : {}),
  });
  const runs: JobOutcome[] = await Promise.all(rates.map((rate) => pool.run(job(rate))));
  let goodput = 0;
  let broken = false;
  const cells = runs.map((o, i) => {
    if (!o.ok) {
      broken = true;
      return `failed: ${o.error.split('\n')[0]}`;
    }
    const ttft = p99AllRequests(o.result);
    const itl = o.result.itl_ms.p99;
    const within = ttft <= sloTtft && itl <= sloItl;
    if (within && !broken) goodput = rates[i]!;
    else broken = true;
    return `${f(ttft)} / ${itl.toFixed(1)}${within ? ' ✓' : ''}`;
  });
  return `| ${name} | ${fleet} | ${policy} | ${cells.join(' | ')} | **${goodput}** |`;
}

for (const spec of specs) {
  const [name, list] = spec.split(':') as [string, string];
  if (SCENARIOS[name] === undefined) throw new Error(`unknown scenario "${name}"`);
  const rates = list.split(',').map(Number);
  console.log(
    `\n${name}, seed ${seed}, ${routers} routers, SLO TTFT p99 ≤ ${sloTtft} ms and ITL p99 ≤ ${sloItl} ms (cells: TTFT p99 / ITL p99, ms)\n`,
  );
  console.log(`| scenario | fleet | policy | ${rates.map((r) => `${r} req/s`).join(' | ')} | goodput |`);
  console.log(`|---|---|---|${rates.map(() => '--:|').join('')}--:|`);
  const rows = fleets.flatMap((fleet) => policies.map((policy) => row(name, rates, fleet, policy)));
  for (const r of await Promise.all(rows)) console.log(r);
}
await pool.close();
