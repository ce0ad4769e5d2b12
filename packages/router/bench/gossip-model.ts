/**
 * The gossip cost model: what a router receives at fleet sizes the mesh bench
 * cannot host, calibrated on the rows it measured (bench/mesh.ts `--save`) and
 * on the agents' cadence in the simulator (bench quality.ts `--save` rows).
 *
 * Steps:
 *  1. Cadence: state messages per agent per second, digest hashes per message
 *     and the share of whole messages, as the DES measured for the scenario
 *     (mean over its rows). These are what to pass the mesh bench (`--rate`
 *     = agents × messages, `--digest-hashes`, `--full-every`): printed first.
 *  2. Per message, from every measured row: copies a router receives, the
 *     author/signature and framing per copy, control and transport bytes, and
 *     CPU per copy. A router's bytes per message depend on the mesh degree,
 *     not on how many agents or routers there are (IHAVE gossip aside, which
 *     grows with the routers outside the mesh up to Dlazy: taken from the
 *     rows of the most routers), so the model takes their mean and says how
 *     far each measured row is from it.
 *  3. A fleet: bytes/s = agents × messages per agent-s × share subscribed ×
 *     bytes per message; CPU = copies/s × CPU per copy; delay p99 grows with
 *     the mesh hops, log_D(routers): fitted through the measured 8- and
 *     32-router rows. Steps 2-3 take the rows measured without batches.
 *  4. Batches (rows with states handed off, docs/GOSSIP.md "Batches"): bytes a
 *     router receives per state and per copy = a + b / k + the naming of its
 *     agent (its peer id, at most once a second: every state at a bench's
 *     slow per-agent cadence, fewer at a fleet's), k the states per
 *     batch; a (a state, its slot, the hand-off) and b (a batch's
 *     signature, framing, message id, IHAVE, transport) fitted by least
 *     squares over the batched rows, per copy because the copies differ
 *     from run to run (the mesh each run builds; flooded, about one: pass
 *     one relay's rows, `relaying.relay` in mesh.ts's); a fleet's bytes per state
 *     are the rows' mean copies × (a + b / k), their fewest and most beside. A fleet's k follows from the window W
 *     and the states λ one router takes per second and group (agents ×
 *     messages × share / routers): under the window's rule (a batch at most
 *     once per W, a state after a quiet W at once) with Poisson arrivals,
 *     k = λW + e^(−λW); W the fixed 50 ms and, where it differs, the window
 *     production widens with the routers and the states (window.ts).
 *  5. CPU at a fleet's full cadence (rows of bench/cadence.ts `--save`, one
 *     router measured): cores = c + s × states applied/s + b × batches
 *     received/s, least squares over the rows whose event loop had room; a
 *     fleet's router takes agents × messages × share states a second in
 *     (routers − 1) × λ / k batches (every router batching every group, one
 *     batch a window at most). An agent's states that wait in one window
 *     go as one (coalesce.ts): with an agent's states at Poisson times of
 *     rate μ (messages per agent-s), a window W holds at least one with
 *     probability 1 − e^(−μW), so a router applies its own agents' states
 *     and the others' × (1 − e^(−μW)) / (μW); printed beside the states
 *     taken, and the cores at both (the rows fed Poisson arrivals and chained
 *     digests, cadence.ts `--arrivals random --digest chain`, coalesce so).
 * Complexity: O(rows). Trade-off: one payload size (the scenario's mean) per
 * fleet; the per-copy bytes are a mean, so a row's bytes are off by the
 * spread printed beside it.
 *
 *   node packages/router/bench/gossip-model.ts --des rows.json --mesh a.json,b.json [--scenario seed] [--d 2]
 *   node packages/router/bench/gossip-model.ts --messages M --mesh a.json   # the cadence given (docs/GOSSIP.md), not read from DES rows
 *   node packages/router/bench/gossip-model.ts --messages M --mesh b.json,c.json   # batched rows (mesh.ts, batches on)
 *   node packages/router/bench/gossip-model.ts --messages M --mesh f.json,f400.json   # flooded rows (--relay flood; docs/GOSSIP.md)
 *   node packages/router/bench/gossip-model.ts --messages M --cadence docs/data/cadence.json   # CPU at full cadence (cadence.ts rows)
 *   … --batch-reads 250 --batch-states 0   # the fleets at another gossipBatchReadsPerS, gossipBatchStatesPerS
 *
 * Smoke: --messages 6.5
 */
