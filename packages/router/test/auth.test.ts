/**
 * Auth at the router: with API keys, the admin routes (metrics, the fleet
 * view with its agent URLs) need a key as the inference API does, the probes
 * stay open; with `agentToken`, the router presents the agents' shared token
 * on proxied requests and on digest pulls.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { waitFor } from '@warmpath/testkit';
import { describe, expect, it } from 'vitest';
import { startRouter } from '../src/index.ts';
import { startFakeAgent } from './fake-agent.ts';
import { chat, makeState } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'wp-router-auth-'));

describe('router auth', () => {
  it('with API keys, every route but /healthz and /readyz needs a key', async () => {
    writeFileSync(join(dir, 'keys'), 'sk-admin\n');
    const router = await startRouter({ port: 0, gossip: false, apiKeys: join(dir, 'keys'), log: () => {} });
    try {
      for (const path of ['/metrics', '/warmpath/v1/fleet', '/v1/models', '/anything-else']) {
        const res = await request(`${router.url}${path}`);
        expect({ path, status: res.statusCode }).toEqual({ path, status: 401 });
        expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
        const ok = await request(`${router.url}${path}`, { headers: { authorization: 'Bearer sk-admin' } });
        await ok.body.dump();
        expect(ok.statusCode).not.toBe(401);
      }
      for (const path of ['/healthz', '/readyz']) {
        const res = await request(`${router.url}${path}`);
        await res.body.dump();
        expect(res.statusCode).not.toBe(401);
      }
    } finally {
      await router.close();
    }
  });

  it('with agentToken, the router presents it to agents: proxied requests and digest pulls', async () => {
    writeFileSync(join(dir, 'token'), 'tier-secret\n');
    const agent = await startFakeAgent('t0');
    const pulls: Array<string | undefined> = [];
    const admin = createServer((req, res) => {
      pulls.push(req.headers.authorization);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => admin.listen(0, '127.0.0.1', r));
    const router = await startRouter({ port: 0, gossip: false, agentToken: join(dir, 'token'), log: () => {} });
    try {
      const adminUrl = `http://127.0.0.1:${(admin.address() as AddressInfo).port}`;
      router.view.apply(makeState('t0', { fleet: 'default', url: agent.url, admin: adminUrl, digest: { from: 5 } }));
      const res = await request(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(chat('hello')),
      });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
      expect(agent.lastHeaders?.authorization).toBe('Bearer tier-secret');
      await waitFor(() => pulls.length > 0, { message: 'a digest pull' });
      expect(pulls[0]).toBe('Bearer tier-secret');
    } finally {
      await router.close();
      await agent.close();
      admin.close();
    }
  });

  it('a missing token file is a config error at start', async () => {
    await expect(startRouter({ port: 0, gossip: false, agentToken: join(dir, 'nope'), log: () => {} })).rejects.toThrow(
      /agentToken: cannot read/,
    );
  });
});
