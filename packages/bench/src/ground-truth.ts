/**
 * Ground truth from simulator replicas (GET /sim/v1/state): prefix-cache
 * queries and hits in tokens, preemptions and adapter loads, as the engines
 * count them. Figures are differences between two readings, so a fleet can
 * serve several runs.
 */
import type { EngineSnapshot } from '@warmpath/sim';
import type { EngineTotals } from './report.ts';

export interface SimReading {
  running: number[];
  totals: EngineTotals;
}

export async function readSims(simUrls: readonly string[]): Promise<SimReading> {
  const snaps = await Promise.all(
    simUrls.map(async (u) => {
      const res = await fetch(`${u}/sim/v1/state`);
      if (!res.ok) throw new Error(`${u}/sim/v1/state answered ${res.status}`);
      return ((await res.json()) as { engine: EngineSnapshot }).engine;
    }),
  );
  return {
    running: snaps.map((s) => s.running),
    totals: {
      promptTokens: snaps.reduce((a, s) => a + s.prefixQueriesTokens, 0),
      cachedTokens: snaps.reduce((a, s) => a + s.prefixHitsTokens + s.hostHitsTokens, 0),
      preemptions: snaps.reduce((a, s) => a + s.preemptions, 0),
      adapterLoads: snaps.reduce((a, s) => a + s.lora.loads, 0),
    },
  };
}

export function diffTotals(after: EngineTotals, before: EngineTotals): EngineTotals {
  return {
    promptTokens: after.promptTokens - before.promptTokens,
    cachedTokens: after.cachedTokens - before.cachedTokens,
    preemptions: after.preemptions - before.preemptions,
    adapterLoads: after.adapterLoads - before.adapterLoads,
  };
}

export async function resetSims(simUrls: readonly string[]): Promise<void> {
  await Promise.all(
    simUrls.map((u) => fetch(`${u}/sim/v1/reset_prefix_cache`, { method: 'POST' }).then((r) => r.body?.cancel())),
  );
}
