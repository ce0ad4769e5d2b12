import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startSimServer } from '@warmpath/sim';
import { startAgent } from '../src/index.ts';
import { chatBody, post, subscribe, SWARM_KEY_FILE, until } from './helpers.ts';

const MAIN = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));
const NODE = process.execPath;

describe('drain', () => {
  it('SIGTERM mid-stream: announces draining, refuses new work, finishes the stream, announces down, exits 0', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', speed: 0.5 });
    const child = spawn(
      NODE,
      [
        MAIN,
        'agent',
        '--engine',
        'vllm',
        '--engine-url',
        sim.url,
        '--port',
        '0',
        '--admin-port',
        '0',
        '--fleet',
        'drain-test',
        '--swarm-key',
        SWARM_KEY_FILE,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = once(child, 'exit');
    try {
      const line: string = await new Promise((resolve, reject) => {
        const rl = createInterface({ input: child.stdout });
        rl.once('line', resolve);
        child.once('exit', (code) => reject(new Error(`agent exited ${code}: ${stderr}`)));
      });
      expect(line).toMatch(
        /^warmpath agent ready proxy=http:\/\/127\.0\.0\.1:\d+ admin=http:\/\/127\.0\.0\.1:\d+ peer=\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/\w+/,
      );
      const proxy = /proxy=(\S+)/.exec(line)![1]!;
      const peer = /peer=(\S+)/.exec(line)![1]!;
      const sub = await subscribe('drain-test', [peer]);
      await sub.waitFor('ready', (s) => s.status === 'ready');

      const res = await fetch(`${proxy}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chatBody(sim.modelName, 'drain me', 'please', { max_tokens: 200, stream: true })),
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const first = await reader.read();
      expect(first.done).toBe(false);
      child.kill('SIGTERM');
      await sub.waitFor('draining', (s) => s.status === 'draining');
      const refused = await post(
        `${proxy}/v1/chat/completions`,
        chatBody(sim.modelName, 'late', 'x', { max_tokens: 5 }),
      );
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.text).error.code).toBe('draining');
      let text = new TextDecoder().decode(first.value);
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        text += new TextDecoder().decode(r.value);
      }
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      await sub.waitFor('down', (s) => s.status === 'down');
      const [code] = await exited;
      expect(code).toBe(0);
      await sub.close();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await sim.close();
    }
  });
});

describe('engine death and recovery', () => {
  it('announces down, answers 503 engine_unavailable, and comes back ready on its own', async () => {
    let sim = await startSimServer({ port: 0, profile: 'tiny', speed: 4 });
    const port = sim.port;
    const agent = await startAgent({
      engineUrl: sim.url,
      fleet: 'death-test',
      swarmKey: SWARM_KEY_FILE,
      scrapeIntervalMs: 100,
      scrapeTimeoutMs: 500,
    });
    const sub = await subscribe('death-test', agent.peerAddrs);
    try {
      await sub.waitFor('ready', (s) => s.status === 'ready');
      expect(
        (await post(`${agent.url}/v1/completions`, { model: sim.modelName, prompt: 'x'.repeat(600), max_tokens: 3 }))
          .status,
      ).toBe(200);
      await until('scraped traffic', () => (agent.core.ledger.snapshot?.counters[0] ?? 0) > 0);
      await sim.close();
      const down = await sub.waitFor('down', (s) => s.status === 'down');
      const refused = await post(`${agent.url}/v1/completions`, { model: sim.modelName, prompt: 'y', max_tokens: 3 });
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.text).error.code).toBe('engine_unavailable');
      expect((await fetch(`${agent.adminUrl}/readyz`)).status).toBe(503);
      sim = await startSimServer({ port, profile: 'tiny', speed: 4 });
      await sub.waitFor('ready again', (s) => s.status === 'ready' && s.seq > down.seq);
      expect((await fetch(`${agent.adminUrl}/readyz`)).status).toBe(200);
      expect(
        (await post(`${agent.url}/v1/completions`, { model: sim.modelName, prompt: 'z', max_tokens: 3 })).status,
      ).toBe(200);
      // The restarted engine's cache is empty: the model was reset and routers told to pull a snapshot.
      expect(agent.core.ledger.cache.stats.resets).toBeGreaterThan(0);
      expect(sub.states.some((s) => s.seq > down.seq && s.digest.from === -1)).toBe(true);
    } finally {
      await sub.close();
      await agent.close();
      await sim.close();
    }
  });
});