import { readFileSync } from 'node:fs';
import { BATCH_READS_PER_S, BATCH_STATES_PER_S, BATCH_WINDOW_MS, windowFor } from '@warmpath/shared/gossip';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values: args } = scriptArgs(import.meta.url, {
  options: {
    des: { type: 'string' },
    messages: { type: 'string' },
    mesh: { type: 'string', default: '' },
    cadence: { type: 'string', default: '' },
    scenario: { type: 'string', default: 'seed' },
    d: { type: 'string', default: '2' },
    'batch-reads': { type: 'string' },
    'batch-states': { type: 'string' },
  },
});
/** Batches a router reads a second at most, as the routers' `gossipBatchReadsPerS` (production's unless given). */
const READS = args['batch-reads'] === undefined ? BATCH_READS_PER_S : Number(args['batch-reads']);
/** States a router reads a second at most, as the routers' `gossipBatchStatesPerS` (production's unless given). */
const STATES = args['batch-states'] === undefined ? BATCH_STATES_PER_S : Number(args['batch-states']);

interface DesRow {
  scenario: string;
  messagesPerReplicaS?: number;
  hashesPerMessage?: number;
  fullShare?: number;
}
interface MeshRow {
  batches?: { published: number; received: number; handOffs: number };
  agents: number;
  routers: number;
  rate: number;
  latency: { p50: number; p99: number };
  perMessage: {
    copies: number;
    unique: number;
    state: number;
    authorSignature: number;
    framing: number;
    duplicates: number;
    total: number;
    wire: number;
  };
  perRouterPerS: { copies: number; unique: number };
  cpuPerRouter: number;
  elu: number;
  /** Whether the fleet had formed before the window (mesh.ts); rows without it are kept. */
  convergence?: { ok: boolean };
}

/**
 * A batch names a state's agent (its peer id: 38 bytes and a length) on first
 * sight and then at most once per AUTHOR_EVERY_MS (1 s, shared gossip/batch.ts):
 * an agent sending s states a second has one in ceil(s) named, every one at
 * under one a second. Bytes a copy for that, at s states per agent-second.
 */
const AUTHOR_BYTES = 39;
const naming = (s: number): number => AUTHOR_BYTES / Math.max(1, Math.ceil(s));
/** Event-loop utilization from which a row's delay is the bench process's queueing. */
const SATURATED = 0.9;
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const D = Number(args.d);

// 1. Cadence.
const given: DesRow[] = [{ scenario: args.scenario, messagesPerReplicaS: Number(args.messages), hashesPerMessage: 12 }];
const des =
  args.messages !== undefined
    ? given
    : (JSON.parse(readFileSync(args.des ?? '', 'utf8')) as DesRow[]).filter(
        (r) => r.scenario === args.scenario && r.messagesPerReplicaS !== undefined,
      );
if (des.length === 0) throw new Error(`no DES rows of ${args.scenario} with gossip figures in ${args.des}`);
const perAgent = mean(des.map((r) => r.messagesPerReplicaS!));
const hashes = mean(des.map((r) => r.hashesPerMessage ?? 0));
const fullShare = mean(des.map((r) => r.fullShare ?? 1));
console.log(
  `${args.scenario} (DES, ${des.length} rows): ${perAgent.toFixed(2)} messages per agent per s, ${hashes.toFixed(1)} digest hashes per message, ${(100 * fullShare).toFixed(0)}% whole`,
);
console.log(
  `mesh bench flags for this cadence: --rate <agents × ${perAgent.toFixed(1)}> --digest-hashes ${Math.round(hashes)} --full-every ${Math.max(1, Math.round(1 / fullShare))}\n`,
);

// 2. Per message, from the measured rows.
const read = args.mesh
  .split(',')
  .filter((f) => f !== '')
  .flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as MeshRow[]);
// A fleet that had not formed (the mesh in parts, agents unlinked) measures a broken mesh, not the model's.
const rows = read.filter((r) => r.convergence?.ok !== false);
if (rows.length < read.length) console.log(`${read.length - rows.length} row(s) left out: the fleet had not formed\n`);
if (args.cadence !== '')
  modelCpu(args.cadence.split(',').flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as CadenceRow[]));
