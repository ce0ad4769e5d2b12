import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));
const children: ChildProcess[] = [];

/** Starts `warmpath sim ...` and resolves with its URL from the first stdout line. */
async function startSim(
  args: string[],
): Promise<{ child: ChildProcess; url: string; firstLine: string; exit: Promise<number | null> }> {
  const child = spawn(process.execPath, [CLI, 'sim', '--port', '0', '--profile', 'tiny', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const firstLine = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(buf.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`sim exited ${code} before listening: ${err}`)));
  });
  const url = /http:\/\/127\.0\.0\.1:\d+/.exec(firstLine)?.[0];
  if (url === undefined) throw new Error(`no URL in first line: ${firstLine}`);
  return { child, url, firstLine, exit };
}

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe('warmpath sim (real process)', () => {
  it('prints its URL, serves, and exits cleanly on SIGTERM', async () => {
    const { child, url, firstLine, exit } = await startSim(['--model', 'my/model']);
    expect(firstLine).toMatch(/^warmpath sim listening on http:\/\/127\.0\.0\.1:\d+ model=my\/model/);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('crash fault at start exits the process', async () => {
    const { url, exit } = await startSim(['--fault', 'crash-after=300ms']);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect(await exit).toBe(1);
  });

  it('crash fault at runtime exits the process', async () => {
    const { url, exit } = await startSim([]);
    const res = await fetch(`${url}/sim/v1/fault`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"crash":true}',
    });
    await res.arrayBuffer().catch(() => undefined);
    expect(await exit).toBe(1);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });

  it('rejects a bad flag or fault with exit code 2', async () => {
    const child = spawn(process.execPath, [CLI, 'sim', '--port', '0', '--fault', 'explode=1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).toBe(2);
    expect(err).toMatch(/unknown fault "explode"/);
  });

  it('--help documents flags and faults', async () => {
    const child = spawn(process.execPath, [CLI, 'sim', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    await once(child, 'exit');
    expect(out).toMatch(/--profile/);
    expect(out).toMatch(/die-after-tokens=N/);
  });
});
