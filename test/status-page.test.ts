/**
 * The router's live status page in a real browser: headless Chromium
 * (Debian's `chromium`, driven by playwright-core) on a fleet of real
 * processes — two routers that meet on the gossip mesh, two simulators with
 * their agents. The page must list the replicas, name the other router, and
 * change without a reload when traffic flows. A screenshot is saved in the
 * test's temporary directory; WARMPATH_STATUS_SCREENSHOT=path also writes it
 * there (docs/status.png was made that way). Without `chromium` on PATH the
 * test skips, saying what to install.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { request } from 'undici';
import { findProgram, missingProgram, spawnUntilLine, waitFor } from '@warmpath/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CHROMIUM = findProgram('chromium');
const NO_CHROMIUM = missingProgram('chromium', 'chromium');
const HAVE_CHROMIUM = CHROMIUM !== undefined;
const CLI = new URL('../packages/cli/src/main.ts', import.meta.url).pathname;
const children: ChildProcess[] = [];
const field = (line: string, key: string): string => new RegExp(`${key}=(\\S+)`).exec(line)![1]!;

/** The fleet's swarm key, made as an operator would: `warmpath keygen > swarm.key`. */
const SWARM_KEY = join(mkdtempSync(join(tmpdir(), 'warmpath-status-key-')), 'swarm.key');
writeFileSync(SWARM_KEY, execFileSync(process.execPath, [CLI, 'keygen']));

async function start(args: string[]): Promise<string> {
  const gossip = args[0] === 'router' || args[0] === 'agent' ? ['--swarm-key', SWARM_KEY] : [];
  const { child, line } = spawnUntilLine(process.execPath, [CLI, ...args, ...gossip]);
  children.push(child);
  return line;
}

const SYSTEM = 'You are the on-call assistant of a storage company; answer briefly. '.repeat(50);
let router: { url: string; peer: string };
let other: { url: string; peer: string };
let browser: Browser | undefined;
const dir = mkdtempSync(join(tmpdir(), 'warmpath-status-'));

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  const r0 = await start(['router', '--port', '0', '--fleet', 'status']);
  router = { url: field(r0, 'url'), peer: field(r0, 'peer') };
  const r1 = await start(['router', '--port', '0', '--fleet', 'status', '--bootstrap', router.peer]);
  other = { url: field(r1, 'url'), peer: field(r1, 'peer') };
  const sims = await Promise.all([0, 1].map(() => start(['sim', '--port', '0', '--profile', 'tiny', '--speed', '4'])));
  await Promise.all(
    sims.map((line, i) =>
      start([
        'agent',
        '--engine',
        'vllm',
        '--engine-url',
        /(http:\/\/\S+)/.exec(line)![1]!,
        '--port',
        '0',
        '--admin-port',
        '0',
        '--fleet',
        'status',
        '--replica-id',
        `gpu-${i}`,
        '--bootstrap',
        router.peer,
        '--bootstrap',
        other.peer,
      ]),
    ),
  );
  await waitFor(
    async () => {
      const body = (await (await request(`${router.url}/readyz`)).body.json()) as { replicas?: { ready?: number } };
      return (body.replicas?.ready ?? 0) === 2;
    },
    { timeoutMs: 30_000, intervalMs: 100, message: 'the router to see both replicas ready' },
  );
  browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox', '--disable-gpu'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.filter((c) => c.exitCode === null).map((c) => new Promise((r) => c.once('exit', r))));
  rmSync(dir, { recursive: true, force: true });
});

async function chat(user: string): Promise<string> {
  const res = await request(`${router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'meta-llama/Llama-3.1-8B-Instruct',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: user },
      ],
      max_tokens: 8,
      stream: true,
    }),
  });
  await res.body.text();
  expect(res.statusCode).toBe(200);
  return String(res.headers['x-warmpath-replica']);
}

describe.skipIf(!HAVE_CHROMIUM)('router status page in headless Chromium', () => {
  it('lists the replicas and the other router, and updates live as requests are placed', async () => {
    const json = (await (await request(`${router.url}/warmpath/v1/status.json`)).body.json()) as {
      replicas: Array<Record<string, unknown>>;
    };
    expect(json.replicas.map((r) => r.id)).toEqual(['gpu-0', 'gpu-1']);
    for (const r of json.replicas)
      expect(r).toMatchObject({ status: 'ready', draining: false, ejected: false, fresh: true });

    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    const offsite: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(router.url)) offsite.push(r.url());
    });
    await page.goto(`${router.url}/warmpath/v1/status`);
    await page.locator('#replicas tbody tr', { hasText: 'gpu-0' }).waitFor();
    await page.locator('#replicas tbody tr', { hasText: 'gpu-1' }).waitFor();
    await page.locator('#routers tbody', { hasText: other.peer.split('/p2p/')[1]! }).waitFor({ timeout: 15_000 });
    expect(await page.locator('#fleet').textContent()).toBe('status');
    const placedCard = page.locator('.card', { hasText: 'placed' }).locator('b');
    expect(await placedCard.textContent()).toBe('0');
    expect(await page.locator('#prefixes tbody').textContent()).toContain('no prefix');

    // Traffic, with no reload: the placement count, the branches and the hot prefix appear.
    const replicas = new Set<string>();
    for (let i = 0; i < 6; i++) replicas.add(await chat(`ticket ${i}: the volume is read-only`));
    await waitFor(async () => Number(await placedCard.textContent()) >= 6, {
      timeoutMs: 10_000,
      message: 'the page to count the placements',
    });
    const branches = await page.locator('#branches tbody').textContent();
    expect(branches).toMatch(/warm|ring|least-loaded|spill/);
    const prefixRow = page.locator('#prefixes tbody tr').first();
    await waitFor(async () => /gpu-\d/.test((await prefixRow.textContent()) ?? ''), {
      timeoutMs: 10_000,
      message: 'the hottest prefix to show where it is warm',
    });
    expect(await prefixRow.locator('td').nth(3).textContent()).toBe('6');
    for (const r of replicas) expect(await page.locator('#recent tbody').textContent()).toContain(r);
    expect(offsite).toEqual([]);

    const shot = join(dir, 'status.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    const keep = process.env.WARMPATH_STATUS_SCREENSHOT;
    if (keep !== undefined && keep !== '') await page.screenshot({ path: keep, fullPage: true });
    await page.close();
  }, 60_000);
});

// Listed only when chromium is missing: the skip says what to install.
if (!HAVE_CHROMIUM) describe('router status page in headless Chromium', () => it.skip(NO_CHROMIUM, () => {}));
