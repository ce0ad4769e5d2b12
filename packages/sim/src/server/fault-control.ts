/**
 * Faults in effect on a running simulator: applies a FaultState to the model
 * (slow), the driver (hang pauses stepping) and two timers (crash-after,
 * hang-after, in simulated time). Requests that arrive while hung are held
 * and replayed when the hang clears.
 */
import type { EngineModel } from '../model/engine.ts';
import type { RealTimeDriver } from './driver.ts';
import { applyFaultJson } from './faults.ts';
import type { FaultState } from './faults.ts';

export class FaultControl {
  readonly #model: EngineModel;
  readonly #driver: RealTimeDriver;
  readonly #speed: number;
  readonly #crash: () => void;
  readonly #held: (() => void)[] = [];
  #state: FaultState;
  #crashTimer: NodeJS.Timeout | undefined;
  #hangTimer: NodeJS.Timeout | undefined;
  #crashed = false;

  /** `crash` runs at most once, when a crash fault fires. */
  constructor(model: EngineModel, driver: RealTimeDriver, speed: number, initial: FaultState, crash: () => void) {
    this.#model = model;
    this.#driver = driver;
    this.#speed = speed;
    this.#state = initial;
    this.#crash = crash;
  }

  get state(): FaultState {
    return this.#state;
  }

  /** Requests held by a hang, not yet replayed. */
  get heldCount(): number {
    return this.#held.length;
  }

  /** Holds a request until the hang clears. */
  hold(replay: () => void): void {
    this.#held.push(replay);
  }

  /** Merges a runtime update (the JSON shape of POST /sim/v1/fault) and applies it. */
  set(update: unknown): FaultState {
    this.#state = applyFaultJson(this.#state, update);
    this.apply();
    return this.#state;
  }

  apply(): void {
    const faults = this.#state;
    this.#model.slowFactor = faults.slow;
    if (this.#crashTimer !== undefined) clearTimeout(this.#crashTimer);
    this.#crashTimer = undefined;
    if (faults.crashAfterMs !== null)
      this.#crashTimer = setTimeout(() => this.#crashOnce(), faults.crashAfterMs / this.#speed);
    if (this.#hangTimer !== undefined) clearTimeout(this.#hangTimer);
    this.#hangTimer = undefined;
    if (faults.hangAfterMs !== null && !faults.hang)
      this.#hangTimer = setTimeout(() => {
        this.#state = { ...this.#state, hang: true, hangAfterMs: null };
        this.apply();
      }, faults.hangAfterMs / this.#speed);
    if (faults.hang) this.#driver.pause();
    else if (this.#driver.isPaused) {
      this.#driver.resume();
      for (const h of this.#held.splice(0)) h();
    }
  }

  /** Server shutdown: timers cleared, held requests dropped. */
  stop(): void {
    if (this.#crashTimer !== undefined) clearTimeout(this.#crashTimer);
    if (this.#hangTimer !== undefined) clearTimeout(this.#hangTimer);
    this.#held.length = 0;
  }

  #crashOnce(): void {
    if (this.#crashed) return;
    this.#crashed = true;
    this.#crash();
  }
}
