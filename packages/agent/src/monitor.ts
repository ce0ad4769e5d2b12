/**
 * Engine monitor: scrapes the engine on a fixed period and keeps the latest
 * EngineSnapshot, up/down status, the models list, and detects restarts.
 *
 * Steps per tick: scrape with a timeout → on success compare with the last
 * good snapshot (a counter went backwards, or the configuration fingerprint
 * changed, or the engine came back from down without comparable counters →
 * restart) → on failure count consecutive failures; `downAfterFailures` of
 * them mark the engine down. The models list is re-read every
 * `modelsIntervalMs` and at every recovery.
 * Complexity: one scrape in flight at a time (setTimeout chain, no overlap).
 * Trade-off: a restart is inferred, not observed; a false positive only costs
 * one cache-model reset (routers pull a fresh snapshot).
 */
import type { EngineAdapter, EngineSnapshot, ModelEntry } from './engines/types.ts';

export interface MonitorOptions {
  intervalMs: number;
  timeoutMs: number;
  modelsIntervalMs: number;
  downAfterFailures: number;
}

export interface MonitorHooks {
  onScrape(snap: EngineSnapshot, startedAt: number): void;
  onUp(): void;
  onDown(error: string): void;
  onRestart(cause: 'counters' | 'config' | 'recovered'): void;
  onModels(models: ModelEntry[]): void;
  onError(code: string): void;
}

export class EngineMonitor {
  readonly #adapter: EngineAdapter;
  readonly #opts: MonitorOptions;
  readonly #hooks: MonitorHooks;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #inTick = false;
  #failures = 0;
  #modelsAt = 0;
  #everUp = false;
  #lastGood: EngineSnapshot | undefined;
  #wasDown = false;
  up = false;
  snapshot: EngineSnapshot | undefined;
  /** When the latest successful scrape started (ms, performance.now()). */
  snapshotStartedAt = 0;
  models: ModelEntry[] = [];
  lastError = '';

  constructor(adapter: EngineAdapter, opts: MonitorOptions, hooks: MonitorHooks) {
    this.#adapter = adapter;
    this.#opts = opts;
    this.#hooks = hooks;
  }

  /** Starts the loop; resolves after the first scrape attempt. */
  async start(): Promise<void> {
    this.#running = true;
    await this.#tick();
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
  }

  /** Scrape now (e.g. the proxy saw a connection error). */
  kick(): void {
    if (!this.#running || this.#inTick) return;
    clearTimeout(this.#timer);
    void this.#tick();
  }

  async #tick(): Promise<void> {
    if (this.#inTick) return;
    this.#inTick = true;
    const startedAt = performance.now();
    try {
      const snap = await this.#adapter.scrape(AbortSignal.timeout(this.#opts.timeoutMs));
      this.#onSuccess(snap, startedAt);
      if (this.#running && Date.now() - this.#modelsAt >= this.#opts.modelsIntervalMs) await this.#refreshModels();
    } catch (err) {
      this.#onFailure(err);
    } finally {
      this.#inTick = false;
      if (this.#running) {
        this.#timer = setTimeout(() => void this.#tick(), this.#opts.intervalMs);
        this.#timer.unref?.();
      }
    }
  }

  async #refreshModels(): Promise<void> {
    try {
      const models = await this.#adapter.models(AbortSignal.timeout(this.#opts.timeoutMs));
      this.#modelsAt = Date.now();
      const changed = models.length !== this.models.length || models.some((m, i) => m.id !== this.models[i]?.id || m.parent !== this.models[i]?.parent);
      this.models = models;
      if (changed) this.#hooks.onModels(models);
    } catch (err) {
      this.#hooks.onError(codeOf(err));
    }
  }

  #onSuccess(snap: EngineSnapshot, startedAt: number): void {
    const prev = this.#lastGood;
    let restart: 'counters' | 'config' | 'recovered' | undefined;
    if (prev !== undefined) {
      if (prev.configHint !== '' && snap.configHint !== '' && prev.configHint !== snap.configHint) restart = 'config';
      else if (snap.counters.some((c, i) => c < (prev.counters[i] ?? 0))) restart = 'counters';
      else if (this.#wasDown && snap.counters.length === 0) restart = 'recovered';
    }
    this.#lastGood = snap;
    this.snapshot = snap;
    this.snapshotStartedAt = startedAt;
    this.#failures = 0;
    this.lastError = '';
    const cameUp = !this.up;
    this.up = true;
    this.#wasDown = false;
    if (restart !== undefined) this.#hooks.onRestart(restart);
    if (cameUp) {
      this.#everUp = true;
      this.#modelsAt = 0;
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
