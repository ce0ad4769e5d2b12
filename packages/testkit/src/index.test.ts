import { describe, expect, it } from 'vitest';
import { waitFor, WaitForTimeoutError } from './index.ts';

describe('waitFor', () => {
  it('resolves with the first truthy value, sync or async', async () => {
    let n = 0;
    expect(await waitFor(() => ++n >= 3 && `n=${n}`, { intervalMs: 1 })).toBe('n=3');
    let m = 0;
    expect(await waitFor(async () => (++m === 2 ? { m } : undefined), { intervalMs: 1 })).toEqual({ m: 2 });
  });

  it('treats a throwing predicate as not yet', async () => {
    let n = 0;
    const v = await waitFor(
      () => {
        if (++n < 3) throw new Error('still starting');
        return n;
      },
      { intervalMs: 1 },
    );
    expect(v).toBe(3);
  });

  it('rejects on timeout naming what it waited for and the last value', async () => {
    const err = await waitFor(() => ({ ready: 2, want: 3 }).ready === 3 || 0, {
      timeoutMs: 30,
      intervalMs: 5,
      message: 'three ready',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitForTimeoutError);
    expect((err as Error).message).toMatch(/timed out after 30 ms waiting for three ready; last value: 0/);
  });

  it('reports the last error, with it as the cause', async () => {
    const boom = new Error('ECONNREFUSED');
    const err = (await waitFor(
      () => {
        throw boom;
      },
      { timeoutMs: 20, intervalMs: 5 },
    ).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/waiting for a condition; last error: ECONNREFUSED/);
    expect(err.cause).toBe(boom);
  });

  it('does not wait out a predicate that never settles', async () => {
    const t0 = performance.now();
    const err = (await waitFor(() => new Promise<boolean>(() => {}), { timeoutMs: 30, message: 'a hung check' }).catch(
      (e: unknown) => e,
    )) as Error;
    expect(err.message).toMatch(/waiting for a hung check; no check finished/);
    expect(performance.now() - t0).toBeLessThan(1_000);
  });
});
