import { describe, expect, it } from 'vitest';
import { routerConfig } from '@warmpath/router';
import { BATCH_SIZE, PreparedFeed, PreparedInbox, type PreparedBatch } from '../../src/des/prepared-feed.ts';
import { runDes } from '../../src/des/run.ts';
import { DesPool, workloadKey, type DesJob } from '../../src/pool.ts';
import { DEFAULT_MODEL, SCENARIOS } from '../../src/scenarios.ts';

const seed = SCENARIOS.seed!;
const settings = routerConfig();

describe('descriptions made once on the main thread', () => {
  it('a run fed the stream gives the figures of a run that describes for itself, and waits when the stream is behind', async () => {
    const plan = seed.build({ seed: 5, rate: 10, duration: 6, model: DEFAULT_MODEL });
    const own = await runDes({ scenario: seed, plan, policy: 'warmpath', replicas: 3, routers: 2, durationS: 6 });

    const again = seed.build({ seed: 5, rate: 10, duration: 6, model: DEFAULT_MODEL });
    const feed = new PreparedFeed('w', settings);
    const batches: PreparedBatch[] = [];
    feed.subscribe((b) => batches.push(b));
    feed.produce(again, new Set());
    expect(batches.length).toBe(Math.ceil(plan.length / BATCH_SIZE));
    expect(batches.at(-1)!.done).toBe(true);
    const inbox = new PreparedInbox(feed.id, plan);
    // Batches arrive one at a time, after the run has started: it must wait for them.
    const run = runDes({
      scenario: seed,
      plan,
      policy: 'warmpath',
      replicas: 3,
      routers: 2,
      durationS: 6,
      prepared: inbox,
    });
    for (const b of batches) {
      await new Promise((r) => setTimeout(r, 5));
      inbox.add(structuredClone(b));
    }
    const fed = await run;
    expect(fed.ttft_ms).toEqual(own.ttft_ms);
    expect(fed.cache_hit_rate).toBe(own.cache_hit_rate);
    expect(fed.detail!.branches).toEqual(own.detail!.branches);
  });

  it("every request before a batch's time is complete; one at that time may continue in the next batch", () => {
    const plan = Array.from({ length: BATCH_SIZE + 10 }, (_, i) => ({
      at: i < BATCH_SIZE + 5 ? 100 : 200,
      body: { model: DEFAULT_MODEL, messages: [{ role: 'user', content: `hi ${i}` }] },
    }));
    const feed = new PreparedFeed('w', settings);
    const batches: PreparedBatch[] = [];
    feed.produce(plan, new Set());
    feed.subscribe((b) => batches.push(b)); // a late subscriber gets every batch so far
    expect(batches.map((b) => [b.items.length, b.through, b.done])).toEqual([
      [BATCH_SIZE, 100, false],
      [10, Infinity, true],
    ]);
    const inbox = new PreparedInbox(feed.id, plan);
    inbox.add(batches[0]!);
    expect(inbox.ready(99)).toBe(true);
    expect(inbox.ready(100)).toBe(false);
    inbox.add(batches[1]!);
    expect(inbox.ready(1e9)).toBe(true);
    expect(inbox.take(BATCH_SIZE + 9)!.info.model).toBe(DEFAULT_MODEL);
  });

  it('a batch for another plan fails the run that waits for it, with a message naming both', async () => {
    const plan = seed.build({ seed: 5, rate: 10, duration: 2, model: DEFAULT_MODEL });
    const other = new PreparedFeed('other', settings);
    const batches: PreparedBatch[] = [];
    other.subscribe((b) => batches.push(b));
    other.produce(plan.slice(1), new Set());
    const inbox = new PreparedInbox({ workload: 'w', settings: other.id.settings }, plan);
    const run = runDes({
      scenario: seed,
      plan,
      policy: 'warmpath',
      replicas: 2,
      routers: 1,
      durationS: 2,
      prepared: inbox,
    });
    inbox.add(batches[0]!);
    await expect(run).rejects.toThrow(/another plan.*other.*this run: w/);
  });

  it('the worker pool streams a feed to its jobs, and a job started later gets the batches it missed', async () => {
    const job = (policy: string): DesJob => ({
      scenario: 'seed',
      seed: 7,
      rate: 5,
      duration: 4,
      replicas: 2,
      routers: 1,
      l4: 'random',
      policy,
    });
    const pool = new DesPool(1);
    const unfed = await pool.run(job('warmpath'));
    const feed = new PreparedFeed(workloadKey(job('warmpath')), settings);
    const runs = [pool.run(job('warmpath'), feed), pool.run(job('round-robin'), feed)];
    feed.produce(seed.build({ seed: 7, rate: 5, duration: 4, model: DEFAULT_MODEL }), new Set());
    const [fed, rr] = await Promise.all(runs);
    await pool.close();
    expect(unfed.ok && fed!.ok && rr!.ok).toBe(true);
    if (!unfed.ok || !fed!.ok || !rr!.ok) return;
    expect(fed!.result.ttft_ms).toEqual(unfed.result.ttft_ms);
    expect(rr!.result.completed).toBe(rr!.result.requests);
    expect(() => pool.run({ ...job('warmpath'), seed: 8 }, feed)).toThrow(/feed for/);
  });
});