if (rows.length === 0) process.exit(0);
const batched = rows.filter((r) => (r.batches?.published ?? 0) > 0);
const unbatched = rows.filter((r) => !batched.includes(r));
// A row's figures are per message published; a saturated bench delivers only a share (`unique`) in its window: per state delivered.
const per = unbatched.map((r) => {
  const m = r.perMessage;
  const u = Math.max(1e-9, m.unique);
  return {
    r,
    copies: m.copies / u,
    payload: m.state / u,
    overhead: (m.authorSignature + m.framing) / u,
    // Everything else a router receives per message: control, transport, and the duplicates' share beyond the payload.
    rest: (m.wire - m.state - m.authorSignature - m.framing - m.duplicates) / u,
    wire: m.wire / u,
    cpuPerCopy: r.cpuPerRouter / Math.max(1e-9, r.perRouterPerS.copies),
  };
});
// The rows of the most routers: IHAVE gossip grows with the peers outside the mesh until Dlazy of them.
const widest = per.filter((p) => p.r.routers === Math.max(...per.map((q) => q.r.routers)));
const model = {
  copies: mean(widest.map((p) => p.copies)),
  payload: mean(per.map((p) => p.payload)),
  overhead: mean(widest.map((p) => p.overhead)),
  rest: mean(widest.map((p) => p.rest)),
  cpuPerCopy: mean(per.map((p) => p.cpuPerCopy)),
};
/** Bytes a router receives per state message of the fleet it subscribes to. */
const bytesPerMessage = (payload: number): number => model.copies * (payload + model.overhead) + model.rest;

console.log('measured rows against the model (bytes a router receives per message):\n');
console.log(
  '| agents × routers | fleet messages/s | copies | payload | author+signature+framing | control+transport | on the socket | model | router MB/s | CPU per router, cores | delay p50 / p99, ms | event loop |',
);
console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|');
for (const p of per) {
  const r = p.r;
  console.log(
    `| ${r.agents} × ${r.routers} | ${r.rate.toFixed(0)} | ${p.copies.toFixed(2)} | ${p.payload.toFixed(0)} | ${p.overhead.toFixed(0)} | ${p.rest.toFixed(0)} | ${p.wire.toFixed(0)} | ${bytesPerMessage(p.payload).toFixed(0)} | ` +
      `${((r.rate * r.perMessage.wire) / 1e6).toFixed(2)} | ${r.cpuPerRouter.toFixed(3)} | ${r.latency.p50.toFixed(0)} / ${r.latency.p99.toFixed(0)} | ${r.elu.toFixed(2)} |`,
  );
}

// 3. Fleets.
const hops = (routers: number): number => 1 + Math.log(Math.max(1, routers)) / Math.log(Math.max(2, D));
// A saturated process's delay is its own queue, not the mesh's: only rows with room in the event loop.
const delayFit = fitDelay(unbatched.filter((r) => r.elu < SATURATED));
const fleets: Array<[agents: number, routers: number, share: number]> = [
  [100, 8, 1],
  [300, 8, 1],
  [1_000, 8, 1],
  [100, 32, 1],
  [300, 32, 1],
  [1_000, 32, 1],
  [10_000, 100, 1],
  [10_000, 100, 0.1],
];
console.log(
  `\nthe model at the scenario's cadence (${perAgent.toFixed(2)} messages per agent-s, ${model.payload.toFixed(0)}-byte payload, ${model.copies.toFixed(2)} copies): per router\n`,
);
console.log(
  '| agents × routers | subscribed | messages/s | bytes per message | MB/s received | CPU, cores | delay p99, ms (fit) |',
);
console.log('|---|--:|--:|--:|--:|--:|--:|');
for (const [agents, routers, share] of fleets) {
  const rate = agents * perAgent * share;
  const b = bytesPerMessage(model.payload);
  const cpu = rate * model.copies * model.cpuPerCopy;
  const p99 = delayFit === undefined ? Number.NaN : delayFit.a + delayFit.b * hops(routers);
  console.log(
    `| ${agents} × ${routers} | ${share === 1 ? 'all' : `${share * 100}%`} | ${rate.toFixed(0)} | ${b.toFixed(0)} | ${((rate * b) / 1e6).toFixed(2)} | ${cpu.toFixed(2)} | ${Number.isFinite(p99) ? p99.toFixed(0) : '—'} |`,
  );
}

/** Delay p99 = a + b × hops(routers), least squares over the rows (undefined with one router count). */
function fitDelay(xs: MeshRow[]): { a: number; b: number } | undefined {
  const pts = xs.map((r) => [hops(r.routers), r.latency.p99] as const);
  const mx = mean(pts.map(([x]) => x));
  const my = mean(pts.map(([, y]) => y));
  const sxx = pts.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  if (sxx === 0) return undefined;
  const b = pts.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / sxx;
  // Fewer hops never deliver later: a falling fit is noise (a loaded host), not a model.
  return b > 0 ? { a: my - b * mx, b } : undefined;
}

