/** Test helpers: a gossip subscriber that mirrors one agent's digest, and waiting on conditions. */
import { decodeSnapshot, decodeState } from '@warmpath/shared/wire';
import type { ReplicaState } from '@warmpath/shared/wire';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGossipNode, generateSwarmKey } from '@warmpath/shared/gossip';
import type { GossipNode } from '@warmpath/shared/gossip';
import { waitFor } from '@warmpath/testkit';

export interface Subscriber {
  node: GossipNode;
  states: Array<ReplicaState & { receivedAt: number }>;
  /** The digest rebuilt from deltas (+ snapshots on gaps). */
  mirror: Set<bigint>;
  mirrorSeq: number;
  snapshotsPulled: number;
  /** Resolves when `check` holds for some received state (checked on each message). */
  waitFor(
    what: string,
    check: (s: ReplicaState) => boolean,
    ms?: number,
  ): Promise<ReplicaState & { receivedAt: number }>;
  close(): Promise<void>;
}

/** The tests' fleet swarm key, as a file (agents and `warmpath agent` take a path); subscribers use the same key. */
export const SWARM_KEY_FILE = join(mkdtempSync(join(tmpdir(), 'wp-agent-test-')), 'swarm.key');
writeFileSync(SWARM_KEY_FILE, generateSwarmKey(), { mode: 0o600 });

export async function subscribe(fleet: string, bootstrap: string[]): Promise<Subscriber> {
  const node = await createGossipNode({
    fleet,
    bootstrap,
    swarmKey: readFileSync(SWARM_KEY_FILE, 'utf8'),
    onWarning: null,
    timing: { heartbeatIntervalMs: 200, redialIntervalMs: 200, dialTimeoutMs: 2000 },
  });
  type Got = ReplicaState & { receivedAt: number };
  const waiters = new Set<{ check: (s: ReplicaState) => boolean; resolve: (s: Got) => void }>();
  const sub: Subscriber = {
    node,
    states: [],
    mirror: new Set(),
    mirrorSeq: -1,
    snapshotsPulled: 0,
    waitFor(what, check, ms = 10_000) {
      const hit = sub.states.find(check);
      if (hit !== undefined) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const w = {
          check,
          resolve: (s: Got) => {
            clearTimeout(timer);
            waiters.delete(w);
            resolve(s);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
        }, ms);
        waiters.add(w);
      });
    },
    async close() {
      await node.stop();
    },
  };
  let pulling: Promise<void> | undefined;
  const pull = (admin: string): void => {
    pulling ??= (async () => {
      const res = await fetch(`${admin}/warmpath/v1/digest`);
      const snap = decodeSnapshot(new Uint8Array(await res.arrayBuffer()));
      if (snap.ok && snap.value.seq >= sub.mirrorSeq) {
        sub.mirror = new Set(snap.value.hashes);
        sub.mirrorSeq = snap.value.seq;
        sub.snapshotsPulled++;
      }
    })().finally(() => (pulling = undefined));
  };
  node.onMessage((data) => {
    // A change-triggered message leaves out the static fields of the last one received.
    const r = decodeState(data, (id) => sub.states.findLast((s) => s.replica === id));
    if (!r.ok) return;
    const s = { ...r.value, receivedAt: Date.now() };
    sub.states.push(s);
    if (s.digest.from >= 0 && s.digest.from === sub.mirrorSeq) {
      for (const h of s.digest.removed) sub.mirror.delete(h);
      for (const h of s.digest.added) sub.mirror.add(h);
      sub.mirrorSeq = s.seq;
    } else if (s.seq > sub.mirrorSeq) {
      pull(s.admin);
    }
    for (const w of [...waiters]) if (w.check(s)) w.resolve(s);
  });
  await node.start();
  return sub;
}

/** Waits until `check` holds (re-checked every `everyMs`); see @warmpath/testkit's waitFor. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 10_000,
  everyMs = 20,
): Promise<void> {
  await waitFor(check, { timeoutMs: ms, intervalMs: everyMs, message: what });
}

export function chatBody(
  model: string,
  system: string,
  user: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: user },
    ],
    ...extra,
  };
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

export async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(name) && (line[name.length] === ' ' || line[name.length] === '{'))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  return total;
}
