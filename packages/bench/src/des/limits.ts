/**
 * The global limit in virtual time: N routers, each with the router's own
 * per-tenant limiter (tenants/limits.ts) over its fleet share
 * (tenants/share.ts), exchanging usage messages through the gossip model
 * (gossip.ts: delay and loss per message and router), as requests of a plan
 * arrive at the router the L4 assignment gave them. It measures admission
 * alone: an admitted request holds its reservation (prompt estimate plus
 * max_tokens) for `serviceMs` and is then settled to its tokens, with no
 * engine behind it — how close routers that talk only through gossip hold a
 * limit does not depend on where the admitted work runs.
 *
 * Steps: build the routers' tenancies and shares (tenants.ts, publishing
 * at random phases every SHARE_PUBLISH_MS) → each arrival: its tenant by API key, the
 * limiter's verdict at that router, then the settle event → results in the
 * load generator's shape (a refusal is status 429 rate_limit_exceeded, an
 * admission status 200 with its tokens), which tenant-figures.ts reads as it
 * reads a full run's.
 * Complexity: O(requests × log events + routers² × publishes).
 */
import { pendingResult, type PlannedRequest, type RequestResult } from '../loadgen.ts';
import { LIMIT_REFUSED } from '../tenant-figures.ts';
import { DEFAULT_GOSSIP, type GossipModel } from './gossip.ts';
import { EventQueue } from './queue.ts';
import { desTenants, type DesTenantsOptions } from './tenants.ts';
import { mulberry32 } from '@warmpath/shared/runtime';

export interface LimitRunOptions extends DesTenantsOptions {
  /** Requests with `target` set (l4.ts). */
  plan: readonly PlannedRequest[];
  routers: number;
  gossip?: GossipModel;
  seed?: number;
  /** How long an admitted request holds its reservation before it is settled, ms; default 50 ms per output token. */
  serviceMs?: (p: PlannedRequest) => number;
}

/** Routers publish from this long before the first arrival, so each has heard the others (as the DES fleet waits), ms. */
const WARMUP_MS = 2_000;
const CHARS_PER_TOKEN = 4;

export function runLimits(o: LimitRunOptions): RequestResult[] {
  const q = new EventQueue();
  const random = mulberry32((0x11a1 + (o.seed ?? 1)) >>> 0);
  const routers = Math.max(1, o.routers);
  const partition = o.partition && { router: o.partition.router, fromMs: WARMUP_MS + o.partition.fromMs };
  const tenants = desTenants(
    { ...o, ...(partition ? { partition } : {}) },
    routers,
    q,
    random,
    o.gossip ?? DEFAULT_GOSSIP,
  );
  // Publishing stops once the last arrival is past: the run ends when its events do.
  tenants.start(WARMUP_MS + o.plan.reduce((m, p) => Math.max(m, p.at), 0));
  const results: RequestResult[] = [];
  const service = o.serviceMs ?? ((p: PlannedRequest) => 50 * outputOf(p));
  for (const p of o.plan) {
    q.at(WARMUP_MS + p.at, () => {
      const r = result(p);
      results.push(r);
      const router = (p.target ?? 0) % routers;
      const who = tenants.who(router, p);
      if (who === undefined) return;
      const limiter = tenants.tenancies[router]!.limiter;
      const tokens = promptTokensOf(p) + outputOf(p);
      const verdict = limiter.admit(who.tenant, tokens, q.now);
      if (!verdict.ok) {
        Object.assign(r, { status: 429, error: LIMIT_REFUSED });
        return;
      }
      Object.assign(r, { ok: true, status: 200, promptTokens: promptTokensOf(p), outputTokens: outputOf(p) });
      q.after(service(p), () => {
        limiter.settle(verdict.ticket, tokens, q.now);
        limiter.release(verdict.ticket);
      });
    });
  }
  q.run();
  return results;
}

function result(p: PlannedRequest): RequestResult {
  return pendingResult(p, p.target ?? 0, p.at);
}

function outputOf(p: PlannedRequest): number {
  const m = p.body['max_tokens'];
  return typeof m === 'number' ? m : 0;
}

/** The prompt's tokens as the simulator counts them: its characters over CHARS_PER_TOKEN. */
function promptTokensOf(p: PlannedRequest): number {
  const messages = p.body['messages'];
  if (!Array.isArray(messages)) return 0;
  let chars = 0;
  for (const m of messages as Array<{ content?: unknown }>)
    if (typeof m.content === 'string') chars += m.content.length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}