// 4. Batches.
if (batched.length > 0) modelBatches(batched);

/** Step 4: bytes per state and copy = a + b / k over the batched rows, and the fleets at the fixed and the widened window. */
function modelBatches(xs: MeshRow[]): void {
  // x = batches a router received per state of the fleet (1 / k); y = bytes on its socket per state and copy.
  const copiesOf = (r: MeshRow): number => r.perMessage.copies / Math.max(1e-9, r.perMessage.unique);
  // Per copy, without the namings the row's cadence made (AUTHOR_BYTES each); the fleet's cadence adds its own back.
  const pts = xs.map(
    (r) => [r.batches!.received / r.rate, r.perMessage.wire / copiesOf(r) - naming(r.rate / r.agents)] as const,
  );
  const mx = mean(pts.map(([x]) => x));
  const my = mean(pts.map(([, y]) => y));
  const sxx = pts.reduce((acc, [x]) => acc + (x - mx) ** 2, 0);
  const b = sxx > 0 ? pts.reduce((acc, [x, y]) => acc + (x - mx) * (y - my), 0) / sxx : 0;
  const a = my - b * mx;
  const copies = xs.map(copiesOf);
  const [fewest, most, meanCopies] = [Math.min(...copies), Math.max(...copies), mean(copies)];
  console.log(
    `\nbatched rows: bytes a router receives per state = copies × (${a.toFixed(0)} + ${b.toFixed(0)} / k + the agent's naming), least squares; copies ${fewest.toFixed(2)}–${most.toFixed(2)}; naming ${naming(perAgent).toFixed(0)} bytes a copy at ${perAgent.toFixed(2)} states per agent-s\n`,
  );
  console.log(
    '| agents × routers | fleet states/s | states per batch (first hop) | copies | bytes per state | model | delay p50 / p99, ms | event loop |',
  );
  console.log('|---|--:|--:|--:|--:|--:|---|--:|');
  xs.forEach((r, i) => {
    const [x, y] = pts[i]!;
    const k = r.batches!.handOffs / r.batches!.published;
    const back = naming(r.rate / r.agents);
    console.log(
      `| ${r.agents} × ${r.routers} | ${r.rate.toFixed(0)} | ${k.toFixed(1)} | ${copies[i]!.toFixed(2)} | ${((y + back) * copies[i]!).toFixed(0)} | ${((a + b * x + back) * copies[i]!).toFixed(0)} | ${r.latency.p50.toFixed(0)} / ${r.latency.p99.toFixed(0)} | ${r.elu.toFixed(2)} |`,
    );
  });
  console.log(`\nthe fleets, batched (${perAgent.toFixed(2)} messages per agent-s): per router\n`);
  console.log(
    `| agents × routers | subscribed | window, ms | states per batch | bytes per state | MB/s received (${fewest.toFixed(2)}–${most.toFixed(2)} copies) |`,
  );
  console.log('|---|--:|--:|--:|--:|--:|');
  for (const [agents, routers, share] of fleets)
    for (const windowMs of windowsOf(agents, routers)) {
      const lambdaW = ((agents * perAgent * share) / routers) * (windowMs / 1_000);
      const k = lambdaW + Math.exp(-lambdaW);
      const perCopy = a + b / k + naming(perAgent);
      const mbs = (c: number): string => ((agents * perAgent * share * perCopy * c) / 1e6).toFixed(2);
      console.log(
        `| ${agents} × ${routers} | ${share === 1 ? 'all' : `${share * 100}%`} | ${windowMs} | ${k.toFixed(1)} | ${(perCopy * meanCopies).toFixed(0)} | ${mbs(meanCopies)} (${mbs(fewest)}–${mbs(most)}) |`,
      );
    }
}

/**
 * The fixed window, and production's widened (each router floods to the other R − 1) when it differs: for the
 * batches each reads and for the states, its agents' (agents ÷ routers, every group's) coalesced in a window.
 */
function windowsOf(agents: number, routers: number): number[] {
  const handed = { agents: agents / routers, perS: (agents / routers) * perAgent };
  const widened = windowFor(BATCH_WINDOW_MS, routers - 1, handed, READS, STATES);
  return widened === BATCH_WINDOW_MS ? [BATCH_WINDOW_MS] : [BATCH_WINDOW_MS, widened];
}

