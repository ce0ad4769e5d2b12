/**
 * Launches Warmpath's processes (simulator, agent, router) as real child
 * processes of the `warmpath` CLI and waits for each one's ready line. Used by
 * the demo, the live benchmark and the end-to-end tests, so all three run the
 * exact binaries a user runs.
 *
 * Each component prints one first stdout line with `key=value` tokens (or, for
 * the simulator, its URL); we parse it and resolve. Stdout/stderr after that
 * are kept in a small ring buffer for error reports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const CLI_PATH = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));

/** How long a component may take to print its ready line. */
export const READY_TIMEOUT_MS = 30_000;

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  /** Tokens of the ready line (`url`, `proxy`, `admin`, `peer`, `id`…). */
  readonly info: Readonly<Record<string, string>>;
  /** Last lines of output, for failure messages. */
  logs(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  readonly exited: Promise<number | null>;
}

/** How to start a process: its environment (added to this one's), its ready line, how long to wait for it, the program. */
export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  ready?: RegExp;
  timeoutMs?: number;
  script?: string;
}

function parseReadyLine(line: string): Record<string, string> {
  const info: Record<string, string> = {};
  for (const m of line.matchAll(/(\w+)=(\S+)/g)) info[m[1]!] = m[2]!;
  const url = line.match(/https?:\/\/[\w.:[\]-]+/);
  if (info.url === undefined && url !== null) info.url = url[0];
  return info;
}

/** Starts `warmpath <args>` (or `script <args>`: a program that runs a warmpath command its way) and resolves once it printed a line matching `ready`. */
export async function startProcess(name: string, args: string[], opts: StartOptions = {}): Promise<Proc> {
  const child = spawn(process.execPath, [opts.script ?? CLI_PATH, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
  });
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const l of chunk.toString('utf8').split('\n')) if (l !== '') lines.push(l);
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const readyRe = opts.ready ?? /listening|ready/;
  const info = await new Promise<Record<string, string>>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(
      () => fail(new Error(`${name} did not become ready within ${opts.timeoutMs ?? READY_TIMEOUT_MS} ms`)),
      opts.timeoutMs ?? READY_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      keep(chunk);
      buf += chunk.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (readyRe.test(line)) {
          clearTimeout(timer);
          child.off('exit', onExit);
          resolve(parseReadyLine(line));
          return;
        }
      }
    };
    const onExit = (code: number | null) => fail(new Error(`${name} exited with code ${code} before becoming ready`));
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\n--- ${name} output ---\n${lines.join('\n')}`));
    };
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
  child.stdout!.on('data', keep);
  return {
    name,
    child,
    info,
    exited,
    logs: () => lines.join('\n'),
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    async stop(graceMs = 5_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await Promise.race([exited, once(child, 'exit')]);
      clearTimeout(timer);
    },
  };
}
