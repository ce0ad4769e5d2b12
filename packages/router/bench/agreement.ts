/**
 * How often two routers make the same choice for the same request, given the
 * same gossip (same view) but each with only its own local state (in-flight
 * work, optimistic overlay). Virtual time; requests alternate between the two
 * routers like an L4 balancer; both compute a placement for every request,
 * the owner dispatches it. Agents report every 250 ms: load = all in-flight
 * work on the replica, digest += chains of the requests it served.
 *
 *   node packages/router/bench/agreement.ts [replicas=10] [requests/s=40] [seconds=120]
 *
 * Smoke: 4 10 5
 */
import { describeRequest, type ReplicaState } from '@warmpath/shared/wire';
import { routerConfig } from '../src/config.ts';
import { FleetView } from '../src/fleet/view.ts';
import { affinityKey } from '../src/placement/eligible.ts';
import { LocalState, type Ticket } from '../src/core/local.ts';
import { notifyDispatch, placeRequest } from '../src/placement/place.ts';
import { createPolicy } from '../src/placement/registry.ts';
import type { PlacementRequest } from '../src/placement/types.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

/** Positional arguments (the usage above); `--help` prints this file's header. */
const { positionals: argv } = scriptArgs(import.meta.url, { allowPositionals: true, options: {} });

const N = Number(argv[0] ?? 10);
const RATE = Number(argv[1] ?? 40);
const DURATION_MS = Number(argv[2] ?? 120) * 1000; // virtual time
const SERVICE_MS = 3_000; // each request holds its work this long
let rng = 99;
const rand = (): number => (rng = (Math.imul(rng, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const systems = Array.from({ length: 8 }, (_, i) => `Tenant ${i} system prompt. `.repeat(80));

for (const policyName of ['warmpath', 'consistent-hash', 'least-request', 'round-robin']) {
  rng = 99;
  const view = new FleetView({
    fleet: 'a',
    chunkChars: 256,
    stateTtlMs: 10_000,
    forgetAfterMs: routerConfig().forgetAfterMs,
    now: () => t,
  });
  const config = routerConfig({ chunkChars: 256 });
  const routers = [0, 1].map(() => ({
    policy: createPolicy(policyName, config),
    local: new LocalState(routerConfig()),
  }));
  let t = 0;
  const inflight: Array<{ end: number; replica: string; work: number; ticket: Ticket; owner: number }> = [];
  const served = new Map<string, bigint[]>();
  const seqs = new Map<string, number>();
  const publish = (): void => {
    for (let i = 0; i < N; i++) {
      const id = `r${i}`;
      const seq = (seqs.get(id) ?? 0) + 1;
      seqs.set(id, seq);
      const work = inflight.filter((f) => f.replica === id).reduce((s, f) => s + f.work, 0);
      const added = BigUint64Array.from(served.get(id) ?? []);
      served.set(id, []);
      const prevSize = view.replicas.get(id)?.digestSize ?? 0;
      const s: ReplicaState = {
        v: 1,
        fleet: 'a',
        replica: id,
        boot: 'b',
        bootAt: 1,
        seq,
        sentAt: t,
        url: `http://x/${id}`,
        admin: '',
        engine: 'vllm',
        models: ['m'],
        adapters: [],
        hotAdapters: [],
        endpoints: ['chat'],
        capacity: { kvTokens: 400_000, adapterSlots: 0, weight: 1, maxRunning: 256 },
        load: { running: 0, waiting: 0, kvUsedTokens: work, inflight: 0, inflightTokens: work, prefillTokens: 0 },
        status: 'ready',
        chunkChars: 256,
        digest: {
          from: seq === 1 ? -1 : seq - 1,
          added,
          removed: new BigUint64Array(0),
          size: prevSize + added.length,
        },
      };
      if (seq > 1) {
        // size after applying: count only new hashes
        const r = view.replicas.get(id)!;
        let fresh = 0;
        const seen = new Set<bigint>();
        for (const h of added) if (!seen.has(h) && !view.holds(r, h)) (seen.add(h), fresh++);
        s.digest.size = prevSize + fresh;
      } else s.digest.size = new Set(added).size;
      view.apply(s, t);
    }
  };
  publish();
  let same = 0;
  let total = 0;
  let nextReport = 250;
  const conv = new Map<number, string>();
  for (let k = 0; t < DURATION_MS; k++) {
    t += -Math.log(1 - rand()) * (1000 / RATE);
    while (nextReport <= t) {
      const saved = t;
      t = nextReport;
      for (let j = inflight.length - 1; j >= 0; j--)
        if (inflight[j]!.end <= t) {
          routers[inflight[j]!.owner]!.local.complete(inflight[j]!.ticket, t);
          inflight.splice(j, 1);
        }
      publish();
      t = saved;
      nextReport += 250;
    }
    const c = Math.floor(rand() * 200);
    const history = (conv.get(c) ?? '') + `User turn ${k}: ${'question '.repeat(40)}`;
    conv.set(c, history);
    const body = {
      model: 'm',
      messages: [
        { role: 'system', content: systems[c % systems.length]! },
        { role: 'user', content: history },
      ],
      max_tokens: 200,
    };
    const info = describeRequest(body, 'chat');
    const req: PlacementRequest = {
      info,
      endpoint: 'chat',
      key: affinityKey(info, 8),
      body,
      exclude: undefined,
      now: t,
    };
    const picks = routers.map((r) => placeRequest(r.policy, req, view, r.local));
    const owner = k % 2;
    total++;
    if (picks[0]!.replica?.id === picks[1]!.replica?.id) same++;
    const p = picks[owner]!;
    if (p.replica === undefined) continue;
    const o = routers[owner]!;
    const work = p.work ?? info.promptTokens + info.maxTokens;
    const ticket = o.local.dispatch(p.replica.id, work, t);
    notifyDispatch(o.policy, req, p.replica, o.local);
    inflight.push({ end: t + SERVICE_MS, replica: p.replica.id, work, ticket, owner });
    served.get(p.replica.id)!.push(...info.hashes);
  }
  console.log(
    `${policyName.padEnd(16)} ${N} replicas, ${RATE} req/s, 2 routers: same choice for ${((100 * same) / total).toFixed(1)}% of ${total} requests`,
  );
}
