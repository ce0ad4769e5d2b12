/**
 * Drives an EngineModel in (scaled) wall time with one timer per replica.
 *
 * Steps: when idle, a submit kicks the driver; it sleeps until the model's
 * next wake-up (front-end delay), runs `step(t)`, sleeps until the step's end
 * and then delivers its events and starts the next step at exactly that end
 * time. Timer lateness therefore does not accumulate: the next sleep is
 * shortened instead. If the process falls behind by more than `maxLagMs` of
 * wall time (CPU starvation), the model clock resyncs to the wall clock.
 * Complexity: one setTimeout per step, regardless of the number of requests.
 * Trade-off: sim time is wall time × speed, so a busy event loop makes
 * observed latencies larger than the model's own (the model's histograms stay
 * exact; /metrics reports those).
 */
import type { EngineModel } from '../model/engine.ts';
import type { StepResult } from '../model/scheduler.ts';

export class RealTimeDriver {
  readonly model: EngineModel;
  readonly speed: number;
  private readonly onStep: (r: StepResult) => void;
  private readonly t0 = performance.now();
  private timer: NodeJS.Timeout | undefined;
  /** Step whose effects are applied but whose events await its end time. */
  private pending: StepResult | undefined;
  /** Model time at which the next step should start (end of the last one). */
  private cursor = Number.NEGATIVE_INFINITY;
  private paused = false;
  private stopped = false;
  private readonly maxLagMs: number;

  constructor(model: EngineModel, speed: number, onStep: (r: StepResult) => void, maxLagMs = 25) {
    this.model = model;
    this.speed = speed;
    this.onStep = onStep;
    this.maxLagMs = maxLagMs;
  }

  /** Current simulated time (ms since the driver started). */
  now(): number {
    return (performance.now() - this.t0) * this.speed;
  }

  /**
   * Call after submitting work: wakes the loop if it sleeps with nothing to
   * do, or sleeps until a later wake-up (a host reload's end) than the work
   * just submitted needs. A step in progress is never cut short.
   */
  kick(): void {
    if (this.paused || this.stopped) return;
    if (this.timer !== undefined) {
      if (this.pending !== undefined || !(this.model.nextWakeMs(this.now()) < this.cursor)) return;
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.arm(this.now());
  }

  /** Hang fault: stop stepping (in-flight events are held, not lost). */
  pause(): void {
    this.paused = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.cursor = this.now();
    if (this.pending !== undefined) {
      const r = this.pending;
      this.pending = undefined;
      this.onStep(r);
    }
    this.kick();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Sleeps until the model's next wake-up after `from`, if any. */
  private arm(from: number): void {
    const wake = this.model.nextWakeMs(from);
    if (wake === Number.POSITIVE_INFINITY) {
      this.cursor = Number.NEGATIVE_INFINITY;
      return;
    }
    this.cursor = wake;
    this.timer = setTimeout(this.tick, Math.max(0, (wake - this.now()) / this.speed));
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    if (this.paused || this.stopped) return;
    if (this.pending !== undefined) {
      const r = this.pending;
      this.pending = undefined;
      this.onStep(r);
      if (this.paused || this.stopped) return;
    }
    const real = this.now();
    let t = this.cursor;
    if (t < real - this.maxLagMs * this.speed) t = real;
    const wake = this.model.nextWakeMs(t);
    if (wake > t) {
      this.arm(t);
      return;
    }
    const r = this.model.step(t);
    if (r.durationMs === 0) {
      // Nothing schedulable (e.g. all waiting requests are still in the front end).
      this.cursor = t;
      const next = this.model.nextWakeMs(t);
      if (next > t && next !== Number.POSITIVE_INFINITY) this.arm(next);
      else if (next !== Number.POSITIVE_INFINITY) this.timer = setTimeout(this.tick, 1);
      if (r.preempted.length > 0) this.onStep(r);
      return;
    }
    this.pending = r;
    this.cursor = r.endMs;
    this.timer = setTimeout(this.tick, Math.max(0, (r.endMs - this.now()) / this.speed));
  };
}
