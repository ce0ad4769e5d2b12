/**
 * The global token limit live: 4 router processes (real libp2p gossip on
 * 127.0.0.1, each with the same tenants file), simulators behind agents, and
 * one tenant flooding at five times its tokens-per-minute limit through the
 * routers at random; the admitted tokens (the engines' usage) per 60 s window
 * ÷ the limit, as tenant-figures.ts reads the DES runs.
 *
 *   node packages/bench/bench/limits-live.ts [--routers 4] [--seconds 180] [--rate 2] [--burst 2] [--seed 101]
 *     [--json docs/data/limits-live.json]
 *
 * `rate`: the tenant's share in requests per second (its limit is that many
 * requests' tokens a minute); it sends five times as many. `burst`: its
 * limit's `burstSeconds` (paced, as in the DES table), 0 for the window alone.
 * Smoke: --routers 2 --seconds 70
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchFleet } from '@warmpath/launch';
import { HEADERS } from '@warmpath/shared/wire';
import { assignRouters } from '../src/l4.ts';
import { runLoad, type PlannedRequest } from '../src/loadgen.ts';
import type { LiveLimitsJson } from '../src/limits-table.ts';
import { admissionsOf, limitHeld } from '../src/tenant-figures.ts';
import { rng, textOf } from '../src/text.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const { values } = scriptArgs(import.meta.url, {
  options: {
    routers: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '180' },
    rate: { type: 'string', default: '2' },
    burst: { type: 'string', default: '2' },
    seed: { type: 'string', default: '101' },
    json: { type: 'string' },
  },
});
const routers = Number(values.routers);
const seconds = Number(values.seconds);
const rate = Number(values.rate);
const seed = Number(values.seed);
const burstSeconds = Number(values.burst);
const PROMPT = 100;
const OUTPUT = 20;

const fleet = await launchFleet({ replicas: 2, routers: 1, profile: 'tiny', speed: 4, routerArgs: [] });
try {
  await fleet.waitConverged(60_000);
  const models = (await (await fetch(`${fleet.routerUrls[0]}/v1/models`)).json()) as { data: Array<{ id: string }> };
  const model = models.data[0]!.id;
  // A request's tokens as the engine counts them: measured on one, so the limit is `rate` such requests a second.
  const probe = await runLoad([request(model, 0, 'probe')], fleet.routerUrls);
  const perRequest = probe[0]!.promptTokens + probe[0]!.outputTokens;
  if (perRequest === 0) throw new Error(`the probe request failed: ${probe[0]!.error}`);
  const limit = Math.round(rate * 60 * perRequest);
  const dir = mkdtempSync(join(tmpdir(), 'wp-limits-live-'));
  const file = join(dir, 'tenants.json');
  writeFileSync(
    file,
    JSON.stringify({
      tenants: [
        {
          name: 'flood',
          keys: ['sk-flood'],
          limits: { tokensPerMinute: limit, ...(burstSeconds > 0 ? { burstSeconds } : {}) },
        },
      ],
    }),
  );
  const urls: string[] = [];
  // The launcher bootstraps each router to the routers before it: the routers' topic has its mesh.
  for (let i = 0; i < routers; i++) urls.push((await fleet.addRouter(undefined, ['--tenants', file])).info['url']!);
  // Ready: each router sees a replica (its fleet endpoint wants a tenant's key, /readyz does not).
  const ready = async (u: string) => ((await (await fetch(`${u}/readyz`)).json()) as { ready: boolean }).ready;
  for (let i = 0; !(await Promise.all(urls.map(ready))).every(Boolean); i++) {
    if (i > 300) throw new Error('the routers did not become ready in 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }
  // Let the routers hear each other on the routers' topic before the flood starts.
  await new Promise((r) => setTimeout(r, 3_000));
  const r = rng(seed);
  const plan: PlannedRequest[] = [];
  for (let at = 0, i = 0; at < seconds * 1000; i++) {
    plan.push(request(model, at, `${seed}/${i}`));
    at += (-Math.log(1 - r()) / (5 * rate)) * 1000;
  }
  assignRouters(plan, routers, 'random', seed);
  const t0 = Date.now();
  const results = await runLoad(plan, urls, { timeoutMs: 60_000 });
  const shifted = results.map((x) => ({ ...x, sentAt: x.sentAt - t0 }));
  const held = limitHeld(admissionsOf(shifted, 'flood'), limit, seconds);
  const refused = results.filter((x) => x.error === 'rate_limit_exceeded').length;
  const failed = results.filter((x) => !x.ok && x.error !== 'rate_limit_exceeded').length;
  if (values.json !== undefined) {
    const json: LiveLimitsJson = {
      meta: {
        command: `node packages/bench/bench/limits-live.ts ${process.argv.slice(2).join(' ')}`.trim(),
        commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
      },
      routers,
      seconds,
      requests: plan.length,
      refused,
      failed,
      ...held,
    };
    writeFileSync(values.json, `${JSON.stringify(json, null, 1)}\n`);
  }
  console.log(
    `${routers} routers, limit ${limit} tokens/min (${perRequest} tokens a request), ${plan.length} requests in ${seconds} s: ` +
      `${refused} refused by the limit, ${failed} failed otherwise; admitted ÷ limit per 60 s window: ` +
      `mean ${held.mean.toFixed(4)}, lowest ${held.min.toFixed(4)}, highest ${held.max.toFixed(4)} (${held.windows} windows)`,
  );
} finally {
  await fleet.stop();
}

function request(model: string, at: number, id: string): PlannedRequest {
  return {
    at,
    tag: 'flood',
    body: {
      model,
      messages: [{ role: 'user', content: textOf(`limits-live/${id}`, PROMPT) }],
      max_tokens: OUTPUT,
      ignore_eos: true,
    },
    headers: { authorization: 'Bearer sk-flood', [HEADERS.priority]: 'standard' },
  };
}
