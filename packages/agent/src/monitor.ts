/**
 * Engine monitor: scrapes the engine on a fixed period, tracks up/down, reads
 * the models list, and detects restarts — with an injected clock and an
 * injected engine source (the engine adapters over HTTP live, the
 * simulator's engine model in the discrete-event simulator).
 *
 * Steps per tick: scrape → on success compare with the last good snapshot (a
 * counter went backwards, or the configuration fingerprint changed, or the
 * engine came back from down without comparable counters → restart) → on
 * failure count consecutive failures; `downAfterFailures` of them mark the
 * engine down. The models list is re-read every `modelsIntervalMs` and at
 * every recovery. The next tick is scheduled when this one ends.
 * Complexity: one scrape in flight at a time (no overlap).
 * Trade-off: a restart is inferred, not observed; a false positive only costs
 * one cache-model reset (routers pull a fresh snapshot).
 */
import type { Clock } from '@warmpath/shared/runtime';
import type { EngineSnapshot, EngineSource, ModelEntry } from './engines/types.ts';

export interface MonitorOptions {
  intervalMs: number;
  modelsIntervalMs: number;
  downAfterFailures: number;
}

export type RestartCause = 'counters' | 'config' | 'recovered';

export interface MonitorHooks {
  /** A good scrape that started at `startedAt` (clock ms). */
  onScrape(snap: EngineSnapshot, startedAt: number): void;
  onUp(): void;
  onDown(error: string): void;
  onRestart(cause: RestartCause): void;
  onModels(models: ModelEntry[]): void;
  onError(code: string): void;
}

export class EngineMonitor {
  readonly #engine: EngineSource;
  readonly #opts: MonitorOptions;
  readonly #clock: Clock;
  readonly #hooks: MonitorHooks;
  #cancel: (() => void) | undefined;
  #running = false;
  #inTick = false;
  #failures = 0;
  /** When the models list was last read; undefined = read it at the next good scrape. */
  #modelsAt: number | undefined;
  #everUp = false;
  #lastGood: EngineSnapshot | undefined;
  #wasDown = false;
  #models: ModelEntry[] = [];
  up = false;
  lastError = '';

  constructor(engine: EngineSource, opts: MonitorOptions, clock: Clock, hooks: MonitorHooks) {
    this.#engine = engine;
    this.#opts = opts;
    this.#clock = clock;
    this.#hooks = hooks;
  }

  /** Starts the loop; `firstDone` runs once the first tick (scrape, models) has ended. */
  start(firstDone?: () => void): void {
    this.#running = true;
    this.#tick(firstDone);
  }

  stop(): void {
    this.#running = false;
    this.#cancel?.();
  }

  /** Scrape now (e.g. the proxy saw a connection error). */
  kick(): void {
    if (!this.#running || this.#inTick) return;
    this.#cancel?.();
    this.#tick();
  }

  #tick(done?: () => void): void {
    if (this.#inTick) return;
    this.#inTick = true;
    const startedAt = this.#clock.now();
    const end = (): void => {
      this.#inTick = false;
      if (this.#running) this.#cancel = this.#clock.schedule(this.#opts.intervalMs, () => this.#tick());
      done?.();
    };
    this.#engine.scrape((err, snap) => {
      if (snap === undefined) {
        this.#onFailure(err);
        return end();
      }
      this.#onSuccess(snap, startedAt);
      const now = this.#clock.now();
      if (this.#running && (this.#modelsAt === undefined || now - this.#modelsAt >= this.#opts.modelsIntervalMs))
        this.#refreshModels(end);
      else end();
    });
  }

  #refreshModels(then: () => void): void {
    this.#engine.models((err, models) => {
      if (models === undefined) this.#hooks.onError(codeOf(err));
      else {
        this.#modelsAt = this.#clock.now();
        const prev = this.#models;
        this.#models = models;
        if (
          models.length !== prev.length ||
          models.some((m, i) => m.id !== prev[i]?.id || m.parent !== prev[i]?.parent)
        )
          this.#hooks.onModels(models);
      }
      then();
    });
  }

  #onSuccess(snap: EngineSnapshot, startedAt: number): void {
    const prev = this.#lastGood;
    let restart: RestartCause | undefined;
    if (prev !== undefined) {
      if (prev.configHint !== '' && snap.configHint !== '' && prev.configHint !== snap.configHint) restart = 'config';
      else if (snap.counters.some((c, i) => c < (prev.counters[i] ?? 0))) restart = 'counters';
      else if (this.#wasDown && snap.counters.length === 0) restart = 'recovered';
    }
    this.#lastGood = snap;
    this.#failures = 0;
    this.lastError = '';
    const cameUp = !this.up;
    this.up = true;
    this.#wasDown = false;
    if (restart !== undefined) this.#hooks.onRestart(restart);
    if (cameUp) {
      this.#everUp = true;
      this.#modelsAt = undefined;
      this.#hooks.onUp();
    }
    this.#hooks.onScrape(snap, startedAt);
  }

  #onFailure(err: unknown): void {
    this.#failures++;
    this.lastError = err instanceof Error ? err.message : String(err);
    this.#hooks.onError(codeOf(err));
    if (this.#failures >= this.#opts.downAfterFailures && (this.up || !this.#everUp)) {
      const wasUp = this.up;
      this.up = false;
      this.#wasDown = true;
      if (wasUp || this.#failures === this.#opts.downAfterFailures) this.#hooks.onDown(this.lastError);
    }
  }
}

function codeOf(err: unknown): string {
  const c = (err as { code?: unknown } | null)?.code;
  if (typeof c === 'string' && /^[A-Za-z0-9_]{1,40}$/.test(c)) return c;
  if ((err as { name?: unknown } | null)?.name === 'TimeoutError') return 'timeout';
  return 'error';
}