/** A row of bench/cadence.ts: one router at a fleet's full cadence. */
interface CadenceRow {
  agents: number;
  routers: number;
  applied: number;
  batchesIn: number;
  cpu: number;
  elu: number;
  batchMs?: number;
  /** The window in force at the router under test (the floor widened with the routers). */
  windowMs?: number;
}

/** A fleet's router at full cadence: states taken, states applied after the first hop's coalescing, and batches received per second (step 5). */
function cadenceLoad(agents: number, routers: number, share: number, windowMs: number): [number, number, number] {
  const states = agents * perAgent * share;
  const lambda = states / routers;
  const w = windowMs / 1_000;
  const k = lambda * w + Math.exp(-lambda * w);
  const kept = (1 - Math.exp(-perAgent * w)) / (perAgent * w);
  return [states, lambda + (states - lambda) * kept, ((routers - 1) * lambda) / k];
}

/** Step 5: cores = c + s × states/s + b × batches/s over the rows with room, and the fleets. */
function modelCpu(xs: CadenceRow[]): void {
  const fit = xs.filter((r) => r.elu < SATURATED);
  const [c = 0, s = 0, b = 0] = leastSquares(
    fit.map((r) => [1, r.applied, r.batchesIn]),
    fit.map((r) => r.cpu),
  );
  const cores = (states: number, batches: number): number => c + s * states + b * batches;
  console.log(
    `full cadence (cadence.ts rows, ${fit.length} of ${xs.length} with room): a router's cores = ${c.toFixed(3)} + ${(s * 1e3).toFixed(3)} ms a state + ${(b * 1e3).toFixed(2)} ms a batch received\n`,
  );
  console.log('| agents × routers | window, ms | states/s | batches in/s | CPU, cores | model | event loop |');
  console.log('|---|--:|--:|--:|--:|--:|--:|');
  for (const r of xs)
    console.log(
      `| ${r.agents} × ${r.routers} | ${r.windowMs ?? r.batchMs ?? BATCH_WINDOW_MS} | ${r.applied.toFixed(0)} | ${r.batchesIn.toFixed(0)} | ${r.cpu.toFixed(2)} | ${cores(r.applied, r.batchesIn).toFixed(2)} | ${r.elu.toFixed(2)} |`,
    );
  console.log(
    `\nthe fleets at full cadence (${perAgent.toFixed(2)} messages per agent-s; the window: ${BATCH_WINDOW_MS} ms, or as production widens it, window.ts): per router\n`,
  );
  console.log(
    '| agents × routers | subscribed | window, ms | states/s taken | applied, coalesced | batches in/s | CPU, cores | coalesced |',
  );
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|');
  for (const [agents, routers, share] of [
    [1_000, 8, 1],
    [1_000, 32, 1],
    [1_000, 100, 1],
    [10_000, 100, 1],
    [10_000, 100, 0.1],
  ] as const) {
    for (const windowMs of windowsOf(agents, routers)) {
      const [states, applied, batches] = cadenceLoad(agents, routers, share, windowMs);
      console.log(
        `| ${agents} × ${routers} | ${share === 1 ? 'all' : `${share * 100}%`} | ${windowMs} | ${states.toFixed(0)} | ${applied.toFixed(0)} | ${batches.toFixed(0)} | ${cores(states, batches).toFixed(2)} | ${cores(applied, batches).toFixed(2)} |`,
      );
    }
  }
  console.log('');
}

/** Least squares: the coefficients x minimising |A x − y| (normal equations, Gaussian elimination). */
function leastSquares(a: number[][], y: number[]): number[] {
  const n = a[0]?.length ?? 0;
  const m = Array.from({ length: n }, (_, i) => [
    ...Array.from({ length: n }, (_, j) => a.reduce((acc, row) => acc + row[i]! * row[j]!, 0)),
    a.reduce((acc, row, k) => acc + row[i]! * y[k]!, 0),
  ]);
  for (let i = 0; i < n; i++) {
    const p = m.slice(i).reduce((best, row, k) => (Math.abs(row[i]!) > Math.abs(m[best]![i]!) ? i + k : best), i);
    [m[i], m[p]] = [m[p]!, m[i]!];
    for (let r = 0; r < n; r++) {
      if (r === i || m[i]![i] === 0) continue;
      const f = m[r]![i]! / m[i]![i]!;
      for (let col = i; col <= n; col++) m[r]![col]! -= f * m[i]![col]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}
