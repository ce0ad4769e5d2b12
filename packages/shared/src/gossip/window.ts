/**
 * How wide a flooding router's batch window is (docs/GOSSIP.md, "The window
 * widens with the routers"). A router reading the others' batches pays per
 * batch (a signature check, the transport's framing) and per state in it
 * (decode, judge, the digest's hashes), so the window widens until both
 * stay within a budget:
 *  - batches: each of the R routers it floods to sends one per window, so
 *    a window of R × 1000 / `readsPerS` ms keeps each reader at
 *    `readsPerS` batches a second (`batchWindowFor`);
 *  - states: an agent's states waiting in one window go as one (coalesce.ts),
 *    so of an agent handing off μ states a second, (1 − e^(−μW)) / W a
 *    second leave in batches; with k such agents a router sends each reader
 *    k × that, and R routers alike send it R times as much. The window
 *    widens until that is at most `statesPerS` (`statesWindowFor`), read
 *    from what this router was handed (`HandoffRate`: its agents and their
 *    states a second over the last period), as every router of a group
 *    carries about the same share.
 * Both at most MAX_WINDOW_MS; a budget of 0 leaves the floor.
 */
import { MAX_WINDOW_MS } from './constants.ts';

/** The period HandoffRate counts over, ms. */
const RATE_PERIOD_MS = 2_000;

/** A window wide enough that `routers` readers each read at most `readsPerS` batches a second, ms. */
export function batchWindowFor(floorMs: number, routers: number, readsPerS: number): number {
  if (readsPerS <= 0 || floorMs <= 0) return floorMs;
  return Math.min(MAX_WINDOW_MS, Math.max(floorMs, Math.ceil((routers * 1_000) / readsPerS)));
}

/** States a second this router sends each reader at window `windowMs`: `agents` each handing off `perS / agents` a second. */
export function statesSentPerS(windowMs: number, agents: number, perS: number): number {
  if (agents <= 0 || perS <= 0) return 0;
  const w = windowMs / 1_000;
  return (agents * (1 - Math.exp(-(perS / agents) * w))) / w;
}

/**
 * A window wide enough that `routers` routers sending as this one does
 * (`agents` handing it `perS` states a second) send each reader at most
 * `statesPerS` states a second, ms (to the millisecond, by bisection).
 */
export function statesWindowFor(
  floorMs: number,
  routers: number,
  handed: { readonly agents: number; readonly perS: number },
  statesPerS: number,
): number {
  if (statesPerS <= 0 || floorMs <= 0 || routers <= 0) return floorMs;
  const over = (w: number): boolean => routers * statesSentPerS(w, handed.agents, handed.perS) > statesPerS;
  if (!over(floorMs)) return floorMs;
  if (over(MAX_WINDOW_MS)) return MAX_WINDOW_MS;
  let lo = floorMs;
  let hi = MAX_WINDOW_MS;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (over(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** A flooding router's window, ms: the wider of the batches' and the states' (either budget 0: that one's floor). */
export function windowFor(
  floorMs: number,
  routers: number,
  handed: { readonly agents: number; readonly perS: number },
  readsPerS: number,
  statesPerS: number,
): number {
  return Math.max(batchWindowFor(floorMs, routers, readsPerS), statesWindowFor(floorMs, routers, handed, statesPerS));
}

/** The agents that handed this router a state and how many states a second, over the last whole period. */
export class HandoffRate {
  #periodStart = -Infinity;
  #count = 0;
  readonly #agents = new Set<string>();
  #last = { agents: 0, perS: 0 };

  /** Agent `id` handed off a state at `now` (ms). */
  add(id: string, now: number): void {
    this.#roll(now);
    this.#count++;
    this.#agents.add(id);
  }

  /** The last whole period's agents and states a second (zeros before one has passed). */
  read(now: number): { readonly agents: number; readonly perS: number } {
    this.#roll(now);
    return this.#last;
  }

  #roll(now: number): void {
    if (now - this.#periodStart < RATE_PERIOD_MS) return;
    // A period with no hand-off in it after this one's end reads as quiet.
    const whole = now - this.#periodStart < 2 * RATE_PERIOD_MS;
    this.#last = whole
      ? { agents: this.#agents.size, perS: (this.#count * 1_000) / RATE_PERIOD_MS }
      : { agents: 0, perS: 0 };
    this.#periodStart = whole ? this.#periodStart + RATE_PERIOD_MS : now;
    this.#count = 0;
    this.#agents.clear();
  }
}
