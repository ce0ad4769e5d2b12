/**
 * LoRA slots of one replica, as vLLM manages them: registered adapters, the
 * distinct adapters of running sequences (at most max_loras), GPU slots with
 * LRU eviction of idle adapters, and a CPU cache that makes reloads cheaper.
 *
 * Steps: admission asks `deferred` (is a distinct slot free for this
 * adapter?) and then `acquire`s; a finished, preempted or aborted sequence
 * `release`s. Each step, `loadActive` puts every running adapter on the GPU
 * and returns the load time to charge: 0 if resident, a CPU load if cached
 * there, else a full load.
 * Complexity: O(max_loras) per adapter touched (arrays, not maps: a handful
 * of slots).
 * Trade-off: load time is charged to the whole step that needs the adapter,
 * as vLLM's synchronous load does; no overlap with compute is modelled.
 */
import type { EngineProfile } from './profiles.ts';

export interface LoraState {
  readonly maxLoras: number;
  readonly registered: readonly string[];
  /** Adapters in GPU slots, LRU first. */
  readonly gpu: readonly string[];
  /** Distinct adapters of running sequences. */
  readonly running: readonly string[];
  /** Distinct adapters of waiting sequences. */
  readonly waiting: readonly string[];
  readonly loads: number;
}

/** Adapter load times (ms) from the engine profile. */
type LoadCosts = Pick<EngineProfile, 'loraLoadMs' | 'loraCpuLoadMs'>;

export class LoraSlots {
  readonly maxLoras: number;
  readonly maxCpuLoras: number;
  readonly #costs: LoadCosts;
  readonly #registered = new Set<string>();
  /** adapter → running sequences using it. */
  readonly #active = new Map<string, number>();
  /** GPU slots, LRU first. */
  readonly #gpu: string[] = [];
  /** CPU cache, LRU first. */
  readonly #cpu: string[] = [];
  #loads = 0;

  constructor(maxLoras: number, maxCpuLoras: number, costs: LoadCosts) {
    this.maxLoras = maxLoras;
    this.maxCpuLoras = maxCpuLoras;
    this.#costs = costs;
  }

  register(name: string): boolean {
    if (name === '' || this.#registered.has(name)) return false;
    this.#registered.add(name);
    return true;
  }

  /** Unregisters; running sequences keep their adapter until they finish. */
  unregister(name: string): boolean {
    if (!this.#registered.delete(name)) return false;
    const i = this.#cpu.indexOf(name);
    if (i >= 0) this.#cpu.splice(i, 1);
    if (!this.#active.has(name)) {
      const j = this.#gpu.indexOf(name);
      if (j >= 0) this.#gpu.splice(j, 1);
    }
    return true;
  }

  has(name: string): boolean {
    return this.#registered.has(name);
  }

  get registered(): readonly string[] {
    return [...this.#registered];
  }

  /** A sequence with this adapter cannot run now: its adapter is not running and all distinct slots are taken (vLLM reason="deferred"). */
  deferred(adapter: string): boolean {
    return adapter !== '' && !this.#active.has(adapter) && this.#active.size >= this.maxLoras;
  }

  /** A sequence with this adapter started running. */
  acquire(adapter: string): void {
    if (adapter !== '') this.#active.set(adapter, (this.#active.get(adapter) ?? 0) + 1);
  }

  /** A sequence with this adapter stopped running (finished, preempted or aborted). */
  release(adapter: string): void {
    if (adapter === '') return;
    const n = (this.#active.get(adapter) ?? 1) - 1;
    if (n <= 0) this.#active.delete(adapter);
    else this.#active.set(adapter, n);
  }

  /** Distinct slots not taken by running adapters. */
  get slotsFree(): number {
    return Math.max(0, this.maxLoras - this.#active.size);
  }

  isOnGpu(adapter: string): boolean {
    return this.#gpu.includes(adapter);
  }

  /** Puts every running adapter on the GPU; returns the load time charged (ms). */
  loadActive(): number {
    let loadMs = 0;
    if (this.#active.size > 0) {
      for (const a of this.#active.keys()) loadMs += this.#touchGpu(a);
    }
    return loadMs;
  }

  state(waiting: readonly string[]): LoraState {
    return {
      maxLoras: this.maxLoras,
      registered: [...this.#registered],
      gpu: [...this.#gpu],
      running: [...this.#active.keys()],
      waiting,
      loads: this.#loads,
    };
  }

  /** Ensures `a` is in a GPU slot (evicting the LRU idle one); returns the load time charged (ms). */
  #touchGpu(a: string): number {
    const i = this.#gpu.indexOf(a);
    if (i >= 0) {
      if (i !== this.#gpu.length - 1) {
        this.#gpu.splice(i, 1);
        this.#gpu.push(a);
      }
      return 0;
    }
    if (this.#gpu.length >= this.maxLoras) {
      const victim = this.#gpu.findIndex((x) => !this.#active.has(x));
      this.#gpu.splice(victim >= 0 ? victim : 0, 1);
    }
    this.#gpu.push(a);
    this.#loads++;
    const c = this.#cpu.indexOf(a);
    if (c >= 0) {
      this.#cpu.splice(c, 1);
      this.#cpu.push(a);
      return this.#costs.loraCpuLoadMs;
    }
    this.#cpu.push(a);
    if (this.#cpu.length > this.maxCpuLoras) this.#cpu.shift();
    return this.#costs.loraLoadMs;
  }
}
