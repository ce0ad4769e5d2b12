/**
 * The two shell scripts the Kubernetes base mounts, run for real with /bin/sh:
 * start.sh execs the CLI with its arguments and records the started
 * process's PID; drain-agent.sh signals that process and
 * returns only once it has exited. Only processes this test starts are
 * signalled (the PID file names them).
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KUBE_DIR } from './manifests.ts';

const dir = mkdtempSync(join(tmpdir(), 'warmpath-k8s-scripts-'));
const START = join(KUBE_DIR, 'scripts/start.sh');
const DRAIN = join(KUBE_DIR, 'scripts/drain-agent.sh');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('deploy/kubernetes/scripts', () => {
  it('start.sh execs the CLI with its arguments and writes its PID', () => {
    // A stand-in for the warmpath binary: prints its PID and arguments.
    const cli = join(dir, 'fake-warmpath');
    writeFileSync(cli, '#!/bin/sh\necho "$$ $*"\n');
    chmodSync(cli, 0o755);
    const pidFile = join(dir, 'agent.pid');
    const res = spawnSync('/bin/sh', [START, 'agent', '--fleet', 'f'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, CLI_PATH: cli, AGENT_PID_FILE: pidFile },
    });
    expect(res.stderr).toBe('');
    const [pid, ...args] = res.stdout.trim().split(' ');
    expect(args.join(' ')).toBe('agent --fleet f');
    // exec keeps the PID: the file names the CLI process itself.
    expect(readFileSync(pidFile, 'utf8').trim()).toBe(pid);
  });

  it('drain-agent.sh sends SIGTERM and returns only after the process has finished draining', async () => {
    // A stand-in agent: on SIGTERM it "drains" for 300 ms, then exits 0.
    const agent = spawn(
      process.execPath,
      [
        '-e',
        "process.on('SIGTERM', () => setTimeout(() => process.exit(0), 300)); setInterval(() => {}, 1e6); console.log('up')",
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await once(agent.stdout!, 'data');
    const pidFile = join(dir, 'drain.pid');
    writeFileSync(pidFile, `${agent.pid}\n`);
    let agentExitedAt = 0;
    const agentExit = once(agent, 'exit').then(([code]) => ((agentExitedAt = performance.now()), code));
    const t0 = performance.now();
    const drain = spawn('/bin/sh', [DRAIN], {
      env: { PATH: process.env.PATH, AGENT_PID_FILE: pidFile },
      stdio: 'ignore',
    });
    const [drainCode] = await once(drain, 'exit');
    const drainedAt = performance.now();
    expect(drainCode).toBe(0);
    expect(await agentExit).toBe(0); // exited through its SIGTERM handler, not killed
    expect(agentExitedAt).toBeGreaterThan(t0);
    expect(drainedAt).toBeGreaterThanOrEqual(agentExitedAt);
  });

  it('drain-agent.sh does nothing when there is no agent to drain', () => {
    const res = spawnSync('/bin/sh', [DRAIN], {
      env: { PATH: process.env.PATH, AGENT_PID_FILE: join(dir, 'missing.pid') },
    });
    expect(res.status).toBe(0);
  });
});
