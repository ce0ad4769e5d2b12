/**
 * Usage accounting per tenant and model: requests, prompt, cached and
 * completion tokens, as the engines reported them, since start and over the
 * last minute (a SlotRing of one-second slots, window.ts).
 *
 * Steps: record(tenant, model, usage, now) at each request's end adds to the
 * totals and the minute ring of (tenant, model); `snapshot` reads them all.
 * Complexity: O(1) amortized per record; O(entries × window slots) per read.
 * Memory: one entry per (tenant, model) pair that served a request, about
 * 2 KB each; tenants leave with the file (`retain`).
 */
import type { EngineUsage } from '@warmpath/shared/wire';
import { SlotRing } from './window.ts';

/** One request's usage, as the engine counted it and its agent's receipt carried it (request.ts). */
export type { EngineUsage };

export interface UsageCounts {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

interface Entry {
  readonly total: UsageCounts;
  readonly minute: SlotRing;
}

const FIELDS = ['requests', 'promptTokens', 'cachedTokens', 'completionTokens'] as const;

const zero = (): UsageCounts => ({ requests: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0 });

export interface UsageReport {
  readonly tenant: string;
  readonly total: UsageCounts;
  readonly lastMinute: UsageCounts;
  readonly models: ReadonlyArray<{
    readonly model: string;
    readonly total: UsageCounts;
    readonly lastMinute: UsageCounts;
  }>;
}

export class UsageBook {
  /** tenant → model → entry. */
  readonly #entries = new Map<string, Map<string, Entry>>();

  /** A request of `tenant` on `model` ended; `usage` undefined when the engine reported none. */
  record(tenant: string, model: string, usage: EngineUsage | undefined, now: number): void {
    let models = this.#entries.get(tenant);
    if (models === undefined) this.#entries.set(tenant, (models = new Map()));
    let e = models.get(model);
    if (e === undefined) models.set(model, (e = { total: zero(), minute: new SlotRing(FIELDS.length) }));
    const values = [1, usage?.promptTokens ?? 0, usage?.cachedTokens ?? 0, usage?.completionTokens ?? 0];
    FIELDS.forEach((f, i) => (e.total[f] += values[i]!));
    e.minute.add(now, values);
  }

  /** The file changed: forget tenants no longer in it. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.#entries.keys()) if (!names.has(name)) this.#entries.delete(name);
  }

  /** Totals of one tenant and model since start (metrics read these). */
  *totals(): Iterable<{ tenant: string; model: string; total: UsageCounts }> {
    for (const [tenant, models] of this.#entries)
      for (const [model, e] of models) yield { tenant, model, total: e.total };
  }

  /** Every tenant's usage, per model, since start and over the last minute; tenants sorted by name. */
  snapshot(now: number): UsageReport[] {
    const out: UsageReport[] = [];
    for (const [tenant, models] of this.#entries) {
      const total = zero();
      const lastMinute = zero();
      const perModel = [...models].map(([model, e]) => {
        const minute = zero();
        FIELDS.forEach((f, i) => {
          minute[f] = e.minute.sum(now, i);
          total[f] += e.total[f];
          lastMinute[f] += minute[f];
        });
        return { model, total: { ...e.total }, lastMinute: minute };
      });
      out.push({ tenant, total, lastMinute, models: perModel.sort((a, b) => (a.model < b.model ? -1 : 1)) });
    }
    return out.sort((a, b) => (a.tenant < b.tenant ? -1 : 1));
  }
}
